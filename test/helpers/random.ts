/**
 * The seeded PRNG (mulberry32) of randomized tests: the one the fleet generator uses
 * (src/devtools/fleet.ts), so that a failing sequence can be reproduced from its seed.
 */
export { createRandom } from "../../src/devtools/index.js";

/**
 * The timeout of a unit test that checks thousands of generated inputs, every file of a generated fleet, or one pathologically large input.
 * Unit tests get 20 s (vitest.config.ts), enough for any of them that does one thing; these do thousands,
 * and their time grows with their iteration count, so they state their own budget rather than raising
 * everyone's.
 */
export const GENERATIVE_TEST_TIMEOUT_MS = 120_000;
