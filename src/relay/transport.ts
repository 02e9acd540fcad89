/**
 * The relay's gRPC listener: one TLS port for registration (simple TLS: the agent has no certificate
 * yet) and the mTLS services. grpc-js's createSsl cannot express "ask for a client certificate but let
 * the handshake through without one", so the credentials come from
 * grpc.experimental.createCertificateProviderServerCredentials with requireClientCertificate=false:
 * TLS requests a client certificate and verifies it against the signing CA, and grpc-js 1.14 fills
 * `call.getAuthContext().sslPeerCertificate` only when the socket is `authorized` (chain to the signing
 * CA, within its validity); the handlers require it (peer-gate.ts). Because the handshake is let
 * through, every refusal (missing, expired, foreign certificate) reaches a handler and is logged,
 * counted and answered with a status that says what to fix.
 *
 * The transport knows no relay logic: it decodes tolerantly (refusals.ts), reports grpc-js's own
 * message-size refusals as relay refusals, and serves the handlers it is given (a missing one answers
 * UNIMPLEMENTED).
 */
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "../core/index.js";
import { REJECTION_REASONS, RELAY_DEFAULTS } from "./constants.js";
import { RelayRejectedError } from "./errors.js";
import {
  DiscoveryUpdate,
  OutputAck,
  RegisterRequest,
  RegistrationService,
  RelayService,
  RenewRequest,
  SignIntermediateRequest,
  type CertificateResponse,
  type DiscoveryAck,
  type OutputUpdate,
  type SignIntermediateResponse,
} from "./gen/gitmesh/relay/v1/relay.js";
import { clusterOfPeerCertificate, type RelayPki } from "./pki.js";
import { tolerant, type Malformed, type Refusals, type RequestFields } from "./refusals.js";

/** The relay's RPCs; requests arrive decoded, or as Malformed for the handler to refuse. */
export interface RelayHandlers {
  readonly register: grpc.handleUnaryCall<RegisterRequest | Malformed, CertificateResponse>;
  readonly renew: grpc.handleUnaryCall<RenewRequest | Malformed, CertificateResponse>;
  readonly signIntermediate: grpc.handleUnaryCall<SignIntermediateRequest | Malformed, SignIntermediateResponse>;
  readonly pushDiscovery: grpc.handleBidiStreamingCall<DiscoveryUpdate | Malformed, DiscoveryAck>;
  readonly pullOutput: grpc.handleBidiStreamingCall<OutputAck | Malformed, OutputUpdate>;
}

export interface RelayTransportOptions {
  /** Server certificate and key, and the signing CA that client certificates must chain to. */
  readonly pki: Pick<RelayPki, "serverCertPem" | "serverKeyPem" | "signingCaCertPem">;
  /** What serves each RPC (a missing one answers UNIMPLEMENTED). */
  readonly handlers: Partial<RelayHandlers>;
  readonly refusals: Pick<Refusals, "refuse">;
  readonly logger: Logger;
  /** Listen address (default `0.0.0.0`). */
  readonly host?: string;
  /** Listen port (default 9900; 0 picks a free port). */
  readonly port?: number;
  /** gRPC max message size, both directions (default 4 MiB). */
  readonly maxMessageBytes?: number;
  /** HTTP/2 keepalive ping interval (default 30 s), also without calls. */
  readonly keepaliveTimeMs?: number;
  /** How long a keepalive ping may go unanswered (default 10 s). */
  readonly keepaliveTimeoutMs?: number;
  /** Extra fields for the "relay server listening" log line. */
  readonly describe?: RequestFields;
}

/** A long-running part: started once, stopped once (stopping lets calls finish for up to 2 s, then forces). */
export interface RelayTransport {
  /** Binds and starts serving; resolves with the bound port. */
  start(): Promise<number>;
  stop(): Promise<void>;
  readonly port: number | undefined;
  /** Whether it is serving (between start and stop). */
  readonly serving: boolean;
}

/** How long stop() lets open calls finish before it forces the shutdown. */
const SHUTDOWN_GRACE_MS = 2000;

export function createRelayTransport(options: RelayTransportOptions): RelayTransport {
  const log = options.logger;
  const maxMessageBytes = options.maxMessageBytes ?? RELAY_DEFAULTS.maxMessageBytes;
  let server: grpc.Server | undefined;
  let boundPort: number | undefined;

  /**
   * grpc-js refuses a message above grpc.max_receive_message_length itself (its stream decoder reads
   * the length prefix and answers RESOURCE_EXHAUSTED before buffering the body or calling a handler),
   * so the handler never sees it. This interceptor wraps the call's sendStatus, recognises grpc-js's
   * own size refusals, and turns them into a relay refusal: logged, counted
   * (gitmesh_relay_rejections_total{reason="message_too_large"}) and answered with a status that names the
   * limit and the fix. The refusal stays where grpc-js makes it, so memory stays bounded by the limit.
   */
  const sizeGuard: grpc.ServerInterceptor = (method, call) => {
    const sendStatus = call.sendStatus.bind(call);
    call.sendStatus = (st) => {
      const details = st.details;
      if (st.code === grpc.status.RESOURCE_EXHAUSTED && /^Received message/.test(details)) {
        const size = /\((\d+) vs/.exec(details)?.[1];
        const err = new RelayRejectedError(
          REJECTION_REASONS.messageTooLarge,
          grpc.status.RESOURCE_EXHAUSTED,
          `a gRPC message${size === undefined ? "" : ` of ${size} bytes`} exceeds the relay's max message size of ${maxMessageBytes} bytes; lower the agent's chunk size (chunkBytes, default ${RELAY_DEFAULTS.chunkBytes} bytes, must stay below the limit) or raise the server's maxMessageBytes`,
        );
        const fields: RequestFields = { rpc: method.path, peer: call.getPeer() };
        const peer = call.getAuthContext().sslPeerCertificate;
        const id = peer ? clusterOfPeerCertificate(peer) : undefined;
        if (id) fields.cluster = id.cluster;
        options.refusals.refuse(err, fields, (se) => sendStatus({ code: se.code, details: se.details }));
        return;
      }
      if (st.code === grpc.status.RESOURCE_EXHAUSTED && /^Sent message larger/.test(details)) {
        log.error("relay tried to send a message above the max message size (chunking bug)", { rpc: method.path, details });
      }
      sendStatus(st);
    };
    return new grpc.ServerInterceptingCall(call);
  };

  function credentials(): grpc.ServerCredentials {
    const pki = options.pki;
    // Updates are delivered asynchronously: grpc-js registers its watcher only after adding the listeners.
    const provider: grpc.experimental.CertificateProvider = {
      addCaCertificateListener: (l) => queueMicrotask(() => l({ caCertificate: Buffer.from(pki.signingCaCertPem) })),
      removeCaCertificateListener: () => undefined,
      addIdentityCertificateListener: (l) => queueMicrotask(() => l({ certificate: Buffer.from(pki.serverCertPem), privateKey: Buffer.from(pki.serverKeyPem) })),
      removeIdentityCertificateListener: () => undefined,
    };
    return grpc.experimental.createCertificateProviderServerCredentials(provider, provider, false);
  }

  function newServer(): grpc.Server {
    const srv = new grpc.Server({
      "grpc.max_receive_message_length": maxMessageBytes,
      "grpc.max_send_message_length": maxMessageBytes,
      "grpc.keepalive_time_ms": options.keepaliveTimeMs ?? RELAY_DEFAULTS.keepaliveTimeMs,
      "grpc.keepalive_timeout_ms": options.keepaliveTimeoutMs ?? RELAY_DEFAULTS.keepaliveTimeoutMs,
      "grpc.keepalive_permit_without_calls": 1,
      // channelz (grpc-js's introspection service, which the relay does not serve) keeps a trace, call
      // counters and a registry entry per connection and per call: 2.2 KiB of heap per connected agent
      // (heap snapshots of 1,000 connected, with and without; #39).
      "grpc.enable_channelz": 0,
      interceptors: [sizeGuard],
    });
    // grpc-js looks each method up by name and answers UNIMPLEMENTED for one without a handler.
    const handlers = { ...options.handlers };
    srv.addService({ register: { ...RegistrationService.register, requestDeserialize: tolerant((b) => RegisterRequest.decode(b)) } }, handlers);
    srv.addService(
      {
        pushDiscovery: { ...RelayService.pushDiscovery, requestDeserialize: tolerant((b) => DiscoveryUpdate.decode(b)) },
        pullOutput: { ...RelayService.pullOutput, requestDeserialize: tolerant((b) => OutputAck.decode(b)) },
        renew: { ...RelayService.renew, requestDeserialize: tolerant((b) => RenewRequest.decode(b)) },
        signIntermediate: { ...RelayService.signIntermediate, requestDeserialize: tolerant((b) => SignIntermediateRequest.decode(b)) },
      },
      handlers,
    );
    return srv;
  }

  return {
    get port() {
      return boundPort;
    },
    get serving() {
      return server !== undefined;
    },
    async start() {
      if (server) throw new Error("relay server already started");
      const srv = newServer();
      const host = options.host ?? "0.0.0.0";
      boundPort = await new Promise<number>((resolve, rejectBind) => {
        srv.bindAsync(`${host}:${options.port ?? RELAY_DEFAULTS.port}`, credentials(), (err, port) => (err ? rejectBind(err) : resolve(port)));
      });
      server = srv;
      log.info("relay server listening", { host, port: boundPort, ...options.describe });
      return boundPort;
    },
    async stop() {
      const srv = server;
      if (!srv) return;
      server = undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          srv.forceShutdown();
          resolve();
        }, SHUTDOWN_GRACE_MS);
        srv.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      log.info("relay server stopped", { port: boundPort });
    },
  };
}
