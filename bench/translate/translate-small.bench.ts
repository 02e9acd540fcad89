/** `npm run bench -- translate-small`: see translate-fleet.ts. */
import { translateBenchmark } from "./translate-fleet.js";

export const benchmark = translateBenchmark("small");
