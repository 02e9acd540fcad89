/** `npm run bench -- translate-large`: see translate-fleet.ts. */
import { translateBenchmark } from "./translate-fleet.js";

export const benchmark = translateBenchmark("large");
