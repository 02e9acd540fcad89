// Relay benchmark outside the runner: node --import tsx bench/relay.ts [sizes, e.g. 1000,10000]
// (default GITMESH_BENCH_RELAY_SIZES, else 1000). Figures on stdout, progress on stderr.
import { relaySizes, runRelayBench } from "./relay.bench.js";

if (process.argv[2]) process.env.GITMESH_BENCH_RELAY_SIZES = process.argv[2];
const figures = await runRelayBench(relaySizes(), (m) => process.stderr.write(`${m}\n`));
for (const f of figures) process.stdout.write(`${f.label}: ${f.value} ${f.unit}\n`);
process.exit(0);
