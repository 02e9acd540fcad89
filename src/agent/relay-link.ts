/**
 * The agent's narrow interface to the relay, and its implementation over createRelayClient:
 * identity material from the agent namespace's secrets (relay-root-tls-secret ca.crt,
 * relay-identity-token-secret token, relay-client-tls-secret tls.crt/tls.key/ca.crt), registration
 * when there is no valid client certificate, the issued certificate stored back (and reused on the
 * next start), renewal by the relay client before expiry.
 */
import { NeedsHumanError, type Logger } from "../core/index.js";
import type { IntermediateSigner } from "../pki/index.js";
import { certificateNotAfterMs, createRelayClient, createRelayIntermediateSigner, RELAY_SECRETS, type OutputHold, type RelayClient, type RelayClientCredentials, type RelayClientOptions } from "../relay/index.js";
import type { OutputVersion, ResourceError } from "./applier.js";
import { KINDS, type FieldOwnerWriter, type KubeReader } from "./kube.js";

export interface RelayHandlers {
  /** An output version arrived: apply it; the result is the ACK (ack) or NACK (errors). */
  onOutput(output: OutputVersion): Promise<{ ack: boolean; errors: readonly ResourceError[] }>;
  /** Session state changes. */
  onConnection?(connected: boolean): void;
  /**
   * The server holds this cluster (a suspension through its API or gitmesh.yaml), or no longer does
   * (undefined). While held no output arrives at `onOutput` (the link keeps the newest and hands it over
   * on release) and the agent repairs no drift.
   */
  onHold?(hold: OutputHold | undefined): void;
}

/** What the agent needs from the relay. */
export interface RelayLink {
  /** Hands the whole discovery state over; the link sends what changed (a full snapshot on every new session). */
  pushDiscovery(state: ReadonlyMap<string, Uint8Array>): void;
  /** Reports drift repairs to the server (best effort). */
  reportDriftRepair?(repair: { readonly key: string; readonly why: "changed" | "deleted"; readonly atMs: number; readonly managers: readonly string[] }): void;
  readonly connected: boolean;
  close(): Promise<void>;
}

/** Opens a link (called when this replica becomes leader). */
export type RelayLinkFactory = (handlers: RelayHandlers) => Promise<RelayLink>;

export interface RelayLinkOptions {
  readonly reader: KubeReader;
  readonly writer: FieldOwnerWriter;
  /** Agent namespace holding the relay secrets. */
  readonly namespace: string;
  /** host:port (relay.serverAddress). */
  readonly address: string;
  /** relay.cluster */
  readonly cluster: string;
  /** relay.authority (TLS server name). */
  readonly authority?: string;
  /** Secret names in `namespace` (defaults: RELAY_SECRETS; chart relay.rootTlsSecret, relay.tokenSecret, relay.clientTlsSecret). */
  readonly secretNames?: RelaySecretNames;
  /** Passed through to the relay client (backoff, keepalive, sizes, renewAtFraction). */
  readonly client?: Partial<Pick<RelayClientOptions, "backoff" | "keepaliveTimeMs" | "keepaliveTimeoutMs" | "maxMessageBytes" | "chunkBytes" | "renewAtFraction" | "keyPem">>;
  readonly logger: Logger;
}

/** Names of the three relay secrets in the agent namespace. */
export interface RelaySecretNames {
  readonly rootTls?: string;
  readonly token?: string;
  readonly clientTls?: string;
}

const names = (n: RelaySecretNames = {}) => ({
  rootTls: n.rootTls ?? RELAY_SECRETS.rootTls.name,
  token: n.token ?? RELAY_SECRETS.identityToken.name,
  clientTls: n.clientTls ?? RELAY_SECRETS.clientTls.name,
});

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const unb64 = (v: unknown) => (typeof v === "string" ? Buffer.from(v, "base64").toString("utf8") : undefined);

/** Reads a secret's data (decoded); undefined when absent. */
async function secretData(reader: KubeReader, namespace: string, name: string): Promise<Record<string, string> | undefined> {
  const s = await reader.get(KINDS.Secret, namespace, name);
  if (!s) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((s.data ?? {}) as Record<string, unknown>)) {
    const d = unb64(v);
    if (d !== undefined) out[k] = d;
  }
  return out;
}

/** Stored client credentials, when present and not expired. */
export async function loadClientCredentials(reader: KubeReader, namespace: string, now = Date.now(), secretNames?: RelaySecretNames): Promise<RelayClientCredentials | undefined> {
  const k = RELAY_SECRETS.clientTls.keys;
  const d = await secretData(reader, namespace, names(secretNames).clientTls);
  const certPem = d?.[k.tlsCrt];
  const keyPem = d?.[k.tlsKey];
  if (!certPem || !keyPem) return undefined;
  let notAfterMs: number;
  try {
    notAfterMs = certificateNotAfterMs(certPem);
  } catch {
    return undefined;
  }
  if (notAfterMs <= now) return undefined;
  return { certPem, keyPem, caPem: d[k.caCrt] ?? "", notAfterMs };
}

/**
 * The client certificate the relay link stored in relay-client-tls-secret (read per call, so a renewed
 * certificate is picked up), with relay-root-tls-secret ca.crt as the CA when the stored one has none.
 */
export async function currentClientCredentials(reader: KubeReader, namespace: string, secretNames?: RelaySecretNames): Promise<RelayClientCredentials | undefined> {
  const c = await loadClientCredentials(reader, namespace, Date.now(), secretNames);
  if (!c || c.caPem !== "") return c;
  const ca = (await secretData(reader, namespace, names(secretNames).rootTls))?.[RELAY_SECRETS.rootTls.keys.caCrt];
  return ca !== undefined ? { ...c, caPem: ca } : c;
}

/** Istio intermediate CAs (RootTrustPolicy): CSRs signed by the server over Relay.SignIntermediate, with the stored client certificate. */
export function createRelaySigner(options: { reader: KubeReader; namespace: string; address: string; authority: string; secretNames?: RelaySecretNames; logger: Logger }): IntermediateSigner {
  return createRelayIntermediateSigner({
    address: options.address,
    authority: options.authority,
    credentials: () => currentClientCredentials(options.reader, options.namespace, options.secretNames),
    logger: options.logger,
  });
}

export async function storeClientCredentials(writer: FieldOwnerWriter, namespace: string, c: RelayClientCredentials, secretNames?: RelaySecretNames): Promise<void> {
  const k = RELAY_SECRETS.clientTls.keys;
  await writer.apply({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: names(secretNames).clientTls, namespace },
    type: "kubernetes.io/tls",
    data: { [k.tlsCrt]: b64(c.certPem), [k.tlsKey]: b64(c.keyPem), [k.caCrt]: b64(c.caPem) },
  });
}

export function createRelayLinkFactory(options: RelayLinkOptions): RelayLinkFactory {
  const log = options.logger;
  const secrets = names(options.secretNames);
  return async (handlers) => {
    const root = await secretData(options.reader, options.namespace, secrets.rootTls);
    const rootCaPem = root?.[RELAY_SECRETS.rootTls.keys.caCrt];
    if (!rootCaPem) {
      throw new NeedsHumanError(
        `secret ${options.namespace}/${secrets.rootTls} with key ${RELAY_SECRETS.rootTls.keys.caCrt} is missing: copy the relay root CA into the agent namespace (helm value or gitmesh cluster register)`,
      );
    }
    // The bootstrap credential is read again on every registration attempt: a corrected or re-issued one
    // (the Secret is replaced by `gitmesh cluster reissue`) is used without restarting the agent. A
    // trailing newline (token files, `kubectl create secret --from-file`) is not part of it.
    const readToken = async (): Promise<string | undefined> => {
      const t = (await secretData(options.reader, options.namespace, secrets.token))?.[RELAY_SECRETS.identityToken.keys.token]?.trim();
      return t === "" ? undefined : t;
    };
    const token = await readToken();
    const credentials = await loadClientCredentials(options.reader, options.namespace, Date.now(), options.secretNames);
    if (!credentials && !token) {
      // Not fatal: the client retries with backoff and reads the Secret again on each attempt.
      log.error(
        `no valid client certificate in ${secrets.clientTls} and no bootstrap credential in ${options.namespace}/${secrets.token}: the agent cannot register until one is written (gitmesh cluster register / reissue)`,
        { cluster: options.cluster },
      );
    }
    log.info(credentials ? "reusing the stored relay client certificate" : "no stored client certificate: registering with the bootstrap token", {
      cluster: options.cluster,
      ...(credentials ? { notAfter: new Date(credentials.notAfterMs).toISOString() } : {}),
    });
    let connected = false;
    const client: RelayClient = createRelayClient({
      address: options.address,
      cluster: options.cluster,
      rootCaPem,
      ...(options.authority === undefined ? {} : { authority: options.authority }),
      token: readToken,
      ...(credentials ? { credentials } : {}),
      ...options.client,
      logger: log.child("relay"),
      onCredentials: (c) => storeClientCredentials(options.writer, options.namespace, c, options.secretNames),
      onStatus: (s) => {
        if (s.connected !== connected) {
          connected = s.connected;
          handlers.onConnection?.(connected);
        }
      },
      onHold: (hold) => handlers.onHold?.(hold),
      onOutput: async (e) => {
        const r = await handlers.onOutput({ version: e.version, complete: e.complete, sourceCommit: e.sourceCommit, resources: e.state });
        // Each error says whether it passes without a person (the server shows "retrying", not "refused").
        return r.ack ? { ack: true } : { ack: false, errors: r.errors.map((e) => ({ key: e.key, message: e.message, ...(e.transient === undefined ? {} : { transient: e.transient }) })) };
      },
    });
    client.connect();
    return {
      pushDiscovery(state) {
        // Acknowledgement is awaited by nobody: the client resends the whole state on the next session.
        void client.pushDiscovery(state);
      },
      reportDriftRepair: (repair) => client.reportDriftRepairs([repair]),
      get connected() {
        return connected;
      },
      close: () => client.close(),
    };
  };
}
