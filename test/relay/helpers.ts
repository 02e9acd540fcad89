// Shared set-up for the relay tests: a real server on 127.0.0.1:0 with real TLS, and clients.
import * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { afterEach } from "vitest";
import { createMemoryLogger, type Logger } from "../../src/core/index.js";
import {
  createClusterIdentities,
  createCsr,
  createMemoryRecordStore,
  createRelayClient,
  createRelayServer,
  generateKeyPem,
  generateRelayPki,
  signClientCertificate,
  type RelayClient,
  type RelayClientOptions,
  type RelayPki,
  type RelayServerOptions,
  type ClusterIdentities,
} from "../../src/relay/index.js";
import { RelayClient as GrpcRelayClient, RegistrationClient as GrpcRegistrationClient } from "../../src/relay/gen/gitmesh/relay/v1/relay.js";
import { createRelayMetrics, type RelayMetrics } from "../../src/relay/metrics.js";
import { createPeerGate, type PeerGate } from "../../src/relay/peer-gate.js";
import { createRefusals, type Refusals } from "../../src/relay/refusals.js";
import { createRelayTransport, type RelayHandlers } from "../../src/relay/transport.js";

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
export function rejectionsLogged(s: { readonly mem: ReturnType<typeof createMemoryLogger> }, reason: string) {
  return s.mem.records.filter((r) => r.msg === "relay rejected a request" && r.fields.reason === reason);
}

/** What a part under test is built from: the plumbing every part shares, on a fresh registry. */
export interface PartDeps {
  readonly logger: Logger;
  readonly mem: ReturnType<typeof createMemoryLogger>;
  readonly registry: Registry;
  readonly metrics: RelayMetrics;
  readonly refusals: Refusals;
  readonly gate: PeerGate;
  readonly identities: ClusterIdentities;
  readonly registered: Set<string>;
}

/** Plumbing for one part: logger, metrics, refusals and a peer gate over an in-memory identity store. */
export function partDeps(options: { registered?: Set<string>; identities?: ClusterIdentities } = {}): PartDeps {
  const mem = createMemoryLogger("relay-part");
  const registry = new Registry();
  const metrics = createRelayMetrics(registry);
  const refusals = createRefusals({ logger: mem.logger, metrics });
  const identities = options.identities ?? createClusterIdentities(createMemoryRecordStore());
  const registered = options.registered ?? new Set(["alpha", "beta", "gamma"]);
  const gate = createPeerGate({ identities, isClusterRegistered: (c) => registered.has(c), refusals, logger: mem.logger });
  return { logger: mem.logger, mem, registry, metrics, refusals, gate, identities, registered };
}

/**
 * Parts served alone: the handlers `build` returns, on the real transport (TLS, 127.0.0.1:0); every
 * other RPC answers UNIMPLEMENTED. Stopped after the test when `defer` is given.
 */
export async function serveParts<T extends Partial<RelayHandlers>>(
  build: (deps: PartDeps) => T,
  options: { registered?: Set<string>; identities?: ClusterIdentities; maxMessageBytes?: number; defer?: (cleanup: () => Promise<void>) => void } = {},
) {
  const deps = partDeps(options);
  const part = build(deps);
  const transport = createRelayTransport({ pki: testPki(), handlers: part, refusals: deps.refusals, logger: deps.logger, host: "127.0.0.1", port: 0, ...(options.maxMessageBytes === undefined ? {} : { maxMessageBytes: options.maxMessageBytes }) });
  const port = await transport.start();
  options.defer?.(() => transport.stop());
  return { ...deps, part, transport, port, address: `127.0.0.1:${port}` };
}

/** A Registration client with simple TLS (no client certificate), as an agent before registration. */
export function registrationClient(address: string) {
  return new GrpcRegistrationClient(address, grpc.credentials.createSsl(Buffer.from(testPki().rootCaCertPem)), channelOptions);
}
