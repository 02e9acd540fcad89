/**
 * Agent side of Relay.SignIntermediate: the IntermediateSigner that `createAgent({ signer })` uses
 * (src/agent/cacerts.ts) to get its Istio intermediate CA CSRs signed by the management server's mesh
 * root CA over the relay's mTLS channel.
 *
 * The signer contract (IntermediateSigner and its request/answer types) lives in src/pki, which the
 * agent, the relay and the mesh CA share. Only the CSR travels; the intermediate key stays in the cluster.
 * Each call opens its own short-lived mTLS channel with the cluster's current client certificate
 * (read through `credentials()`, e.g. from relay-client-tls-secret), since signing is rare (once per
 * mesh per certificate lifetime) and the certificate may have been renewed since the last call.
 */
import * as grpc from "@grpc/grpc-js";
import { GitmeshError, NeedsHumanError, Reaction, TransientError, type Logger } from "../core/index.js";
import { RELAY_DEFAULTS } from "./constants.js";
import { isPermanentStatus } from "./errors.js";
import { RelayClient as GrpcRelayClient, type SignIntermediateRequest, type SignIntermediateResponse } from "./gen/gitmesh/relay/v1/relay.js";
import type { IntermediateSigner } from "../pki/index.js";
import type { RelayClientCredentials } from "./client.js";

export interface RelayIntermediateSignerOptions {
  /** host:port of the relay server (Helm relay.serverAddress). */
  readonly address: string;
  /** TLS server name / :authority (default `gitmesh-server.gitmesh`). */
  readonly authority?: string;
  /**
   * The cluster's current client certificate (relay-client-tls-secret), read on every call; undefined
   * while the agent has not registered yet (the call then fails and the agent retries on the next output).
   */
  readonly credentials: () => RelayClientCredentials | undefined | Promise<RelayClientCredentials | undefined>;
  /** Root CA the server is verified against (default: the credentials' caPem). */
  readonly rootCaPem?: string;
  /** Deadline of one SignIntermediate call (default 30 s). */
  readonly timeoutMs?: number;
  readonly maxMessageBytes?: number;
  readonly logger: Logger;
}

/** The server refused or failed to sign; `grpcCode` is the relay's status (see src/relay/README.md). */
export class IntermediateSigningError extends GitmeshError {
  readonly reaction: Reaction;
  constructor(
    readonly grpcCode: grpc.status,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
    this.reaction = isPermanentStatus(grpcCode) || grpcCode === grpc.status.UNIMPLEMENTED ? Reaction.NeedsHuman : Reaction.Transient;
  }
}

export function createRelayIntermediateSigner(options: RelayIntermediateSignerOptions): IntermediateSigner {
  const log = options.logger;
  const authority = options.authority ?? RELAY_DEFAULTS.authority;
  const maxMessageBytes = options.maxMessageBytes ?? RELAY_DEFAULTS.maxMessageBytes;
  const timeoutMs = options.timeoutMs ?? 30_000;
  return {
    async signIntermediate(request) {
      const c = await options.credentials();
      if (!c) {
        throw new TransientError("cannot have the intermediate CA signed yet: the agent has no relay client certificate (it registers first; retried with the next output)");
      }
      const rootCaPem = options.rootCaPem ?? c.caPem;
      if (!rootCaPem) throw new NeedsHumanError("cannot reach the relay to sign the intermediate CA: no root CA to verify the server (relay-root-tls-secret ca.crt)");
      const client = new GrpcRelayClient(options.address, grpc.credentials.createSsl(Buffer.from(rootCaPem), Buffer.from(c.keyPem), Buffer.from(c.certPem)), {
        "grpc.ssl_target_name_override": authority,
        "grpc.default_authority": authority,
        "grpc.max_receive_message_length": maxMessageBytes,
        "grpc.max_send_message_length": maxMessageBytes,
        "grpc.enable_retries": 0,
      });
      const message: SignIntermediateRequest = {
        cluster: request.cluster,
        csrPem: request.csrPem,
        issuedCertificate: request.issuedCertificate ?? "",
        rootTrustPolicy: request.rootTrustPolicy === "/" ? "" : request.rootTrustPolicy,
      };
      try {
        const res = await new Promise<SignIntermediateResponse>((resolve, reject) => {
          client.signIntermediate(message, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err, r) => (err ? reject(err) : resolve(r)));
        });
        log.info("intermediate CA signed by the management server", { cluster: request.cluster, hosts: request.hosts, notAfter: new Date(res.notAfterMs).toISOString() });
        return { certPem: res.certificatePem, chainPems: res.chainPem, rootCertPem: res.rootCertPem };
      } catch (err) {
        const se = err as Partial<grpc.ServiceError>;
        if (typeof se.code !== "number") throw err;
        const details = se.details ?? "";
        throw new IntermediateSigningError(se.code, `the relay server did not sign the intermediate CA (${grpc.status[se.code]}): ${details}`, { cause: err });
      } finally {
        client.close();
      }
    },
  };
}
