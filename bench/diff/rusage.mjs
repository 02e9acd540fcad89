// Preload (`node --import`) for the diff benchmark's child processes: on exit, writes the process's
// CPU time and peak RSS (process.resourceUsage) as JSON to the file named by GITMESH_BENCH_RUSAGE.
import { writeFileSync } from "node:fs";

const out = process.env.GITMESH_BENCH_RUSAGE;
if (out) {
  process.on("exit", () => {
    const u = process.resourceUsage();
    writeFileSync(out, JSON.stringify({ cpuMs: (u.userCPUTime + u.systemCPUTime) / 1000, maxRssKb: u.maxRSS }));
  });
}
