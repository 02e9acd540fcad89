// Self time of a .cpuprofile by function (and by file), largest first:
//   node --import tsx bench/relay/profile-summary.ts <file.cpuprofile> [top]
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
const [file, topArg] = process.argv.slice(2);
const prof = JSON.parse(readFileSync(file!, "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const fn = new Map<string, number>();
const url = new Map<string, number>();
for (const [id, us] of self) {
  const n = byId.get(id)!;
  const short = n.callFrame.url.replace(/.*node_modules\//, "").replace(/^file:\/\/.*\/wt-[^/]+\//, "");
  fn.set(`${n.callFrame.functionName || "(anon)"} ${short}:${n.callFrame.lineNumber}`, (fn.get(`${n.callFrame.functionName || "(anon)"} ${short}:${n.callFrame.lineNumber}`) ?? 0) + us);
  const pkg = short.split("/").slice(0, short.startsWith("@") ? 2 : 1).join("/") || "(native/gc)";
  url.set(pkg, (url.get(pkg) ?? 0) + us);
}
const top = Number(topArg ?? 30);
const pct = (us: number) => `${((100 * us) / total).toFixed(1)}%`;
process.stdout.write(`total sampled ${(total / 1000).toFixed(0)} ms\n-- by package/file --\n`);
for (const [k, v] of [...url].sort((a, b) => b[1] - a[1]).slice(0, 15)) process.stdout.write(`${pct(v).padStart(6)} ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}\n`);
process.stdout.write("-- by function --\n");
for (const [k, v] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${pct(v).padStart(6)} ${(v / 1000).toFixed(0).padStart(6)} ms  ${k}\n`);
