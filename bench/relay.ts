// Relay benchmark with a chosen number of agents (the harness runs bench/relay.bench.ts with 1,000):
//   node --import tsx bench/relay.ts [clients]
import { runRelayBench } from "./relay.bench.js";

const figures = await runRelayBench(Number(process.argv[2] ?? 1000), (m) => process.stderr.write(`${m}\n`));
for (const f of figures) process.stdout.write(`${f.label}: ${f.value} ${f.unit}\n`);
process.exit(0);
