// Shared set-up for the relay tests: a real server on 127.0.0.1:0 with real TLS, and clients.
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { afterEach } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import {
  createCsr,
  createRelayClient,
  createRelayServer,
  generateKeyPem,
  generateRelayPki,
  signClientCertificate,
  type RelayClient,
  type RelayClientOptions,
  type RelayPki,
  type RelayServerOptions,
} from "../../src/relay/index.js";
import { RelayClient as GrpcRelayClient } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";

export const TOKEN = "s3cret-bootstrap-token-value-0123456789";

let sharedPki: RelayPki | undefined;
/** One generated PKI for the whole test file (RSA key generation is the slow part). */
export function testPki(): RelayPki {
  sharedPki ??= generateRelayPki({ additionalSans: ["127.0.0.1"] });
  return sharedPki;
}
let sharedKey: string | undefined;
/** Clients in tests share one key (each still gets its own certificate); generating 200 RSA keys would dominate the run. */
export function clientKey(): string {
  sharedKey ??= generateKeyPem();
  return sharedKey;
}

export const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
export const state = (obj: Record<string, unknown>) => new Map(Object.entries(obj).map(([k, v]) => [k, enc(v)]));

export async function startServer(overrides: Partial<RelayServerOptions> & { registered?: Set<string> } = {}) {
  const mem = createMemoryLogger("relay");
  const registry = new Registry();
  const registered = overrides.registered ?? new Set(["alpha", "beta", "gamma"]);
  const server = createRelayServer({
    pki: testPki(),
    token: TOKEN,
    isClusterRegistered: (c) => registered.has(c) || c.startsWith("load-"),
    logger: mem.logger,
    registry,
    host: "127.0.0.1",
    port: 0,
    keepaliveTimeMs: 5000,
    ...overrides,
  });
  const port = await server.start();
  return { server, port, mem, registry, registered, address: `127.0.0.1:${port}` };
}

export function newClient(address: string, cluster: string, extra: Partial<RelayClientOptions> = {}, withToken = true): RelayClient {
  return createRelayClient({
    address,
    cluster,
    rootCaPem: testPki().rootCaCertPem,
    ...(withToken ? { token: TOKEN } : {}),
    keyPem: clientKey(),
    logger: createMemoryLogger(`agent-${cluster}`).logger,
    backoff: { initialMs: 50, maxMs: 500 },
    ...extra,
  });
}

export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const values = (m?.values ?? []) as { value: number; labels: Record<string, string | number> }[];
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

export async function until(pred: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const start = Date.now();
  while (!(await pred())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export function mtlsCredentials(certPem: string, keyPem: string): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(Buffer.from(testPki().rootCaCertPem), Buffer.from(keyPem), Buffer.from(certPem));
}

export const channelOptions = { "grpc.ssl_target_name_override": "gitmesh-server.gitmesh", "grpc.default_authority": "gitmesh-server.gitmesh" };

/** Status of a call that the server ends. */
export function statusOf(call: NodeJS.EventEmitter): Promise<grpc.ServiceError> {
  return new Promise((resolve) => {
    call.on("data", () => undefined);
    call.on("error", (e: grpc.ServiceError) => resolve(e));
  });
}

export type StartedServer = Awaited<ReturnType<typeof startServer>>;

/**
 * Servers and clients a test starts, closed after it in reverse order. Call once at the top level of
 * a test file (it registers the afterEach).
 */
export function useRelayCleanup() {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  const defer = (cleanup: () => Promise<void> | void): void => {
    cleanups.push(cleanup);
  };
  return {
    defer,
    server: async (overrides: Parameters<typeof startServer>[0] = {}): Promise<StartedServer> => {
      const s = await startServer(overrides);
      defer(() => s.server.stop());
      return s;
    },
    client: (...args: Parameters<typeof newClient>): RelayClient => {
      const c = newClient(...args);
      defer(() => c.close());
      return c;
    },
    /** A bare generated gRPC client with a client certificate: sends whatever the test wants. */
    rawClient: (address: string, certPem: string, options: grpc.ChannelOptions = {}) => {
      const c = new GrpcRelayClient(address, mtlsCredentials(certPem, clientKey()), { ...channelOptions, ...options });
      defer(() => c.close());
      return c;
    },
  };
}

/** A certificate for `cluster` signed by the test PKI's signing CA (as registration would issue). */
export function certFor(cluster: string, lifetimeMs = 3600_000, now = Date.now()): string {
  const pki = testPki();
  const { csrPem } = createCsr(cluster, clientKey());
  return signClientCertificate({ certPem: pki.signingCaCertPem, keyPem: pki.signingCaKeyPem }, { cluster, csrPem, lifetimeMs, now }).certPem;
}

/** The rejections the server logged with this reason. */
export function rejectionsLogged(s: StartedServer, reason: string) {
  return s.mem.records.filter((r) => r.msg === "relay rejected a request" && r.fields.reason === reason);
}
