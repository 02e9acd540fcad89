/**
 * The seeded PRNG (mulberry32) of randomized tests: the one the fleet generator uses
 * (src/devtools/fleet.ts), so that a failing sequence can be reproduced from its seed.
 */
export { createRandom } from "../../src/devtools/index.js";
