/**
 * `npm run bench -- agent-apply --runs 5`: the agent's first apply of 2,000 output objects, and its
 * re-apply of the same output, against `kubectl apply --server-side` of the same objects — the floor
 * this benchmark names — into the same Kubernetes API emulator (src/kube-emulator), in the same run.
 *
 * The emulator runs in a process of its own (emulator-process.ts), so the agent (in this process) and
 * kubectl (a process of its own) are both clients of a server that shares the CPU with neither. Every
 * run starts from a fresh emulator (100 namespaces, nothing applied). The runs of one sample are
 * rotated from sample to sample (kubectl, the agent, the agent at each concurrency of the sweep), so
 * a change of the machine's load falls on every side; one discarded run of each warms them up. Printed: medians over the samples, the median
 * of the per-sample ratios to kubectl, TCP connections the emulator accepted for each run, CPU of
 * the emulator's process and of the agent.
 *
 * A first apply is what a new agent does: list the kinds it writes, read the inventory, write the
 * intents, apply every object (server-side apply, create = non-forced), confirm the uids. kubectl's
 * time includes its process start and discovery (a new emulator port is a cold discovery cache), as
 * it does for a CD tool that runs it; its re-apply sends every object again.
 *
 * GITMESH_BENCH_APPLY_OBJECTS (default 2000), GITMESH_BENCH_APPLY_CONCURRENCY (the sweep, default
 * "1,4,8,16,32"; empty for none), GITMESH_BENCH_KUBECTL (default "kubectl").
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { silentLogger } from "../../src/core/index.js";
import { createApplier, createInventory, createKubeClient, withFieldOwner, type KubeObject } from "../../src/agent/index.js";
import { median, round, time, type Benchmark, type Figure } from "../harness.js";
import { spawnEmulator, type EmulatorProcess } from "./emulator-process.js";
import { outputObjects, outputVersion } from "./output.js";

const NAMESPACES = 100;

interface Run {
  readonly ms: number;
  readonly connections: number;
  readonly emulatorCpuMs: number;
  /** CPU of the client: this process for the agent, kubectl's process for kubectl. */
  readonly cpuMs?: number;
}

interface SideResult {
  readonly first: Run;
  readonly again?: Run;
}


function seed(): KubeObject[] {
  return [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }, ...Array.from({ length: NAMESPACES }, (_, i): KubeObject => ({ apiVersion: "v1", kind: "Namespace", metadata: { name: `ns-${i}` } }))];
}

/** Runs `fn` and measures wall time, the emulator's accepted connections and CPU, and this process's CPU. */
async function measured(emulator: EmulatorProcess, fn: () => Promise<void>): Promise<Run> {
  const before = await emulator.stats();
  const cpu = process.cpuUsage();
  const t = await time(fn);
  const used = process.cpuUsage(cpu);
  const after = await emulator.stats();
  return { ms: t.ms, connections: after.connections - before.connections, emulatorCpuMs: after.cpuMs - before.cpuMs, cpuMs: (used.user + used.system) / 1000 };
}

/** Runs kubectl through sh, whose `times` gives kubectl's CPU (user + system of the shell's children) on the last line of stderr. */
function kubectl(bin: string, args: readonly string[]): Promise<{ out: string; cpuMs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", '"$0" "$@"; s=$?; times >&2; exit $s', bin, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-4000)));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`${bin} ${args.join(" ")} exited ${String(code)}: ${err}`));
      const children = err.trim().split("\n").at(-1) ?? "";
      const secs = [...children.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
      resolve({ out, cpuMs: secs.length === 2 ? (secs[0]! + secs[1]!) * 1000 : Number.NaN });
    });
  });
}

export const benchmark: Benchmark = {
  name: "agent-apply",
  description: "agent first apply and re-apply of 2,000 objects vs kubectl apply --server-side into the same emulator (own process), alternated; connections; concurrency sweep",
  async run({ runs, log }) {
    const count = Number(process.env.GITMESH_BENCH_APPLY_OBJECTS ?? 2000);
    const sweep = (process.env.GITMESH_BENCH_APPLY_CONCURRENCY ?? "1,4,8,16,32")
      .split(",")
      .map(Number)
      .filter((n) => Number.isInteger(n) && n > 0);
    const bin = process.env.GITMESH_BENCH_KUBECTL ?? "kubectl";
    const objects = outputObjects(count, NAMESPACES);
    const dir = await mkdtemp(join(tmpdir(), "gitmesh-bench-apply-"));
    const file = join(dir, "output.yaml");
    await writeFile(file, objects.map((o) => `---\n${JSON.stringify(o)}\n`).join(""));
    const emulator = spawnEmulator();
    const load0 = loadavg()[0]!;

    const agentSide = async (concurrency: number | undefined, again: boolean): Promise<SideResult> => {
      const { kubeconfig } = await emulator.start(seed());
      const kc = new KubeConfig();
      kc.loadFromString(kubeconfig);
      const client = createKubeClient(kc);
      const writer = withFieldOwner(client);
      const inventory = createInventory({ reader: client, writer, namespace: "gitmesh", cluster: "bench" });
      const applier = createApplier({ cluster: "bench", reader: client, writer, inventory, logger: silentLogger, ...(concurrency === undefined ? {} : { concurrency }) });
      const first = await measured(emulator, async () => {
        const r = await applier.applyOutput(outputVersion(objects, 1));
        if (!r.ack || r.applied !== count) throw new Error(`agent apply failed: ${JSON.stringify(r.errors.slice(0, 3))}`);
      });
      if (!again) return { first };
      const second = await measured(emulator, async () => {
        const r = await applier.applyOutput(outputVersion(objects, 2));
        if (!r.ack || r.unchanged !== count) throw new Error(`agent re-apply: ${String(r.unchanged)} unchanged of ${String(count)}`);
      });
      return { first, again: second };
    };
    const kubectlSide = async (): Promise<SideResult> => {
      const { kubeconfigPath } = await emulator.start(seed());
      const args = ["apply", "--server-side", "--field-manager=kubectl-bench", "-o", "name", "-f", file, "--kubeconfig", kubeconfigPath];
      let cpuMs = Number.NaN;
      const run = async () => {
        const r = await kubectl(bin, args);
        const lines = r.out.split("\n").filter((l) => l !== "").length;
        if (lines !== count) throw new Error(`kubectl applied ${String(lines)} objects, expected ${String(count)}`);
        cpuMs = r.cpuMs;
      };
      const first = await measured(emulator, run);
      const firstCpu = cpuMs;
      const again = await measured(emulator, run);
      return { first: { ...first, cpuMs: firstCpu }, again: { ...again, cpuMs } };
    };

    type Side = { name: string; run: () => Promise<SideResult> };
    const sides: Side[] = [{ name: "kubectl", run: kubectlSide }, { name: "agent", run: () => agentSide(undefined, true) }, ...sweep.map((c) => ({ name: `agent c=${String(c)}`, run: () => agentSide(c, false) }))];
    const results = new Map<string, SideResult[]>(sides.map((s) => [s.name, []]));
    try {
      // One discarded run of each client first: the agent's code is compiled and warm in an agent that
      // has been running (discovery) before its first output; kubectl's binary is in the page cache.
      await kubectlSide();
      await agentSide(undefined, true);
      log(`warmed up; ${String(runs)} samples of ${sides.map((s) => s.name).join(", ")} (rotated)`);
      for (let sample = 0; sample < runs; sample++) {
        // Rotate the order so no side always runs first (or right after another one).
        const order = sides.map((_, i) => sides[(i + sample) % sides.length]!);
        for (const side of order) {
          const r = await side.run();
          results.get(side.name)!.push(r);
          log(`sample ${String(sample + 1)}/${String(runs)} ${side.name}: first ${round(r.first.ms)} ms (${String(r.first.connections)} connections)${r.again ? `, again ${round(r.again.ms)} ms (${String(r.again.connections)})` : ""}; load ${loadavg()[0]!.toFixed(1)}`);
        }
      }
    } finally {
      await emulator.stop();
      await rm(dir, { recursive: true, force: true });
    }

    const figures: Figure[] = [];
    const k = results.get("kubectl")!;
    const pick = (rs: readonly SideResult[], f: (r: SideResult) => number | undefined) => median(rs.map(f).filter((v): v is number => v !== undefined));
    const ratio = (rs: readonly SideResult[], which: "first" | "again") => median(rs.map((r, i) => (r[which]?.ms ?? Number.NaN) / (k[i]![which]?.ms ?? Number.NaN)));
    const n = count.toLocaleString("en");
    for (const which of ["first", "again"] as const) {
      const what = which === "first" ? `first apply of ${n} objects` : `re-apply of the same ${n} (unchanged)`;
      const a = results.get("agent")!;
      figures.push(
        { label: `kubectl apply --server-side: ${what} (median of ${String(runs)})`, value: round(pick(k, (r) => r[which]?.ms)), unit: "ms" },
        { label: `agent (default concurrency): ${what}`, value: round(pick(a, (r) => r[which]?.ms)), unit: "ms" },
        { label: `agent / kubectl: ${what} (median of per-sample ratios)`, value: round(ratio(a, which), 2), unit: "x" },
        { label: `kubectl: TCP connections for the ${what}`, value: pick(k, (r) => r[which]?.connections), unit: "connections" },
        { label: `agent: TCP connections for the ${what}`, value: pick(a, (r) => r[which]?.connections), unit: "connections" },
        { label: `emulator CPU serving kubectl's ${what}`, value: round(pick(k, (r) => r[which]?.emulatorCpuMs)), unit: "ms" },
        { label: `emulator CPU serving the agent's ${what}`, value: round(pick(a, (r) => r[which]?.emulatorCpuMs)), unit: "ms" },
        { label: `kubectl process CPU for the ${what}`, value: round(pick(k, (r) => r[which]?.cpuMs)), unit: "ms" },
        { label: `agent process CPU for the ${what}`, value: round(pick(a, (r) => r[which]?.cpuMs)), unit: "ms" },
      );
    }
    for (const c of sweep) {
      const rs = results.get(`agent c=${String(c)}`)!;
      figures.push(
        { label: `agent, ${String(c)} in flight: first apply of ${n} objects`, value: round(pick(rs, (r) => r.first.ms)), unit: "ms" },
        { label: `agent, ${String(c)} in flight: / kubectl (median of per-sample ratios)`, value: round(ratio(rs, "first"), 2), unit: "x" },
        { label: `agent, ${String(c)} in flight: TCP connections`, value: pick(rs, (r) => r.first.connections), unit: "connections" },
        { label: `agent, ${String(c)} in flight: emulator CPU`, value: round(pick(rs, (r) => r.first.emulatorCpuMs)), unit: "ms" },
      );
    }
    figures.push({ label: "load average (1 min) at the start", value: round(load0), unit: "" }, { label: "load average (1 min) at the end", value: round(loadavg()[0]!), unit: "" });
    return figures;
  },
};
