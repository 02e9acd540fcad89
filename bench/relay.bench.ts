/**
 * `npm run bench -- relay`: N agents (GITMESH_BENCH_RELAY_SIZES, default 1000; e.g. 1000,10000) on one
 * relay server over real mTLS on loopback, beside the floors #39 names, measured in the same run,
 * alternated, each server in a child process of its own (bench/relay/):
 *
 * - floor (a), per connected agent: a bare Node http2 secure server with mutual TLS holding N sessions,
 *   each with one open bidirectional stream — heap and RSS per session after GC;
 * - floor (b), per registration: a TLS handshake (the relay's server certificate) plus checking one CSR
 *   and signing a certificate with the signing CA's RSA-2048 key, natively with node:crypto (OpenSSL) —
 *   the target's floor — and through node-forge's structures (the library path the relay took before) —
 *   server CPU per registration.
 *
 * GITMESH_BENCH_RELAY_REGISTER=M: only M agents register through the server (the registration figure);
 * the others start with a certificate the client process issued from the signing CA, as registered
 * agents hold (10,000 registrations cost the client processes minutes of CPU on a small machine).
 * GITMESH_BENCH_RELAY_ADMISSION_RATE / _BURST: the server's admission (default: production's 50/s, 100).
 *
 * The clients live in child processes too (bench/relay/clients.ts, GITMESH_BENCH_RELAY_PER_PROCESS per
 * process, default 2,500), started with a raised open-file limit (bench/relay/spawn.ts). Figures: server
 * CPU per registration, heap and RSS per connected agent, server heap and RSS at N, each beside its floor
 * with the ratio; restart → all N reconnected and resynced (wall, from the kill) and server CPU per resync.
 * Then payload bytes on the wire for a one-resource change vs a full snapshot.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { diffStates, encodeChunks, generateKeyPem, generateRelayPki, RELAY_DEFAULTS, type RelayPki } from "../src/relay/index.js";
import { createCsr, signClientCertificate } from "../src/relay/pki.js";
import { round, type Benchmark, type Figure } from "./harness.js";
import { startChild, type Child, type ServerStats } from "./relay/spawn.js";

const KiB = 1024;
const MiB = 1024 * 1024;
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64");
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

interface WorkerAnswer {
  readonly ok: boolean;
  readonly error?: string;
  readonly cpuMs: number;
  readonly refused?: number;
  readonly rss?: number;
}

/** Client processes: asks every one, sums their CPU, fails on any error. */
class Workers {
  private constructor(private readonly children: Child[]) {}
  static async start(count: number, perProcess: number): Promise<Workers> {
    const children = Array.from({ length: count }, () => startChild("./clients.ts", [], perProcess + 64));
    await Promise.all(children.map((c) => c.ready));
    return new Workers(children);
  }
  get size() {
    return this.children.length;
  }
  async all(message: (i: number) => unknown): Promise<{ cpuMs: number; refused: number; maxRss: number }> {
    const answers = await Promise.all(this.children.map((c, i) => c.ask<WorkerAnswer>(message(i))));
    const failed = answers.find((a) => !a.ok);
    if (failed) throw new Error(`client process: ${failed.error ?? "exited"}`);
    return { cpuMs: answers.reduce((a, x) => a + x.cpuMs, 0), refused: answers.reduce((a, x) => a + (x.refused ?? 0), 0), maxRss: Math.max(0, ...answers.map((x) => x.rss ?? 0)) };
  }
  kill() {
    for (const c of this.children) c.kill();
  }
}

const share = (n: number, parts: number, i: number) => Math.floor((n * (i + 1)) / parts) - Math.floor((n * i) / parts);
const stats = (c: Child) => c.ask<ServerStats>({ type: "stats" });

async function serverChild(script: string, args: string[], needFiles: number): Promise<{ child: Child; port: number; readyMs: number; compiled: boolean }> {
  const t0 = Date.now();
  const child = startChild(script, args, needFiles);
  const ready = await child.ready;
  return { child, port: ready.port as number, readyMs: Date.now() - t0, compiled: ready.compiled === true };
}

/** Floor (a): heap and RSS per bare http2 mTLS session with one open stream. */
async function h2Floor(pki: RelayPki, client: { certPem: string; keyPem: string }, n: number, processes: number) {
  const server = await serverChild("./floor-server.ts", ["h2", b64(pki)], n + 64);
  const workers = await Workers.start(processes, Math.ceil(n / processes));
  try {
    const before = await stats(server.child);
    await workers.all((i) => ({ type: "h2", port: server.port, rootCaPem: pki.rootCaCertPem, certPem: client.certPem, keyPem: client.keyPem, count: share(n, processes, i) }));
    const after = await stats(server.child);
    if (after.connected !== n) throw new Error(`h2 floor: ${after.connected} sessions, expected ${n}`);
    return { heapPerSession: (after.heapUsed - before.heapUsed) / n, rssPerSession: (after.rss - before.rss) / n, heap: after.heapUsed, rss: after.rss };
  } finally {
    workers.kill();
    server.child.kill();
  }
}

/** Floor (b): server CPU per TLS handshake + CSR check + signature, `mode` register-native or register-forge. */
async function registrationFloor(pki: RelayPki, mode: string, count: number, processes: number) {
  const server = await serverChild("./floor-server.ts", [mode, b64(pki)], 4096);
  const workers = await Workers.start(processes, 64);
  try {
    const before = await stats(server.child);
    await workers.all((i) => ({ type: "tls-register", port: server.port, rootCaPem: pki.rootCaCertPem, count: share(count, processes, i) }));
    const after = await stats(server.child);
    if (after.signed !== count) throw new Error(`${mode}: ${String(after.signed)} signed, expected ${count}`);
    return { cpuPerRegistration: (after.cpuMs - before.cpuMs) / count };
  } finally {
    workers.kill();
    server.child.kill();
  }
}

/** Polls until `pred` holds (true) or the deadline passes (false), every 2 s (each poll runs a full GC in the server). */
async function until(pred: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const t0 = Date.now();
  while (!(await pred())) {
    if (Date.now() - t0 > timeoutMs) return false;
    await new Promise((r) => setTimeout(r, 2000));
  }
  return true;
}

/** The relay: N agents register, connect and sync; the server is killed and restarted; all resync. */
async function relayRun(pki: RelayPki, n: number, registering: number, processes: number, log: (m: string) => void) {
  const key = generateKeyPem();
  const first = await serverChild("./relay-server.ts", [b64(pki), "0"], n + 256);
  log(`relay ${n}: the server runs ${first.compiled ? "compiled JavaScript (.build/)" : "the TypeScript sources through tsx (no fresh .build/: node scripts/build-cli.mjs)"}`);
  const workers = await Workers.start(processes, Math.ceil(n / processes));
  let second: Awaited<ReturnType<typeof serverChild>> | undefined;
  try {
    const before = await stats(first.child);
    await workers.all((i) => ({ type: "relay", address: `127.0.0.1:${first.port}`, rootCaPem: pki.rootCaCertPem, keyPem: key, from: Math.floor((n * i) / processes), to: Math.floor((n * (i + 1)) / processes), register: share(registering, processes, i), signingCa: { certPem: pki.signingCaCertPem, keyPem: pki.signingCaKeyPem } }));
    const profDir = process.env.GITMESH_BENCH_RELAY_PROFILE;
    const profile = async (phase: string) => {
      if (!profDir) return;
      mkdirSync(profDir, { recursive: true });
      const { path } = await first.child.ask<{ path?: string }>({ type: "profile", path: join(profDir, `relay-${n}-${phase}.cpuprofile`) });
      if (path) log(`relay ${n}: CPU profile ${path}`);
    };
    const c0 = (await workers.all(() => ({ type: "cpu" }))).cpuMs;
    await profile("register");
    const t0 = Date.now();
    const reg = await workers.all(() => ({ type: "register" }));
    const registerMs = Date.now() - t0;
    await profile("register");
    const afterReg = await stats(first.child);
    log(`relay ${n}: ${registering} registered in ${round(registerMs / 1000, 1)} s (${reg.refused} admission refusals retried)`);
    await profile("connect");
    const t1 = Date.now();
    const con = await workers.all(() => ({ type: "connect" }));
    const connectMs = Date.now() - t1;
    await profile("connect");
    const after = await stats(first.child);
    log(`relay ${n}: connected ${after.connected}, warmed ${String(after.warmed)} in ${round(connectMs / 1000, 1)} s`);
    const snapDir = process.env.GITMESH_BENCH_RELAY_HEAP_SNAPSHOT;
    if (snapDir) {
      mkdirSync(snapDir, { recursive: true });
      const { path } = await first.child.ask<{ path: string }>({ type: "snapshot", path: join(snapDir, `relay-${n}.heapsnapshot`) });
      log(`relay ${n}: heap snapshot ${path}`);
    }

    first.child.kill();
    const t2 = Date.now();
    const c2 = (await workers.all(() => ({ type: "cpu" }))).cpuMs;
    second = await serverChild("./relay-server.ts", [b64(pki), String(first.port)], n + 256);
    const start = await stats(second.child);
    const deadlineS = Number(process.env.GITMESH_BENCH_RELAY_RESTART_TIMEOUT_S ?? 600);
    let lastLog = Date.now();
    const allResynced = await until(async () => {
      const s = await stats(second!.child);
      if (Date.now() - lastLog > 30_000) {
        lastLog = Date.now();
        const w = await workers.all(() => ({ type: "cpu" }));
        log(`relay ${n}: ${round((Date.now() - t2) / 1000, 0)} s after the kill: ${String(s.warmed)} resynced; largest client process RSS ${round(w.maxRss / MiB, 0)} MiB`);
      }
      return s.warmed === n;
    }, deadlineS * 1000);
    const resyncMs = Date.now() - t2;
    const end = await stats(second.child);
    const w3 = await workers.all(() => ({ type: "cpu" }));
    const c3 = w3.cpuMs;
    if (!allResynced) log(`relay ${n}: only ${String(end.warmed)} of ${n} resynced ${deadlineS} s after the kill (GITMESH_BENCH_RELAY_RESTART_TIMEOUT_S)`);
    return {
      resynced: end.warmed ?? 0,
      clientMaxRss: Math.max(con.maxRss, w3.maxRss),
      registerMs,
      serverCpuPerRegistration: (afterReg.cpuMs - before.cpuMs) / registering,
      clientCpuPerRegistration: (reg.cpuMs - c0) / registering,
      refused: reg.refused,
      connectMs,
      serverCpuPerConnect: (after.cpuMs - afterReg.cpuMs) / n,
      clientCpuPerConnect: (con.cpuMs - reg.cpuMs) / n,
      heapPerAgent: (after.heapUsed - before.heapUsed) / n,
      rssPerAgent: (after.rss - before.rss) / n,
      heap: after.heapUsed,
      rss: after.rss,
      resyncMs,
      serverReadyMs: second.readyMs,
      serverCpuPerResync: (end.cpuMs - start.cpuMs) / n,
      clientCpuPerResync: (c3 - c2) / n,
      rssAfterResync: end.rss,
    };
  } finally {
    workers.all(() => ({ type: "close" })).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 500));
    workers.kill();
    first.child.kill();
    second?.child.kill();
  }
}

export function relaySizes(): number[] {
  const env = process.env.GITMESH_BENCH_RELAY_SIZES;
  const sizes = (env ?? "1000").split(",").map((s) => Number(s.trim()));
  if (sizes.some((s) => !Number.isInteger(s) || s < 1)) throw new Error(`GITMESH_BENCH_RELAY_SIZES=${String(env)}: a comma-separated list of agent counts`);
  return sizes;
}

export async function runRelayBench(sizes: readonly number[], log: (m: string) => void): Promise<Figure[]> {
  const figures: Figure[] = [];
  const f = (label: string, value: number, unit: string, digits = 2) => {
    figures.push({ label, value: round(value, digits), unit });
    log(`  ${label}: ${round(value, digits)} ${unit}`);
  };
  const pki = generateRelayPki();
  const floorKey = (() => {
    const { csrPem, keyPem } = createCsr("floor");
    return { certPem: signClientCertificate({ certPem: pki.signingCaCertPem, keyPem: pki.signingCaKeyPem }, { cluster: "floor", csrPem, lifetimeMs: 86_400_000 }).certPem, keyPem };
  })();
  const perProcess = Number(process.env.GITMESH_BENCH_RELAY_PER_PROCESS ?? 2500);
  const floorRegistrations = Number(process.env.GITMESH_BENCH_RELAY_FLOOR_REGISTRATIONS ?? 1000);
  for (const n of sizes) {
    const processes = Math.max(1, Math.ceil(n / perProcess));
    const regs = Math.min(n, floorRegistrations);
    log(`relay bench: ${n} agents in ${processes} client process(es); floors alternated: h2 sessions, native registration, relay, forge registration`);
    const a = await h2Floor(pki, floorKey, n, processes);
    log(`floor (a): ${round(a.heapPerSession / KiB, 1)} KiB heap, ${round(a.rssPerSession / KiB, 1)} KiB RSS per session`);
    const bNative = await registrationFloor(pki, "register-native", regs, Math.min(processes, 2));
    log(`floor (b) native: ${round(bNative.cpuPerRegistration, 2)} ms CPU per registration`);
    const registering = Math.min(n, Number(process.env.GITMESH_BENCH_RELAY_REGISTER ?? n));
    const r = await relayRun(pki, n, registering, processes, log);
    const bForge = await registrationFloor(pki, "register-forge", regs, Math.min(processes, 2));
    log(`floor (b) forge: ${round(bForge.cpuPerRegistration, 2)} ms CPU per registration`);

    f(`[${n}] server CPU per registration (TLS + CSR check + sign, gRPC Register; ${registering} registered)`, r.serverCpuPerRegistration, "ms");
    f(`[${n}]   floor (b) native: TLS handshake + node:crypto CSR verify + RSA-2048 sign (${regs})`, bNative.cpuPerRegistration, "ms");
    f(`[${n}]   relay / floor (b) native (target ≤ 1.2)`, r.serverCpuPerRegistration / bNative.cpuPerRegistration, "x");
    f(`[${n}]   floor (b) forge: TLS handshake + node-forge CSR parse/verify + build, native sign (${regs})`, bForge.cpuPerRegistration, "ms");
    f(`[${n}]   relay / floor (b) forge`, r.serverCpuPerRegistration / bForge.cpuPerRegistration, "x");
    f(`[${n}]   register ${registering}: wall (loaded machine; ${r.refused} admission refusals retried)`, r.registerMs / 1000, "s", 1);
    f(`[${n}]   client processes' CPU per registration (CSR + TLS)`, r.clientCpuPerRegistration, "ms");
    f(`[${n}] server heap per connected agent (after GC)`, r.heapPerAgent / KiB, "KiB", 1);
    f(`[${n}]   floor (a): heap per http2 mTLS session with one open stream`, a.heapPerSession / KiB, "KiB", 1);
    f(`[${n}]   relay / floor (a), heap (target ≤ 2)`, r.heapPerAgent / a.heapPerSession, "x");
    f(`[${n}] server RSS per connected agent`, r.rssPerAgent / KiB, "KiB", 1);
    f(`[${n}]   floor (a): RSS per session`, a.rssPerSession / KiB, "KiB", 1);
    f(`[${n}]   relay / floor (a), RSS`, r.rssPerAgent / a.rssPerSession, "x");
    f(`[${n}] server heap / RSS with all connected`, r.heap / MiB, "MiB", 0);
    f(`[${n}]   server RSS with all connected (target ≤ 1,536 MiB at 10,000)`, r.rss / MiB, "MiB", 0);
    f(`[${n}]   floor (a) server heap / RSS`, a.heap / MiB, "MiB", 0);
    f(`[${n}]   floor (a) server RSS`, a.rss / MiB, "MiB", 0);
    f(`[${n}] first connect + full sync of all: wall`, r.connectMs / 1000, "s", 1);
    f(`[${n}]   server CPU per connect + sync`, r.serverCpuPerConnect, "ms");
    f(`[${n}]   client processes' CPU per connect + sync`, r.clientCpuPerConnect, "ms");
    f(`[${n}] server restart → ${r.resynced === n ? "all" : `${r.resynced} of ${n} (deadline passed)`} reconnected and resynced: wall from the kill (target ≤ 60 s at 10,000, quiet)`, r.resyncMs / 1000, "s", 1);
    f(`[${n}]   of which the new server process ready to listen`, r.serverReadyMs / 1000, "s", 1);
    f(`[${n}]   server CPU per reconnect + resync`, r.serverCpuPerResync, "ms");
    f(`[${n}]   client processes' CPU per reconnect + resync`, r.clientCpuPerResync, "ms");
    f(`[${n}]   server RSS after the resync`, r.rssAfterResync / MiB, "MiB", 0);
    f(`[${n}]   largest client process RSS (${Math.ceil(n / processes)} agents per process)`, r.clientMaxRss / MiB, "MiB", 0);
  }

  // bytes on the wire: a 500-resource output, full vs a one-resource change (compressed chunk payloads)
  const full = new Map<string, Uint8Array>();
  for (let r = 0; r < 500; r++) {
    full.set(`networking.istio.io/v1/VirtualService/ns-${r % 20}/vs-${r}`, enc({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: `vs-${r}`, namespace: `ns-${r % 20}`, labels: { "gitmesh.io/managed": "true" } }, spec: { hosts: [`svc-${r}.ns-${r % 20}.svc.cluster.local`], http: [{ route: [{ destination: { host: `svc-${r}`, port: { number: 8080 } }, weight: 100 }], retries: { attempts: 3 } }] } }));
  }
  const changed = new Map(full);
  changed.set("networking.istio.io/v1/VirtualService/ns-3/vs-3", enc({ changed: true }));
  const bytes = (chunks: { payload: Uint8Array }[]) => chunks.reduce((a, c) => a + c.payload.length, 0);
  const fullBytes = bytes(encodeChunks({ upserts: full, removed: [] }, RELAY_DEFAULTS.chunkBytes));
  const deltaBytes = bytes(encodeChunks(diffStates(full, changed), RELAY_DEFAULTS.chunkBytes));
  const rawBytes = [...full].reduce((a, [k, v]) => a + k.length + v.length, 0);
  figures.push({ label: "500-resource output: raw key+value bytes", value: rawBytes, unit: "B" });
  figures.push({ label: "500-resource output: full snapshot on the wire (gzip chunks)", value: fullBytes, unit: "B" });
  figures.push({ label: "500-resource output: one-resource change on the wire", value: deltaBytes, unit: "B" });
  figures.push({ label: "full snapshot / one-resource change", value: round(fullBytes / deltaBytes, 0), unit: "x" });
  figures.push({ label: "bench process CPU (orchestration only)", value: round(ownCpuMs() / 1000, 1), unit: "s" });
  return figures;
}

export const benchmark: Benchmark = {
  name: "relay",
  description: "N agents (GITMESH_BENCH_RELAY_SIZES, default 1000) on one relay server over mTLS beside its floors (bare http2 mTLS sessions; TLS handshake + native CSR sign), alternated: registration CPU, heap/RSS per agent, restart → all resynced",
  run: ({ log }) => runRelayBench(relaySizes(), log),
};
