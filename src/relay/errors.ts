/**
 * Relay errors and their single mapping to gRPC status (CONVENTIONS §5): every rejection carries a
 * stable reason (the `reason` label of gitmesh_relay_rejections_total) and a message that tells the agent's
 * operator what to fix. Messages never contain secrets.
 */
import { status, type ServiceError, Metadata } from "@grpc/grpc-js";
import { GitmeshError, NeedsHumanError, Reaction, RetryLaterError, describeError } from "../core/index.js";
import { REJECTION_REASONS, type RejectionReason } from "./constants.js";

export type GrpcCode = status;

/** A request, stream or message the relay refused. Needs a human (the agent's operator). */
export class RelayRejectedError extends NeedsHumanError {
  constructor(
    readonly reason: RejectionReason,
    readonly grpcCode: GrpcCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The server admits (re)connecting agents at a bounded rate and this one must wait (admission.ts):
 * RESOURCE_EXHAUSTED with the delay in the trailer `gitmesh-retry-after-ms`. Not the agent's fault.
 */
export class RelayBusyError extends RetryLaterError {
  readonly reason = REJECTION_REASONS.admissionLimited;
  readonly grpcCode = status.RESOURCE_EXHAUSTED;
}

/** The one place where errors become gRPC status. */
export function toServiceError(err: unknown): Partial<ServiceError> & { code: GrpcCode; details: string } {
  let code: GrpcCode;
  if (err instanceof RelayRejectedError || err instanceof RelayBusyError) code = err.grpcCode;
  else if (err instanceof GitmeshError) code = err.reaction === Reaction.NeedsHuman ? status.FAILED_PRECONDITION : status.UNAVAILABLE;
  else code = status.INTERNAL;
  const details = code === status.INTERNAL ? `internal relay error: ${describeError(err)}` : err instanceof Error ? err.message : String(err);
  const metadata = new Metadata();
  // Machine-readable reason in the trailers: the client reacts to `certificate_revoked` by dropping its certificate.
  if (err instanceof RelayRejectedError || err instanceof RelayBusyError) metadata.set(REASON_METADATA_KEY, err.reason);
  if (err instanceof RelayBusyError) metadata.set(RETRY_AFTER_METADATA_KEY, String(err.retryAfterMs));
  return { code, details, message: details, metadata, name: "RelayError" };
}

/** Trailer carrying a rejection's reason (REJECTION_REASONS value). */
export const REASON_METADATA_KEY = "gitmesh-relay-reason";

/** Trailer carrying how long a busy server asks the agent to wait (ms). */
export const RETRY_AFTER_METADATA_KEY = "gitmesh-retry-after-ms";

/** The wait a busy server asked for (RESOURCE_EXHAUSTED with `gitmesh-retry-after-ms`), if any. */
export function retryAfterOf(err: unknown): number | undefined {
  const md = (err as { metadata?: unknown } | undefined)?.metadata;
  if (!(md instanceof Metadata)) return undefined;
  const ms = Number(md.get(RETRY_AFTER_METADATA_KEY)[0]);
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, 10 * 60_000) : undefined;
}

/** The rejection reason a status carries in its trailers, if any. */
export function reasonOf(err: unknown): string | undefined {
  const md = (err as { metadata?: unknown } | undefined)?.metadata;
  if (!(md instanceof Metadata)) return undefined;
  const v = md.get(REASON_METADATA_KEY)[0];
  return typeof v === "string" ? v : undefined;
}

/** gRPC status codes after which retrying with the same credentials cannot succeed. */
const PERMANENT: ReadonlySet<number> = new Set([status.UNAUTHENTICATED, status.PERMISSION_DENIED, status.INVALID_ARGUMENT, status.FAILED_PRECONDITION]);
export function isPermanentStatus(code: number): boolean {
  return PERMANENT.has(code);
}
