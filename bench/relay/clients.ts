/**
 * Child process of the relay bench holding one share of the clients, so that 10,000 of them need not
 * live in one process: relay agents (createRelayClient, as the simulator runs them), bare http2 mTLS
 * sessions with one open stream each (floor a), or TLS connections that each send one CSR (floor b).
 * Requests arrive as IPC messages; each is answered with this process's CPU time so far.
 */
import * as http2 from "node:http2";
import * as tls from "node:tls";
import { status as grpcStatus } from "@grpc/grpc-js";
import { silentLogger } from "../../src/core/index.js";
import { createCsr, createRelayClient, RELAY_DEFAULTS, type RelayClient } from "../../src/relay/index.js";
import { retryAfterOf } from "../../src/relay/errors.js";
import { signClientCertificate } from "../../src/relay/pki.js";
import { cpuMsOf, openFileLimit } from "./spawn.js";

type Request =
  | { type: "relay"; address: string; rootCaPem: string; keyPem: string; from: number; to: number; register: number; signingCa: { certPem: string; keyPem: string } }
  | { type: "register" }
  | { type: "connect" }
  | { type: "cpu" }
  | { type: "h2"; port: number; rootCaPem: string; certPem: string; keyPem: string; count: number }
  | { type: "tls-register"; port: number; rootCaPem: string; count: number }
  | { type: "close" };

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const CONCURRENCY = 50;
let csr: { keyPem: string; csrPem: string } | undefined;
/** One CSR per key (the bench's agents share a key; each still gets its own certificate). */
const csrOf = (keyPem: string) => (csr?.keyPem === keyPem ? csr : (csr = { keyPem, csrPem: createCsr("bench", keyPem).csrPem })).csrPem;
let clients: RelayClient[] = [];
/** The clients that register through the server; the others were given a certificate issued here. */
let registering: RelayClient[] = [];
const sessions: http2.ClientHttp2Session[] = [];

/** Runs `fn` for 0..count-1, at most CONCURRENCY at a time. */
async function pool(count: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

/** Registers, waiting as long as a busy server asks (admission) — as an agent's session loop does. */
async function register(c: RelayClient): Promise<number> {
  for (let refused = 0; ; refused++) {
    try {
      await c.register();
      return refused;
    } catch (err) {
      if ((err as { code?: number }).code !== grpcStatus.RESOURCE_EXHAUSTED) throw err;
      await sleep((retryAfterOf(err) ?? 1000) * (0.5 + Math.random()));
    }
  }
}

function h2Session(m: Extract<Request, { type: "h2" }>): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = http2.connect(`https://127.0.0.1:${m.port}`, { ca: m.rootCaPem, cert: m.certPem, key: m.keyPem, servername: RELAY_DEFAULTS.authority });
    s.once("error", reject);
    const stream = s.request({ ":method": "POST", ":path": "/floor" }, { endStream: false });
    stream.once("response", () => resolve());
    stream.once("error", reject);
    sessions.push(s);
  });
}

function tlsRegister(port: number, ca: string, csrPem: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca, servername: RELAY_DEFAULTS.authority }, () => socket.write(csrPem));
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (answer += d));
    socket.once("error", reject);
    socket.once("end", () => {
      socket.destroy();
      if (answer.startsWith("-----BEGIN CERTIFICATE-----")) resolve();
      else reject(new Error(`registration floor answered: ${answer.slice(0, 200)}`));
    });
  });
}

async function handle(m: Request): Promise<Record<string, unknown>> {
  switch (m.type) {
    case "relay":
      for (let i = m.from; i < m.to; i++) {
        const cluster = `c-${i}`;
        // Beyond the first `register` of this share: a certificate from the signing CA, as a registered agent holds.
        const issued = i - m.from >= m.register ? signClientCertificate(m.signingCa, { cluster, csrPem: csrOf(m.keyPem), lifetimeMs: 86_400_000 }) : undefined;
        const credentials = issued && { certPem: issued.certPem, keyPem: m.keyPem, caPem: m.rootCaPem, notAfterMs: issued.notAfterMs };
        const c = createRelayClient({ address: m.address, cluster, rootCaPem: m.rootCaPem, token: "bench-token", keyPem: m.keyPem, logger: silentLogger, renewAtFraction: 0, ...(credentials ? { credentials } : {}) });
        void c.pushDiscovery(new Map([[`service/ns/svc-${i}`, enc({ i })]]));
        clients.push(c);
        if (!credentials) registering.push(c);
      }
      return {};
    case "register": {
      let refused = 0;
      await pool(registering.length, async (i) => (refused += await register(registering[i]!)));
      return { refused };
    }
    case "connect":
      for (const c of clients) c.connect();
      await Promise.all(clients.map((c) => c.synced()));
      return {};
    case "cpu":
      return {};
    case "h2":
      await pool(m.count, () => h2Session(m));
      return {};
    case "tls-register": {
      const { csrPem } = createCsr("floor-cluster");
      await pool(m.count, () => tlsRegister(m.port, m.rootCaPem, csrPem));
      return {};
    }
    case "close":
      await Promise.all(clients.map((c) => c.close()));
      clients = [];
      registering = [];
      for (const s of sessions.splice(0)) s.destroy();
      return {};
  }
}

process.send?.({ type: "ready", openFiles: openFileLimit() });
process.on("message", (m: Request) => {
  handle(m).then(
    (r) => process.send?.({ ok: true, cpuMs: cpuMsOf(process.cpuUsage()), rss: process.memoryUsage().rss, ...r }),
    (err: unknown) => process.send?.({ ok: false, error: String(err), cpuMs: cpuMsOf(process.cpuUsage()) }),
  );
});
