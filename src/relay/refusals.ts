/**
 * How the relay says no. Every refusal — of a registration, a stream or one message — is logged at warn
 * (`relay rejected a request`, never a credential), counted (gitmesh_relay_rejections_total{reason}), kept as
 * the cluster's last refusal (status: why a cluster is cut off) and answered with its gRPC status
 * (errors.ts, the one mapping). Any other error is logged as a failure and answered INTERNAL/UNAVAILABLE.
 *
 * Also here: the deserializer that never throws (a message that does not decode is refused as
 * `malformed_message`, with a message that says what to fix, instead of grpc-js's bare INTERNAL).
 */
import * as grpc from "@grpc/grpc-js";
import { describeError, type Logger } from "../core/index.js";
import { REJECTION_REASONS } from "./constants.js";
import { RelayBusyError, RelayRejectedError, toServiceError } from "./errors.js";
import type { RelayMetrics } from "./metrics.js";
import { WireError } from "./wire.js";

/** Log fields of one request: `rpc`, `peer`, and `cluster` once it is known. */
export type RequestFields = Record<string, unknown>;

/** A gRPC status as the relay answers it (code, details, reason trailer). */
export type ServiceStatus = ReturnType<typeof toServiceError>;

/** A refusal as status reports it. */
export interface Refusal {
  readonly reason: string;
  readonly message: string;
  readonly atMs: number;
}

/** Anything a stream can be ended on: grpc-js ends a server stream with the status of an emitted error. */
export interface EndableCall {
  emit(event: "error", err: unknown): boolean;
}

/** Ends a stream with a status (not logged: use Refusals.refuse for a refusal). */
export function endWithStatus(call: EndableCall, status: { code: number; details: string }): void {
  call.emit("error", status);
}

export interface RefusalsOptions {
  readonly logger: Logger;
  readonly metrics: Pick<RelayMetrics, "rejections">;
  /** Clock for the time of a refusal (default Date.now). */
  readonly now?: () => number;
}

export interface Refusals {
  /** Logs and counts a refusal (any other error: logs a failure) and answers it with its gRPC status. */
  readonly refuse: (err: unknown, fields: RequestFields, answer: (status: ServiceStatus) => void) => void;
  /** Ends a stream with a refusal (logged and counted like any other). */
  readonly endStream: (call: EndableCall, err: unknown, fields: RequestFields) => void;
  /** A unary handler: answers with what `work` resolves to, or with its refusal. */
  readonly unary: <Req, Res>(rpc: string, work: (call: grpc.ServerUnaryCall<Req, Res>, fields: RequestFields) => Promise<Res>) => grpc.handleUnaryCall<Req, Res>;
  /** The last refusal of each cluster's agent since its last accepted stream (Register refusals are not kept: the caller proved no identity). */
  readonly last: () => ReadonlyMap<string, Refusal>;
  /** A stream of the cluster was accepted: its earlier refusal no longer explains anything. */
  readonly forget: (cluster: string) => void;
}

export function createRefusals(options: RefusalsOptions): Refusals {
  const log = options.logger;
  const now = options.now ?? Date.now;
  const lastRefusal = new Map<string, Refusal>();

  const refuse: Refusals["refuse"] = (err, fields, answer) => {
    const se = toServiceError(err);
    if (err instanceof RelayBusyError) {
      // Expected in a reconnect storm: counted, not a refusal of the cluster (no warning, not its last refusal).
      options.metrics.rejections.inc({ reason: err.reason });
      log.debug("relay busy: agent told to come back later", { retryAfterMs: err.retryAfterMs, ...fields });
    } else if (err instanceof RelayRejectedError) {
      options.metrics.rejections.inc({ reason: err.reason });
      const cluster = fields.cluster;
      if (typeof cluster === "string" && fields.rpc !== "Register") lastRefusal.set(cluster, { reason: err.reason, message: err.message, atMs: now() });
      log.warn("relay rejected a request", { reason: err.reason, code: grpc.status[se.code], message: se.details, ...fields });
    } else {
      log.error("relay request failed", { error: describeError(err), ...fields });
    }
    answer(se);
  };

  return {
    refuse,
    endStream: (call, err, fields) => refuse(err, fields, (se) => endWithStatus(call, se)),
    unary: (rpc, work) => (call, callback) => {
      const fields: RequestFields = { rpc, peer: call.getPeer() };
      // Through a promise, so that a synchronous throw is refused like a rejection.
      Promise.resolve(fields)
        .then((f) => work(call, f))
        .then(
          (res) => callback(null, res),
          (err: unknown) => refuse(err, fields, (se) => callback(se)),
        );
    },
    last: () => lastRefusal,
    forget: (cluster) => void lastRefusal.delete(cluster),
  };
}

// ---- rejections shared by the parts -------------------------------------------------------------

/** A message that does not decode, or breaks the protocol's rules. */
export function malformedMessage(what: string, detail: string): RelayRejectedError {
  return new RelayRejectedError(
    REJECTION_REASONS.malformedMessage,
    grpc.status.INVALID_ARGUMENT,
    `could not decode a ${what} (${detail}); the agent must speak protocol gitmesh.relay.v1 — upgrade or reinstall the agent`,
  );
}

/** A chunk or update the wire decoder refused, as a rejection (too large, or malformed). */
export function wireRejection(err: unknown): unknown {
  if (!(err instanceof WireError)) return err;
  return err.kind === "too_large"
    ? new RelayRejectedError(REJECTION_REASONS.messageTooLarge, grpc.status.RESOURCE_EXHAUSTED, err.message)
    : new RelayRejectedError(REJECTION_REASONS.malformedMessage, grpc.status.INVALID_ARGUMENT, err.message);
}

/** Refuses a message naming a cluster other than the one of the caller's certificate ("" names none). */
export function checkNamedCluster(identity: string, named: string): void {
  if (named !== "" && named !== identity) {
    throw new RelayRejectedError(
      REJECTION_REASONS.clusterMismatch,
      grpc.status.PERMISSION_DENIED,
      `the message names cluster "${named}" but the client certificate is for cluster "${identity}"; an agent may only send data for its own cluster (check relay.cluster)`,
    );
  }
}

// ---- messages that do not decode ----------------------------------------------------------------

const MALFORMED = Symbol("malformed");
/** What a tolerant deserializer hands the handler instead of throwing. */
export interface Malformed {
  readonly [MALFORMED]: string;
}

/** A deserializer that never throws: grpc-js would answer INTERNAL; the handler refuses it with INVALID_ARGUMENT and a clear message. */
export function tolerant<T>(decode: (b: Buffer) => T): (b: Buffer) => T | Malformed {
  return (b) => {
    try {
      return decode(b);
    } catch (err) {
      return { [MALFORMED]: describeError(err) };
    }
  };
}

/** Refuses a message that did not decode (`what` names its type in the refusal). */
export function assertDecoded<T>(msg: T | Malformed, what: string): asserts msg is T {
  if (typeof msg === "object" && msg !== null && MALFORMED in msg) throw malformedMessage(what, msg[MALFORMED]);
}
