/**
 * The Kubernetes API emulator in a process of its own, driven over IPC by bench/agent/apply.bench.ts,
 * so that the agent (in the benchmark's process) and kubectl (a process of its own) are both clients
 * of a server that shares the CPU with neither of them.
 *
 * Messages in: `{ id, cmd: "start", seed }` (stop the current emulator, start a fresh one on a free
 * port with `seed`, write its kubeconfig), `{ id, cmd: "stats" }`; out: `{ id, ok, ... }`.
 * Started by `spawnEmulator()`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createKubeEmulator, type KubeEmulator, type KubeObject } from "../../src/kube-emulator/index.js";

export interface EmulatorStats {
  /** TCP connections the current emulator accepted since it started. */
  readonly connections: number;
  /** CPU time (user + system) of the emulator's process since it started, in ms. */
  readonly cpuMs: number;
}

export interface EmulatorProcess {
  /** A fresh emulator (the previous one is stopped): its kubeconfig file and YAML. */
  start(seed: readonly KubeObject[]): Promise<{ kubeconfigPath: string; kubeconfig: string }>;
  stats(): Promise<EmulatorStats>;
  stop(): Promise<void>;
}

type Request = { id: number; cmd: "start"; seed: KubeObject[] } | { id: number; cmd: "stats" };
type Reply = { id: number; ok: true; kubeconfigPath?: string; kubeconfig?: string; stats?: EmulatorStats } | { id: number; ok: false; error: string };

/** Starts bench/agent/emulator-process.ts as a child process. */
export function spawnEmulator(): EmulatorProcess {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--serve"], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let next = 0;
  const waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  child.on("message", (m: Reply) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    w?.resolve(m);
  });
  child.on("exit", (code) => {
    for (const w of waiting.values()) w.reject(new Error(`emulator process exited (${String(code)})`));
    waiting.clear();
  });
  const call = (req: Omit<Request, "id"> & { cmd: Request["cmd"] }): Promise<Reply & { ok: true }> =>
    new Promise((resolve, reject) => {
      const id = ++next;
      waiting.set(id, {
        resolve: (r) => (r.ok ? resolve(r) : reject(new Error(r.error))),
        reject,
      });
      child.send({ ...req, id });
    });
  return {
    async start(seed) {
      const r = await call({ cmd: "start", seed } as Omit<Request, "id">);
      return { kubeconfigPath: r.kubeconfigPath!, kubeconfig: r.kubeconfig! };
    },
    async stats() {
      return (await call({ cmd: "stats" })).stats!;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

async function serve(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "gitmesh-bench-kube-"));
  let emulator: KubeEmulator | undefined;
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  let cpuAtStart = cpu();
  const stop = async () => {
    await emulator?.stop();
    emulator = undefined;
  };
  process.on("message", (m: Request) => {
    void (async (): Promise<Reply> => {
      try {
        if (m.cmd === "start") {
          await stop();
          emulator = await createKubeEmulator({ port: 0, seed: m.seed, historySize: 100_000 });
          const kubeconfigPath = join(dir, "kubeconfig");
          await emulator.writeKubeconfig(kubeconfigPath);
          cpuAtStart = cpu();
          return { id: m.id, ok: true, kubeconfigPath, kubeconfig: emulator.kubeconfig() };
        }
        return { id: m.id, ok: true, stats: { connections: emulator?.connectionsAccepted() ?? 0, cpuMs: cpu() - cpuAtStart } };
      } catch (err) {
        return { id: m.id, ok: false, error: err instanceof Error ? err.message : String(err) };
      }
    })().then((reply) => process.send?.(reply));
  });
  const quit = () => {
    void stop()
      .then(() => rm(dir, { recursive: true, force: true }))
      .finally(() => process.exit(0));
  };
  process.on("SIGTERM", quit);
  process.on("disconnect", quit);
}

if (process.argv.includes("--serve")) await serve();
