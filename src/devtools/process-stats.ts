/**
 * CPU time and memory of another process, read the way an operator's tools read them: on Linux from
 * /proc/<pid>/stat (utime + stime) and /proc/<pid>/status (VmRSS, and VmHWM, the kernel's own peak
 * RSS), elsewhere from `ps -o rss=,time=` (peak RSS then comes from sampling). A sampler polls a set
 * of processes so that the peak is known even where the kernel does not keep it.
 *
 *   const sampler = createProcessSampler({ server: pid });
 *   sampler.start();  …  const s = sampler.latest("server");  sampler.stop();
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";

export interface ProcessStats {
  /** User + system CPU time since the process started, ms. */
  readonly cpuMs: number;
  /** Resident set size now, bytes. */
  readonly rssBytes: number;
  /** Highest RSS seen: the kernel's VmHWM on Linux, else the highest sample. */
  readonly peakRssBytes: number;
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ): 100 on every mainstream Linux build. */
const USER_HZ = 100;

/** The process's CPU time and memory now; undefined when it is gone. */
export async function readProcessStats(pid: number): Promise<ProcessStats | undefined> {
  if (process.platform === "linux") return readProc(pid);
  return readPs(pid);
}

async function readProc(pid: number): Promise<ProcessStats | undefined> {
  let stat: string;
  let status: string;
  try {
    [stat, status] = await Promise.all([readFile(`/proc/${String(pid)}/stat`, "utf8"), readFile(`/proc/${String(pid)}/status`, "utf8")]);
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: fields are counted after the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN) * 1024;
  const rssBytes = kb("VmRSS");
  if (!Number.isFinite(ticks) || !Number.isFinite(rssBytes)) return undefined;
  const hwm = kb("VmHWM");
  return { cpuMs: (ticks * 1000) / USER_HZ, rssBytes, peakRssBytes: Number.isFinite(hwm) ? hwm : rssBytes };
}

function readPs(pid: number): Promise<ProcessStats | undefined> {
  return new Promise((resolve) => {
    execFile("ps", ["-o", "rss=,time=", "-p", String(pid)], (err, stdout) => {
      if (err) return resolve(undefined);
      const [rss, time] = stdout.trim().split(/\s+/);
      const rssBytes = Number(rss) * 1024;
      const cpuMs = psTimeMs(time ?? "");
      resolve(Number.isFinite(rssBytes) && Number.isFinite(cpuMs) ? { cpuMs, rssBytes, peakRssBytes: rssBytes } : undefined);
    });
  });
}

/** `ps` time: `[[dd-]hh:]mm:ss[.cc]`. */
function psTimeMs(text: string): number {
  const [days, rest] = text.includes("-") ? text.split("-") : ["0", text];
  const parts = (rest ?? "").split(":").map(Number);
  let seconds = 0;
  for (const p of parts) seconds = seconds * 60 + p;
  return (Number(days) * 86_400 + seconds) * 1000;
}

export interface ProcessSampler {
  /** Polls every `intervalMs` until stopped. */
  start(): void;
  /** Reads every process now (also updates the peaks). */
  sample(): Promise<void>;
  /** The last reading of a process, its peak RSS covering every sample so far. */
  latest(name: string): ProcessStats | undefined;
  stop(): void;
}

export function createProcessSampler(pids: Readonly<Record<string, number>>, options: { readonly intervalMs?: number } = {}): ProcessSampler {
  const last = new Map<string, ProcessStats>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const sample = async () => {
    await Promise.all(
      Object.entries(pids).map(async ([name, pid]) => {
        const s = await readProcessStats(pid);
        if (!s) return;
        const prev = last.get(name);
        last.set(name, { ...s, peakRssBytes: Math.max(s.peakRssBytes, prev?.peakRssBytes ?? 0) });
      }),
    );
  };
  return {
    start() {
      if (timer) return;
      timer = setInterval(() => {
        running ??= sample().finally(() => (running = undefined));
      }, options.intervalMs ?? 500);
      timer.unref();
    },
    sample,
    latest: (name) => last.get(name),
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
