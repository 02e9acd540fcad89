/**
 * Kubernetes `Status` objects, as the real API server returns them for failures, and the error
 * class the request handlers throw to produce one.
 */

export const StatusReason = {
  NotFound: "NotFound",
  AlreadyExists: "AlreadyExists",
  Conflict: "Conflict",
  Invalid: "Invalid",
  BadRequest: "BadRequest",
  /** What the real server uses for a too-old resourceVersion (HTTP 410). */
  Expired: "Expired",
  Gone: "Gone",
  MethodNotAllowed: "MethodNotAllowed",
  UnsupportedMediaType: "UnsupportedMediaType",
  InternalError: "InternalError",
  Timeout: "Timeout",
  NotAcceptable: "NotAcceptable",
  Forbidden: "Forbidden",
  Unauthorized: "Unauthorized",
  /** No reason: an error the server did not classify (a plain Go error answered as 500, e.g. a typed-patch failure); the Status has no `reason`. */
  Unknown: "",
} as const;
export type StatusReason = (typeof StatusReason)[keyof typeof StatusReason];

export interface StatusCause {
  readonly reason: string;
  readonly message: string;
  readonly field?: string;
}

export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly causes?: readonly StatusCause[];
  readonly retryAfterSeconds?: number;
}

export interface KubeStatus {
  readonly kind: "Status";
  readonly apiVersion: "v1";
  readonly metadata: Record<string, never>;
  readonly status: "Failure" | "Success";
  readonly message: string;
  readonly reason?: string;
  readonly details?: StatusDetails;
  readonly code: number;
}

/** Thrown inside the emulator's handlers; the HTTP layer turns it into a Status response. */
export class KubeApiError extends Error {
  readonly code = "KubeApiError";
  constructor(
    readonly status: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  toStatus(): KubeStatus {
    return failureStatus(this.status, this.reason, this.message, this.details);
  }
}

export function failureStatus(code: number, reason: string, message: string, details?: StatusDetails): KubeStatus {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    ...(reason === "" ? {} : { reason }),
    ...(details === undefined ? {} : { details }),
    code,
  };
}

/** `<plural>.<group>` as the real server names a resource in messages (`deployments.apps`). */
export function qualifiedResource(plural: string, group: string): string {
  return group === "" ? plural : `${plural}.${group}`;
}

export function notFound(plural: string, group: string, name: string): KubeApiError {
  return new KubeApiError(404, StatusReason.NotFound, `${qualifiedResource(plural, group)} "${name}" not found`, {
    name,
    ...(group === "" ? {} : { group }),
    kind: plural,
  });
}

export function alreadyExists(plural: string, group: string, name: string): KubeApiError {
  return new KubeApiError(409, StatusReason.AlreadyExists, `${qualifiedResource(plural, group)} "${name}" already exists`, {
    name,
    ...(group === "" ? {} : { group }),
    kind: plural,
  });
}

export function staleConflict(plural: string, group: string, name: string): KubeApiError {
  return new KubeApiError(
    409,
    StatusReason.Conflict,
    `Operation cannot be fulfilled on ${qualifiedResource(plural, group)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, ...(group === "" ? {} : { group }), kind: plural },
  );
}

export function invalid(kind: string, group: string, name: string, causes: readonly StatusCause[]): KubeApiError {
  // errs.ToAggregate(): identical messages once, several in brackets.
  const messages = [...new Set(causes.map((c) => (c.field === undefined ? c.message : `${c.field}: ${c.message}`)))];
  const what = messages.length === 1 ? messages[0]! : `[${messages.join(", ")}]`;
  return new KubeApiError(422, StatusReason.Invalid, `${kind}${group === "" ? "" : `.${group}`} "${name}" is invalid: ${what}`, {
    name,
    ...(group === "" ? {} : { group }),
    kind,
    causes,
  });
}

export function badRequest(message: string): KubeApiError {
  return new KubeApiError(400, StatusReason.BadRequest, message);
}

export function gone(message: string): KubeApiError {
  return new KubeApiError(410, StatusReason.Expired, message);
}
