/**
 * The relay client (agent side). Registers with the bootstrap token, then keeps one mTLS session
 * open: a discovery push stream (full snapshot first, then deltas) and an output pull stream (ACK or
 * NACK per version). Any failure tears the whole session down and reconnects with exponential backoff
 * and jitter; every new session starts with a full discovery snapshot and receives a full output.
 *
 * A server that goes quiet costs bounded memory (#35): a session whose full snapshot or a later update
 * is not acknowledged within `ackTimeoutMs` is torn down; whatever the server ends (end, close, error)
 * ends the whole session and its channel; discovery is not written while the stream's buffer is full
 * (the newest state goes as one delta once it drains); waiters for the same version share one promise.
 *
 * Holds (suspensions, #38): the client subscribes with `acceptsHold`; the server states the cluster's hold
 * before any output and again when it changes (`onHold`). An output that arrives while held is kept, not
 * handed to `onOutput` and not answered; when the hold is released the newest one kept is applied and
 * answered. The hold outlives a session (a cut connection does not lift it); a server that states no hold
 * before its first output (an older one) lifts it.
 */
import * as grpc from "@grpc/grpc-js";
import { backoffDelay, describeError, type BackoffOptions, type Logger } from "../core/index.js";
import { RELAY_DEFAULTS } from "./constants.js";
import { REJECTION_REASONS } from "./constants.js";
import { isPermanentStatus, reasonOf, retryAfterOf } from "./errors.js";
import {
  RegistrationClient,
  RelayClient as GrpcRelayClient,
  type ApplyError,
  type CertificateResponse,
  type DiscoveryAck,
  type DiscoveryUpdate,
  type Hold,
  type OutputAck,
  type OutputUpdate,
} from "./gen/gitmesh/relay/v1/relay.js";
import type { OutputHold } from "./output-delivery.js";
import { OwnedConnectionCredentials } from "./owned-connections.js";
import { certificateNotAfterMs, createCsr } from "./pki.js";
import { applyStateDelta, createChunkAssembler, diffStates, encodeChunks, isEmptyDelta, stateChecksum, type RelayState, type StateDelta } from "./wire.js";

/** What the agent stores in relay-client-tls-secret. */
export interface RelayClientCredentials {
  readonly certPem: string;
  readonly keyPem: string;
  /** Root CA that verifies the server. */
  readonly caPem: string;
  readonly notAfterMs: number;
}

export interface OutputEvent {
  readonly version: number;
  readonly full: boolean;
  readonly complete: boolean;
  readonly sourceCommit: string;
  readonly checksum: string;
  /** The whole output after this update. */
  readonly state: RelayState;
  /** What changed relative to the previous version (for a full update: everything). */
  readonly delta: StateDelta;
  /** Compressed bytes of the chunk payloads that carried this update (gRPC, HTTP/2 and TLS framing not counted). */
  readonly payloadBytes: number;
}

/** One resource the agent could not apply. */
export interface OutputError {
  readonly key: string;
  readonly message: string;
  /** true: passes without a person (the agent retries); false: a person must act; absent: not classified. */
  readonly transient?: boolean | undefined;
}

export type OutputResult = { readonly ack: true } | { readonly ack: false; readonly errors: readonly OutputError[] };

export interface RelayClientStatus {
  readonly connected: boolean;
  /** Full discovery snapshot of the current session acknowledged. */
  readonly synced: boolean;
  readonly sessions: number;
  readonly lastError?: { readonly code: number; readonly details: string };
  readonly outputVersion: number | undefined;
  /** The server's hold on this cluster as last stated (undefined: not held). */
  readonly hold: OutputHold | undefined;
}

export interface RelayClientOptions {
  /** host:port of the relay server (Helm relay.serverAddress). */
  readonly address: string;
  /** This cluster's name (Helm relay.cluster). */
  readonly cluster: string;
  /** Root CA the server is verified against (relay-root-tls-secret ca.crt). */
  readonly rootCaPem: string;
  /** TLS server name / :authority (default `gitmesh-server.gitmesh`). */
  readonly authority?: string;
  /**
   * Bootstrap credential (relay-identity-token-secret `token`): the per-cluster credential, or the fleet
   * token. A function is called on every registration attempt, so a corrected or re-issued credential
   * is picked up without a restart. Surrounding whitespace (a trailing newline) is ignored.
   */
  readonly token?: string | (() => string | undefined | Promise<string | undefined>);
  /** Existing client certificate (relay-client-tls-secret). */
  readonly credentials?: RelayClientCredentials;
  /** Key to put in CSRs (default: a fresh RSA key per registration/renewal). */
  readonly keyPem?: string;
  /** Called with new credentials after registration or renewal (persist them in relay-client-tls-secret). */
  readonly onCredentials?: (credentials: RelayClientCredentials) => void | Promise<void>;
  /** Applies an output version; ACK or NACK with per-resource errors. Default: ACK. */
  readonly onOutput?: (event: OutputEvent) => OutputResult | Promise<OutputResult>;
  /**
   * The server's hold on this cluster started, changed (undefined: ended). While held no output is handed
   * to `onOutput`; the agent must not repair drift either (what it runs is kept as it is).
   */
  readonly onHold?: (hold: OutputHold | undefined) => void;
  /** Session changes (connected, disconnected with the server's status). */
  readonly onStatus?: (status: RelayClientStatus) => void;
  readonly logger: Logger;
  readonly maxMessageBytes?: number;
  readonly chunkBytes?: number;
  readonly maxStateBytes?: number;
  readonly keepaliveTimeMs?: number;
  readonly keepaliveTimeoutMs?: number;
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number; readonly factor?: number; readonly jitter?: number };
  /**
   * How long the server may take to acknowledge the full discovery snapshot of a new session, or a later
   * update, before the session is torn down and started again (default 120 s: generous, a loaded
   * server answers late rather than never).
   */
  readonly ackTimeoutMs?: number;
  /** Renew automatically when this fraction of the certificate's remaining lifetime has passed (default 2/3; 0 disables). */
  readonly renewAtFraction?: number;
  /** Random source for jitter (default Math.random). */
  readonly random?: () => number;
}

export interface RelayClient {
  /** Registers with the bootstrap token: new key + CSR → client certificate. */
  register(): Promise<RelayClientCredentials>;
  /** Starts the session loop (reconnects until close). */
  connect(): void;
  /** Resolves when a session is up and its full discovery snapshot was acknowledged (or the client is closed). */
  synced(): Promise<void>;
  /**
   * Sets the whole discovery state; sent as a delta against the last sent state. Resolves when
   * acknowledged (or the client is closed); calls waiting for the same version share one promise.
   */
  pushDiscovery(state: RelayState): Promise<void>;
  /** Applies a delta to the discovery state and sends it. Resolves when acknowledged. */
  pushDiscoveryDelta(delta: StateDelta): Promise<void>;
  /** Renews the client certificate over mTLS. */
  renew(): Promise<RelayClientCredentials>;
  /** Tells the server about drift repairs (best effort: dropped when no session is up; the agent's log and metrics keep them). */
  reportDriftRepairs(repairs: readonly { readonly key: string; readonly why: "changed" | "deleted"; readonly atMs: number; readonly managers: readonly string[] }[]): void;
  status(): RelayClientStatus;
  close(): Promise<void>;
}

/** A generated client whose connections are ours to close (see owned-connections.ts). */
interface OwnedClient<C> {
  readonly grpcClient: C;
  readonly connections: OwnedConnectionCredentials;
}

interface Session extends OwnedClient<GrpcRelayClient> {
  readonly id: number;
  readonly push: grpc.ClientDuplexStream<DiscoveryUpdate, DiscoveryAck>;
  readonly pull: grpc.ClientDuplexStream<OutputAck, OutputUpdate>;
  /** Version of the last discovery update sent in this session, and of the last full one. */
  sentVersion: number;
  fullVersion: number;
  synced: boolean;
  dead: boolean;
  /** The push stream's buffer is full: discovery waits for "drain" (then the newest state goes as one delta). */
  blocked: boolean;
  /** A full snapshot was asked for while blocked: sent on drain. */
  fullOwed: boolean;
  /** Tears the session down when the version it watches is not acknowledged in time. */
  ackDeadline: { readonly version: number; readonly timer: NodeJS.Timeout } | undefined;
}

/** A promise and its resolver (one per awaited version, shared by every caller waiting for it). */
interface Deferred {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
}

function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * The wait before reconnect number `attempt`: after a busy server's hint, spread over [½, 1½] of it
 * so that the agents it refused together do not come back together; else exponential backoff with
 * jitter (pure; `random` is the client's injectable source).
 */
export function reconnectDelay(hintMs: number | undefined, backoff: BackoffOptions, attempt: number, random: () => number): number {
  return hintMs === undefined ? backoffDelay(backoff, attempt, random) : hintMs * (0.5 + random());
}

/** An agent's error as the wire carries it (`transient` only when the agent classified it). */
function applyError(e: OutputError): ApplyError {
  return { key: e.key, message: e.message, ...(e.transient === undefined ? {} : { transient: e.transient }) };
}

export function createRelayClient(options: RelayClientOptions): RelayClient {
  const log = options.logger;
  const authority = options.authority ?? RELAY_DEFAULTS.authority;
  const maxMessageBytes = options.maxMessageBytes ?? RELAY_DEFAULTS.maxMessageBytes;
  const chunkBytes = Math.max(1024, Math.min(options.chunkBytes ?? RELAY_DEFAULTS.chunkBytes, Math.floor(maxMessageBytes * 0.9)));
  const limits = { maxChunkBytes: maxMessageBytes, maxStateBytes: options.maxStateBytes ?? RELAY_DEFAULTS.maxStateBytes };
  const backoff = { ...RELAY_DEFAULTS.backoff, ...options.backoff };
  const random = options.random ?? Math.random;
  const ackTimeoutMs = options.ackTimeoutMs ?? RELAY_DEFAULTS.ackTimeoutMs;
  const renewAtFraction = options.renewAtFraction ?? RELAY_DEFAULTS.renewAtFraction;
  const channelOptions: grpc.ClientOptions = {
    "grpc.ssl_target_name_override": authority,
    "grpc.default_authority": authority,
    "grpc.max_receive_message_length": maxMessageBytes,
    "grpc.max_send_message_length": maxMessageBytes,
    "grpc.keepalive_time_ms": options.keepaliveTimeMs ?? RELAY_DEFAULTS.keepaliveTimeMs,
    "grpc.keepalive_timeout_ms": options.keepaliveTimeoutMs ?? RELAY_DEFAULTS.keepaliveTimeoutMs,
    "grpc.keepalive_permit_without_calls": 1,
    // Our own loop reconnects; a fresh channel per session picks up renewed certificates.
    "grpc.enable_retries": 0,
    // The session's connection belongs to its channel alone and goes with it (not kept in grpc's global pool).
    "grpc.use_local_subchannel_pool": 1,
  };

  let credentials = options.credentials;
  let closed = false;
  let running = false;
  let session: Session | undefined;
  let sessionCount = 0;
  let attempt = 0;
  let reconnectTimer: NodeJS.Timeout | undefined;
  /** The wait a busy server asked for with its last refusal (used once, by the next reconnect). */
  let retryHintMs: number | undefined;
  let renewTimer: NodeJS.Timeout | undefined;
  let lastError: { code: number; details: string } | undefined;
  // Discovery: the agent's current state and the last state sent in the current session.
  let discovery: Map<string, Uint8Array> = new Map();
  let sentState: RelayState = new Map();
  let version = 0;
  let ackedVersion = 0;
  /** Callers waiting for a discovery version to be acknowledged, one entry per version. */
  const ackWaiters = new Map<number, Deferred>();
  /** Callers waiting for the next synced session. */
  let syncWaiter: Deferred | undefined;
  // Output: what this agent has received.
  let output: { version: number; state: RelayState } | undefined;
  /** The server's hold as it last stated it (kept across sessions: a disconnect lifts nothing). */
  let hold: OutputHold | undefined;

  const status = (): RelayClientStatus => ({
    connected: session !== undefined && !session.dead,
    synced: session?.synced ?? false,
    sessions: sessionCount,
    ...(lastError ? { lastError } : {}),
    outputVersion: output?.version,
    hold,
  });
  const notify = () => options.onStatus?.(status());

  async function adopt(res: CertificateResponse, keyPem: string): Promise<RelayClientCredentials> {
    const c = { certPem: res.certificatePem, keyPem, caPem: res.caPem || options.rootCaPem, notAfterMs: res.notAfterMs || certificateNotAfterMs(res.certificatePem) };
    credentials = c;
    await options.onCredentials?.(c);
    scheduleRenewal();
    return c;
  }

  function scheduleRenewal() {
    if (renewTimer) clearTimeout(renewTimer);
    renewTimer = undefined;
    if (!credentials || renewAtFraction <= 0 || closed) return;
    const delay = Math.max(0, (credentials.notAfterMs - Date.now()) * renewAtFraction);
    renewTimer = setTimeout(() => {
      renew().catch((err: unknown) => {
        log.warn("certificate renewal failed; will retry", { error: describeError(err) });
        renewTimer = setTimeout(scheduleRenewal, Math.min(60_000, Math.max(1000, (credentials!.notAfterMs - Date.now()) / 10)));
      });
    }, Math.min(delay, 2 ** 31 - 1));
    renewTimer.unref();
  }

  /** A unary call that gives up after ackTimeoutMs (a stalled server answers never). */
  const unary = <Req, Res>(fn: (req: Req, options: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: Res) => void) => unknown, req: Req) =>
    new Promise<Res>((resolve, reject) => fn(req, { deadline: Date.now() + ackTimeoutMs }, (err, res) => (err ? reject(err) : resolve(res))));

  /** Closes a generated client and every connection it opened. */
  const closeOwned = (c: OwnedClient<grpc.Client>) => {
    c.grpcClient.close();
    c.connections.destroyAll();
  };

  async function currentToken(): Promise<string | undefined> {
    const t = typeof options.token === "function" ? await options.token() : options.token;
    const trimmed = t?.trim();
    return trimmed === "" ? undefined : trimmed;
  }

  async function register(): Promise<RelayClientCredentials> {
    const token = await currentToken();
    if (!token) throw new Error("cannot register: no bootstrap credential (secret relay-identity-token-secret, key token) configured");
    const { csrPem, keyPem } = createCsr(options.cluster, options.keyPem);
    const connections = new OwnedConnectionCredentials(grpc.credentials.createSsl(Buffer.from(options.rootCaPem)), ackTimeoutMs);
    const owned = { grpcClient: new RegistrationClient(options.address, connections, channelOptions), connections };
    const client = owned.grpcClient;
    try {
      const res = await unary<Parameters<typeof client.register>[0], CertificateResponse>((r, o, cb) => client.register(r, new grpc.Metadata(), o, cb), { cluster: options.cluster, token, csrPem });
      log.info("registered with the relay server", { cluster: options.cluster, notAfter: new Date(res.notAfterMs).toISOString() });
      return await adopt(res, keyPem);
    } finally {
      closeOwned(owned);
    }
  }

  function mtlsClient(c: RelayClientCredentials): OwnedClient<GrpcRelayClient> {
    const connections = new OwnedConnectionCredentials(grpc.credentials.createSsl(Buffer.from(options.rootCaPem), Buffer.from(c.keyPem), Buffer.from(c.certPem)), ackTimeoutMs);
    return { grpcClient: new GrpcRelayClient(options.address, connections, channelOptions), connections };
  }

  async function renew(): Promise<RelayClientCredentials> {
    if (!credentials) throw new Error("cannot renew: no client certificate yet; register first");
    const { csrPem, keyPem } = createCsr(options.cluster, options.keyPem);
    const own = session && !session.dead ? undefined : mtlsClient(credentials);
    const client = own?.grpcClient ?? session!.grpcClient;
    try {
      const res = await unary<Parameters<typeof client.renew>[0], CertificateResponse>((r, o, cb) => client.renew(r, new grpc.Metadata(), o, cb), { cluster: options.cluster, csrPem });
      log.info("renewed the client certificate", { cluster: options.cluster, notAfter: new Date(res.notAfterMs).toISOString() });
      return await adopt(res, keyPem);
    } finally {
      if (own) closeOwned(own);
    }
  }

  // ---- session ----------------------------------------------------------------------------

  /**
   * Sends the discovery state (full, or as a delta against what this session was sent). While the
   * stream's buffer is full nothing is written: the newest state goes once it drains.
   */
  function sendDiscovery(s: Session, full: boolean) {
    if (s.dead) return;
    if (s.blocked) {
      s.fullOwed ||= full;
      return;
    }
    const next = discovery;
    const delta: StateDelta = full ? { upserts: next, removed: [] } : diffStates(sentState, next);
    if (!full && isEmptyDelta(delta)) return;
    const v = ++version;
    const header = { cluster: options.cluster, version: v, baseVersion: full ? 0 : s.sentVersion, full, checksum: stateChecksum(next) };
    let writable = true;
    for (const chunk of encodeChunks(delta, chunkBytes)) writable = s.push.write({ ...header, chunk });
    s.sentVersion = v;
    if (full) s.fullVersion = v;
    sentState = next;
    armAckDeadline(s);
    if (!writable) {
      s.blocked = true;
      s.push.once("drain", () => {
        s.blocked = false;
        const owed = s.fullOwed;
        s.fullOwed = false;
        sendDiscovery(s, owed);
      });
    }
  }

  /** Watches the newest version sent: not acknowledged within ackTimeoutMs → the session starts over. */
  function armAckDeadline(s: Session) {
    if (s.dead || s.ackDeadline !== undefined || ackedVersion >= s.sentVersion) return;
    const watched = s.sentVersion;
    const timer = setTimeout(() => {
      s.ackDeadline = undefined;
      if (ackedVersion >= watched) return armAckDeadline(s);
      teardown(s, { code: grpc.status.DEADLINE_EXCEEDED, details: `the relay server did not acknowledge discovery version ${String(watched)} within ${String(ackTimeoutMs)} ms; reconnecting` });
    }, ackTimeoutMs);
    timer.unref();
    s.ackDeadline = { version: watched, timer };
  }

  function clearAckDeadline(s: Session) {
    if (s.ackDeadline) clearTimeout(s.ackDeadline.timer);
    s.ackDeadline = undefined;
  }

  function onDiscoveryAck(s: Session, ack: DiscoveryAck) {
    if (ack.resync) {
      // Resync requests for versions sent before our last full snapshot are already answered by it.
      if (ack.version < s.fullVersion) return;
      log.info("server asked for a full discovery resync", { cluster: options.cluster, version: ack.version, why: ack.message });
      sendDiscovery(s, true);
      return;
    }
    ackedVersion = Math.max(ackedVersion, ack.version);
    if (s.ackDeadline && ackedVersion >= s.ackDeadline.version) {
      clearAckDeadline(s);
      armAckDeadline(s);
    }
    if (!s.synced && ack.version >= s.fullVersion) {
      s.synced = true;
      attempt = 0;
      log.info("relay session synced", { cluster: options.cluster, session: s.id });
      syncWaiter?.resolve();
      syncWaiter = undefined;
      notify();
    }
    resolveAckWaiters((v) => v <= ackedVersion);
  }

  function resolveAckWaiters(done: (version: number) => boolean) {
    for (const [v, w] of ackWaiters) {
      if (!done(v)) continue;
      ackWaiters.delete(v);
      w.resolve();
    }
  }

  /** Takes the hold the server stated; tells the agent when it differs from the one in force. */
  function setHold(next: OutputHold | undefined) {
    if ((next?.summary ?? "") === (hold?.summary ?? "")) return;
    hold = next;
    options.onHold?.(next);
    notify();
  }

  function outputHandler(s: Session) {
    const assembler = createChunkAssembler<OutputUpdate>(limits, (a, b) => a.version === b.version && a.full === b.full && a.checksum === b.checksum);
    let chain = Promise.resolve();
    // Payload bytes of the chunks of the update being assembled (a failed update ends the session, and with it this count).
    let pendingBytes = 0;
    /** The server stated the hold on this stream (one that understands holds does so before any output). */
    let heardHold = false;
    /** The newest output that arrived while held: applied and answered once the hold is released. */
    let deferred: OutputEvent | undefined;
    const reply = (msg: OutputAck) => {
      if (!s.dead) s.pull.write(msg);
    };
    const answer = (version: number, result: OutputResult) =>
      reply({ cluster: options.cluster, version, ack: result.ack, errors: result.ack ? [] : result.errors.map(applyError), resync: false, report: false, repairs: [], acceptsHold: false });
    const apply = async (event: OutputEvent) => {
      let result: OutputResult = { ack: true };
      try {
        if (options.onOutput) result = await options.onOutput(event);
      } catch (err) {
        result = { ack: false, errors: [{ key: "", message: describeError(err) }] };
      }
      answer(event.version, result);
    };
    const process = async (u: OutputUpdate) => {
      pendingBytes += u.chunk?.payload.length ?? 0;
      const delta = assembler.push(u, u.chunk);
      if (!delta) return;
      const payloadBytes = pendingBytes;
      pendingBytes = 0;
      let state: Map<string, Uint8Array>;
      if (u.full) state = new Map(delta.upserts);
      else if (output?.version !== u.baseVersion) {
        log.warn("output delta does not apply to our version; asking for a full resend", { have: output?.version, base: u.baseVersion });
        return reply({ cluster: options.cluster, version: u.version, ack: false, errors: [], resync: true, report: false, repairs: [], acceptsHold: false });
      } else state = applyStateDelta(output.state, delta);
      if (stateChecksum(state) !== u.checksum) {
        log.warn("output checksum mismatch; asking for a full resend", { version: u.version });
        return reply({ cluster: options.cluster, version: u.version, ack: false, errors: [], resync: true, report: false, repairs: [], acceptsHold: false });
      }
      output = { version: u.version, state };
      const event: OutputEvent = { version: u.version, full: u.full, complete: u.complete, sourceCommit: u.sourceCommit, checksum: u.checksum, state, delta: u.full ? { upserts: state, removed: [] } : delta, payloadBytes };
      if (hold) {
        // Kept, not applied and not answered: the server knows the cluster is held (it said so).
        if (deferred) log.debug("a newer output replaces the one kept while held", { kept: deferred.version, version: u.version });
        deferred = event;
        log.info("output kept, not applied: the cluster is held by the server", { version: u.version, sourceCommit: u.sourceCommit });
        return;
      }
      deferred = undefined;
      await apply(event);
    };
    /** A hold notice: taken at once (not behind an apply in progress); a release applies what was kept. */
    const onHoldNotice = (h: Hold) => {
      heardHold = true;
      setHold(h.held ? { sinceMs: h.sinceMs, by: h.by, ...(h.reason === "" ? {} : { reason: h.reason }), summary: h.summary } : undefined);
      if (hold || !deferred) return;
      chain = chain
        .then(async () => {
          const kept = deferred;
          deferred = undefined;
          // Only the newest output received, and only while still released.
          if (kept && !hold && output?.version === kept.version) await apply({ ...kept, full: true, delta: { upserts: kept.state, removed: [] } });
        })
        .catch((err: unknown) => teardown(s, err));
    };
    return (u: OutputUpdate) => {
      if (u.hold !== undefined) return onHoldNotice(u.hold);
      if (!heardHold) {
        heardHold = true;
        if (hold) {
          log.warn("the relay server stated no hold before its output (a server without holds): the cluster is treated as not held", { cluster: options.cluster });
          setHold(undefined);
        }
      }
      chain = chain.then(() => process(u)).catch((err: unknown) => teardown(s, err));
    };
  }

  /** Ends a session for good: both calls cancelled, its channel (and so its connection) closed. */
  function dispose(s: Session) {
    s.dead = true;
    clearAckDeadline(s);
    s.push.cancel();
    s.pull.cancel();
    closeOwned(s);
    if (session === s) session = undefined;
  }

  function teardown(s: Session, err: unknown) {
    if (s.dead) return;
    dispose(s);
    const se = err as Partial<grpc.ServiceError> | undefined;
    if (reasonOf(err) === REJECTION_REASONS.certificateRevoked && credentials) {
      // Re-issued by an operator: this certificate is refused for good; register again with the new credential.
      log.warn("the client certificate was revoked; registering again with the bootstrap credential", { cluster: options.cluster });
      credentials = undefined;
      if (renewTimer) clearTimeout(renewTimer);
    }
    retryHintMs = retryAfterOf(err);
    if (retryHintMs !== undefined) {
      log.info("the relay server is busy admitting agents; coming back later", { cluster: options.cluster, retryAfterMs: retryHintMs });
    } else if (se && typeof se.code === "number" && se.code !== grpc.status.CANCELLED) {
      lastError = { code: se.code, details: se.details ?? "" };
      const level = isPermanentStatus(se.code) ? "error" : "warn";
      log[level]("relay session ended", { cluster: options.cluster, code: grpc.status[se.code], details: se.details });
    } else if (err !== undefined && !(se && se.code === grpc.status.CANCELLED)) {
      log.warn("relay session ended", { cluster: options.cluster, error: describeError(err) });
    }
    notify();
    scheduleReconnect();
  }

  /** The next reconnect (reconnectDelay: the busy server's hint with jitter, else backoff). */
  function scheduleReconnect() {
    if (closed || reconnectTimer) return;
    const delay = reconnectDelay(retryHintMs, backoff, attempt, random);
    retryHintMs = undefined;
    attempt++;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      void startSession();
    }, delay);
  }

  async function startSession() {
    if (closed || session) return;
    try {
      if (!credentials || credentials.notAfterMs <= Date.now()) {
        if (options.token !== undefined) await register();
        else throw new Error("no valid client certificate and no bootstrap credential: configure relay-client-tls-secret or relay-identity-token-secret");
      }
    } catch (err) {
      const se = err as Partial<grpc.ServiceError>;
      retryHintMs = retryAfterOf(err);
      if (retryHintMs !== undefined) log.info("the relay server is busy admitting agents; registering later", { cluster: options.cluster, retryAfterMs: retryHintMs });
      else {
        if (typeof se.code === "number") lastError = { code: se.code, details: se.details ?? "" };
        log.error("registration failed", { cluster: options.cluster, error: describeError(err) });
      }
      notify();
      scheduleReconnect();
      return;
    }
    // close() may have run while registering.
    if ((closed as boolean) || !credentials) return;
    const { grpcClient, connections } = mtlsClient(credentials);
    const s: Session = {
      id: ++sessionCount,
      grpcClient,
      connections,
      push: grpcClient.pushDiscovery(),
      pull: grpcClient.pullOutput(),
      sentVersion: 0,
      fullVersion: 0,
      synced: false,
      dead: false,
      blocked: false,
      fullOwed: false,
      ackDeadline: undefined,
    };
    session = s;
    s.push.on("data", (ack: DiscoveryAck) => onDiscoveryAck(s, ack));
    s.pull.on("data", outputHandler(s));
    // Whatever the server ends ends the whole session, its channel and connection with it.
    for (const [call, noun] of [[s.push, "discovery"], [s.pull, "output"]] as const) {
      call.on("error", (err) => teardown(s, err));
      call.on("end", () => teardown(s, { code: grpc.status.UNAVAILABLE, details: `${noun} stream ended by the server` }));
      call.on("close", () => teardown(s, { code: grpc.status.UNAVAILABLE, details: `${noun} stream closed` }));
    }
    sentState = new Map();
    sendDiscovery(s, true);
    // Subscribe, saying that this agent understands holds (the server then states the hold before any output).
    s.pull.write({ cluster: options.cluster, version: 0, ack: false, errors: [], resync: false, report: false, repairs: [], acceptsHold: true });
    notify();
  }

  function waitAck(v: number): Promise<void> {
    if (v <= ackedVersion || closed) return Promise.resolve();
    let w = ackWaiters.get(v);
    if (!w) ackWaiters.set(v, (w = deferred()));
    return w.promise;
  }

  function waitSynced(): Promise<void> {
    if (session?.synced === true || closed) return Promise.resolve();
    syncWaiter ??= deferred();
    return syncWaiter.promise;
  }

  return {
    register,
    connect() {
      if (running) return;
      running = true;
      if (credentials) scheduleRenewal();
      void startSession();
    },
    synced: waitSynced,
    pushDiscovery(state) {
      discovery = new Map(state);
      if (session && !session.dead) sendDiscovery(session, false);
      // Whatever is sent next (delta now, or the full snapshot of the next session) carries this state.
      return waitAck(session && !session.dead ? version : version + 1);
    },
    pushDiscoveryDelta(delta) {
      return this.pushDiscovery(applyStateDelta(discovery, delta));
    },
    renew,
    reportDriftRepairs(repairs) {
      const s = session;
      // Best effort: dropped too while the stream's buffer is full (a server that does not read).
      if (!s || s.dead || repairs.length === 0 || s.pull.writableNeedDrain) return;
      s.pull.write({ cluster: options.cluster, version: 0, ack: false, errors: [], resync: false, report: true, repairs: repairs.map((r) => ({ key: r.key, why: r.why, atMs: r.atMs, managers: [...r.managers] })), acceptsHold: false });
    },
    status,
    async close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      if (renewTimer) clearTimeout(renewTimer);
      if (session) dispose(session);
      // Nobody waits forever on a closed client.
      resolveAckWaiters(() => true);
      syncWaiter?.resolve();
      syncWaiter = undefined;
      await Promise.resolve();
    },
  };
}
