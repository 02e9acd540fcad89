/**
 * Errors say how to react (CONVENTIONS §5). Exceptions are for bugs and infrastructure failures;
 * user mistakes are Diagnostics. Every error class has a stable `code` equal to its class name and
 * belongs to one of three reactions, which each edge maps once (gRPC status, BullMQ
 * unrecoverable/delayed, agent condition, HTTP status).
 */

export const Reaction = {
  /** Retrying cannot help; a person must change something (bad credentials, invalid config). */
  NeedsHuman: "needs-human",
  /** Expected to resolve by itself after a known delay (not warmed yet, lock held elsewhere). */
  RetryLater: "retry-later",
  /** Probably transient (network, Redis blip): retry with backoff. */
  Transient: "transient",
} as const;
export type Reaction = (typeof Reaction)[keyof typeof Reaction];

export interface GitmeshErrorOptions {
  readonly cause?: unknown;
}

export abstract class GitmeshError extends Error {
  abstract readonly reaction: Reaction;
  readonly code: string;

  constructor(message: string, options: GitmeshErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = new.target.name;
  }
}

export class NeedsHumanError extends GitmeshError {
  readonly reaction = Reaction.NeedsHuman;
}

export class RetryLaterError extends GitmeshError {
  readonly reaction = Reaction.RetryLater;
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number, options: GitmeshErrorOptions = {}) {
    super(message, options);
    this.retryAfterMs = retryAfterMs;
  }
}

export class TransientError extends GitmeshError {
  readonly reaction = Reaction.Transient;
}

/** How to react to any thrown value: unknown errors are treated as transient. */
export function reactionOf(err: unknown): Reaction {
  return err instanceof GitmeshError ? err.reaction : Reaction.Transient;
}

/** A readable one-line message for any thrown value, including its cause chain. */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  let cur: unknown = err;
  for (let depth = 0; cur !== undefined && cur !== null && depth < 5; depth++) {
    if (cur instanceof Error) {
      parts.push(cur.message);
      cur = cur.cause;
    } else {
      parts.push(typeof cur === "string" ? cur : JSON.stringify(cur));
      break;
    }
  }
  return parts.join(": ");
}
