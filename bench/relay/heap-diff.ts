// What a connected agent costs on the server's heap, by object: aggregates two heap snapshots (the relay
// bench writes them with GITMESH_BENCH_RELAY_HEAP_SNAPSHOT=<dir>, one per size) by constructor/type and
// prints the difference divided by the difference in agents, largest first:
//   node --import tsx bench/relay/heap-diff.ts <small.heapsnapshot> <n-small> <large.heapsnapshot> <n-large> [top]
import { readFileSync } from "node:fs";

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: (string | string[])[] } };
  nodes: number[];
  strings: string[];
}
function aggregate(file: string): Map<string, { count: number; size: number }> {
  const s = JSON.parse(readFileSync(file, "utf8")) as Snapshot;
  const fields = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0] as string[];
  const [iType, iName, iSize] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const out = new Map<string, { count: number; size: number }>();
  for (let i = 0; i < s.nodes.length; i += fields.length) {
    const type = types[s.nodes[i + iType!]!]!;
    let name = s.strings[s.nodes[i + iName!]!]!;
    if (type === "string" || type === "concatenated string" || type === "sliced string") name = "(strings)";
    else if (type === "code") name = "(code)";
    else if (name.length > 60) name = `${name.slice(0, 57)}...`;
    const key = `${type}: ${name}`;
    const e = out.get(key) ?? { count: 0, size: 0 };
    e.count++;
    e.size += s.nodes[i + iSize!]!;
    out.set(key, e);
  }
  return out;
}
const [a, na, b, nb, topArg] = process.argv.slice(2);
const small = aggregate(a!);
const large = aggregate(b!);
const agents = Number(nb) - Number(na);
const rows = [...large].map(([k, v]) => {
  const o = small.get(k) ?? { count: 0, size: 0 };
  return { k, count: (v.count - o.count) / agents, bytes: (v.size - o.size) / agents };
});
const total = rows.reduce((x, r) => x + r.bytes, 0);
process.stdout.write(`per agent: ${(total / 1024).toFixed(1)} KiB of self size (${agents} agents apart)\n`);
for (const r of rows.sort((x, y) => y.bytes - x.bytes).slice(0, Number(topArg ?? 40))) {
  process.stdout.write(`${r.bytes.toFixed(0).padStart(7)} B ${r.count.toFixed(2).padStart(7)} objects  ${r.k}\n`);
}
