// Relay benchmark: N lightweight agents (default 1000) on one server over real mTLS on loopback.
// Figures: server memory per connected client, time for all to reconnect and resync after a server
// restart, and payload bytes on the wire for a one-resource change vs a full snapshot.
//   node --import tsx bench/relay.ts [clients]
import { fork, type ChildProcess } from "node:child_process";
import { silentLogger } from "../src/core/index.js";
import { createRelayClient, encodeChunks, diffStates, generateKeyPem, generateRelayPki, RELAY_DEFAULTS, type RelayClient } from "../src/relay/index.js";

const N = Number(process.argv[2] ?? 1000);
const pki = generateRelayPki();
const key = generateKeyPem();
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

function startServer(port: number): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(new URL("./relay-server.ts", import.meta.url).pathname, [Buffer.from(JSON.stringify(pki)).toString("base64"), String(port)], {
    execArgv: ["--import", "tsx", "--expose-gc"],
  });
  return new Promise((resolve) => child.once("message", (m: { port: number }) => resolve({ child, port: m.port })));
}
function mem(child: ChildProcess): Promise<{ heapUsed: number; rss: number; connected: number; warmed: number }> {
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

const first = await startServer(0);
const port = first.port;
const before = await mem(first.child);
console.log(`relay bench: ${N} clients, server pid ${first.child.pid}`);

const t0 = Date.now();
const clients: RelayClient[] = [];
for (let i = 0; i < N; i++) {
  const c = createRelayClient({ address: `127.0.0.1:${port}`, cluster: `c-${i}`, rootCaPem: pki.rootCaCertPem, token: "bench-token", keyPem: key, logger: silentLogger, backoff: { initialMs: 200, maxMs: 5000 }, renewAtFraction: 0 });
  void c.pushDiscovery(new Map([[`service/ns/svc-${i}`, enc({ i })]]));
  clients.push(c);
}
// register in batches (CSR signing is CPU-bound on the server)
for (let i = 0; i < N; i += 50) await Promise.all(clients.slice(i, i + 50).map((c) => c.register()));
const registeredMs = Date.now() - t0;
const t1 = Date.now();
for (const c of clients) c.connect();
await Promise.all(clients.map((c) => c.synced()));
const connectMs = Date.now() - t1;
const after = await mem(first.child);
console.log(`registration of ${N} clients: ${registeredMs} ms; first connect + full sync: ${connectMs} ms`);
console.log(`server heap per connected client: ${((after.heapUsed - before.heapUsed) / N / 1024).toFixed(1)} KiB; rss per client: ${((after.rss - before.rss) / N / 1024).toFixed(1)} KiB (connected ${after.connected}, warmed ${after.warmed})`);

// restart: kill the server, start a new one on the same port with the same PKI, time until all resynced
first.child.kill("SIGKILL");
const t2 = Date.now();
const second = await startServer(port);
await until(async () => (await mem(second.child)).warmed === N, 300_000);
console.log(`server restart → all ${N} clients reconnected and resynced (full discovery + output stream): ${Date.now() - t2} ms`);

// bytes on the wire: a 500-resource output, full vs a one-resource change (compressed chunk payloads)
const full = new Map<string, Uint8Array>();
for (let r = 0; r < 500; r++) full.set(`networking.istio.io/v1/VirtualService/ns-${r % 20}/vs-${r}`, enc({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: `vs-${r}`, namespace: `ns-${r % 20}`, labels: { "gitmesh.io/managed": "true" } }, spec: { hosts: [`svc-${r}.ns-${r % 20}.svc.cluster.local`], http: [{ route: [{ destination: { host: `svc-${r}`, port: { number: 8080 } }, weight: 100 }], retries: { attempts: 3 } }] } }));
const changed = new Map(full);
changed.set("networking.istio.io/v1/VirtualService/ns-3/vs-3", enc({ changed: true }));
const bytes = (chunks: { payload: Uint8Array }[]) => chunks.reduce((a, c) => a + c.payload.length, 0);
const fullBytes = bytes(encodeChunks({ upserts: full, removed: [] }, RELAY_DEFAULTS.chunkBytes));
const deltaBytes = bytes(encodeChunks(diffStates(full, changed), RELAY_DEFAULTS.chunkBytes));
const rawBytes = [...full].reduce((a, [k, v]) => a + k.length + v.length, 0);
console.log(`500-resource output: raw ${rawBytes} B, full snapshot on the wire ${fullBytes} B (gzip), one-resource change ${deltaBytes} B → ${(fullBytes / deltaBytes).toFixed(0)}x smaller`);

await Promise.all(clients.map((c) => c.close()));
second.child.kill("SIGKILL");
process.exit(0);
