/**
 * `npm run bench -- relay`: N lightweight agents (default 1,000) on one relay server over real mTLS
 * on loopback. The server runs in a child process (bench/relay-server.ts) so that its memory and CPU
 * are its own. Figures: registration time and where its CPU goes, server memory per connected client,
 * time for all agents to reconnect and resync after a server restart, and payload bytes on the wire
 * for a one-resource change vs a full snapshot.
 */
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { silentLogger } from "../src/core/index.js";
import { createRelayClient, diffStates, encodeChunks, generateKeyPem, generateRelayPki, RELAY_DEFAULTS, type RelayClient, type RelayPki } from "../src/relay/index.js";
import { round, type Benchmark, type Figure } from "./harness.js";

interface ServerStats {
  readonly heapUsed: number;
  readonly rss: number;
  readonly connected: number;
  readonly warmed: number;
  /** CPU time (user + system) of the server process so far, ms. */
  readonly cpuMs: number;
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

function startServer(pki: RelayPki, port: number): Promise<{ child: ChildProcess; port: number; readyMs: number }> {
  const t0 = Date.now();
  const child = fork(fileURLToPath(new URL("./relay-server.ts", import.meta.url)), [Buffer.from(JSON.stringify(pki)).toString("base64"), String(port)], {
    execArgv: ["--import", "tsx", "--expose-gc"],
  });
  return new Promise((resolve) => child.once("message", (m: { port: number }) => resolve({ child, port: m.port, readyMs: Date.now() - t0 })));
}
function stats(child: ChildProcess): Promise<ServerStats> {
  return new Promise((resolve) => {
    child.once("message", resolve as never);
    child.send({ type: "mem" });
  });
}
async function until(pred: () => Promise<boolean>, timeoutMs: number) {
  const t0 = Date.now();
  while (!(await pred())) {
    if (Date.now() - t0 > timeoutMs) throw new Error("timeout");
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function runRelayBench(n: number, log: (m: string) => void): Promise<Figure[]> {
  const figures: Figure[] = [];
  const pki = generateRelayPki();
  const key = generateKeyPem();
  const first = await startServer(pki, 0);
  const port = first.port;
  const before = await stats(first.child);
  log(`relay bench: ${n} clients, server pid ${String(first.child.pid)}`);
  // Same backoff as production agents (500 ms doubling to 30 s, ±20% jitter).
  const clients: RelayClient[] = [];
  for (let i = 0; i < n; i++) {
    const c = createRelayClient({ address: `127.0.0.1:${port}`, cluster: `c-${i}`, rootCaPem: pki.rootCaCertPem, token: "bench-token", keyPem: key, logger: silentLogger, renewAtFraction: 0 });
    void c.pushDiscovery(new Map([[`service/ns/svc-${i}`, enc({ i })]]));
    clients.push(c);
  }
  try {
    // register in batches of 50
    const t0 = Date.now();
    const c0 = cpuMs();
    for (let i = 0; i < n; i += 50) await Promise.all(clients.slice(i, i + 50).map((c) => c.register()));
    const registeredMs = Date.now() - t0;
    const afterReg = await stats(first.child);
    figures.push({ label: `register ${n} clients (batches of 50): wall`, value: round(registeredMs / 1000, 2), unit: "s" });
    figures.push({ label: "  server CPU per registration (TLS handshake + CSR verify + sign)", value: round((afterReg.cpuMs - before.cpuMs) / n, 2), unit: "ms" });
    figures.push({ label: "  client-process CPU per registration (key/CSR + TLS handshake)", value: round((cpuMs() - c0) / n, 2), unit: "ms" });

    const t1 = Date.now();
    const c1 = cpuMs();
    for (const c of clients) c.connect();
    await Promise.all(clients.map((c) => c.synced()));
    const connectMs = Date.now() - t1;
    const after = await stats(first.child);
    figures.push({ label: `first mTLS connect + full sync of ${n} clients: wall`, value: round(connectMs / 1000, 2), unit: "s" });
    figures.push({ label: "  server CPU per client connect + sync", value: round((after.cpuMs - afterReg.cpuMs) / n, 2), unit: "ms" });
    figures.push({ label: "  client-process CPU per connect + sync", value: round((cpuMs() - c1) / n, 2), unit: "ms" });
    figures.push({ label: "server heap per connected client (after GC)", value: round((after.heapUsed - before.heapUsed) / n / 1024, 1), unit: "KiB" });
    figures.push({ label: "server RSS per connected client", value: round((after.rss - before.rss) / n / 1024, 1), unit: "KiB" });
    log(`connected ${after.connected}, warmed ${after.warmed}`);

    // restart: kill the server, start a new one on the same port with the same PKI
    first.child.kill("SIGKILL");
    const t2 = Date.now();
    const c2 = cpuMs();
    const second = await startServer(pki, port);
    const startStats = await stats(second.child);
    try {
      await until(async () => (await stats(second.child)).warmed === n, 600_000);
      const end = await stats(second.child);
      figures.push({ label: `server restart → all ${n} reconnected and resynced: wall (from kill)`, value: round((Date.now() - t2) / 1000, 2), unit: "s" });
      figures.push({ label: "  of which: new server process ready to listen", value: round(second.readyMs / 1000, 2), unit: "s" });
      figures.push({ label: "  server CPU per reconnect + resync", value: round((end.cpuMs - startStats.cpuMs) / n, 2), unit: "ms" });
      figures.push({ label: "  client-process CPU per reconnect + resync", value: round((cpuMs() - c2) / n, 2), unit: "ms" });
    } finally {
      second.child.kill("SIGKILL");
    }
  } finally {
    first.child.kill("SIGKILL");
    await Promise.all(clients.map((c) => c.close()));
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
  return figures;
}

export const benchmark: Benchmark = {
  name: "relay",
  description: "1,000 agents on one relay server over mTLS: registration, memory per client, restart resync time, delta vs full bytes",
  run: ({ log }) => runRelayBench(1000, log),
};
