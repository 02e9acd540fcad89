/** `npm run bench -- translate-medium`: see translate-fleet.ts. */
import { translateBenchmark } from "./translate-fleet.js";

export const benchmark = translateBenchmark("medium");
