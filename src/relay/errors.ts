/**
 * Relay errors and their single mapping to gRPC status (CONVENTIONS §5): every rejection carries a
 * stable reason (the `reason` label of gitmesh_relay_rejections_total) and a message that tells the agent's
 * operator what to fix. Messages never contain secrets.
 */
import { status, type ServiceError, Metadata } from "@grpc/grpc-js";
import { GitmeshError, NeedsHumanError, Reaction, describeError } from "../core/index.js";
import type { RejectionReason } from "./constants.js";

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

/** The one place where errors become gRPC status. */
export function toServiceError(err: unknown): Partial<ServiceError> & { code: GrpcCode; details: string } {
  let code: GrpcCode;
  if (err instanceof RelayRejectedError) code = err.grpcCode;
  else if (err instanceof GitmeshError) code = err.reaction === Reaction.NeedsHuman ? status.FAILED_PRECONDITION : status.UNAVAILABLE;
  else code = status.INTERNAL;
  const details = code === status.INTERNAL ? `internal relay error: ${describeError(err)}` : err instanceof Error ? err.message : String(err);
  const metadata = new Metadata();
  // Machine-readable reason in the trailers: the client reacts to `certificate_revoked` by dropping its certificate.
  if (err instanceof RelayRejectedError) metadata.set(REASON_METADATA_KEY, err.reason);
  return { code, details, message: details, metadata, name: "RelayError" };
}

/** Trailer carrying a rejection's reason (REJECTION_REASONS value). */
export const REASON_METADATA_KEY = "gitmesh-relay-reason";

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
