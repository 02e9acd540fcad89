/**
 * How an API failure reads in the outcome: transient (retried within the delivery and still
 * failing: 429, 5xx, timeouts, resets; or leadership lost) or needing a person (everything else),
 * and the answers that mean a kind's CRD is not installed.
 */
import { messageOf, statusOf } from "../kube.js";
import { isTransient } from "../transient.js";
import type { ResourceError } from "./types.js";

/** Thrown when a write is attempted after leadership was lost. */
export class NotLeaderError extends Error {
  readonly code = "NotLeaderError";
  constructor() {
    super("this replica is no longer the leader: it stopped applying");
  }
}

/** Whether retrying later is expected to succeed without anyone acting. */
export function isTransientFailure(err: unknown): boolean {
  return err instanceof NotLeaderError || isTransient(err);
}

/** A per-resource error; `transient` set when `err` is a transient failure. */
export function resourceError(key: string, message: string, err?: unknown): ResourceError {
  return err !== undefined && isTransientFailure(err) ? { key, message, transient: true } : { key, message };
}

/**
 * Whether a request failed because the API server does not serve the kind (its CRD is not
 * installed): a 404 on the kind's collection, or discovery that does not list the kind (client-node:
 * "Unrecognized API version and kind").
 */
export function isKindNotServed(err: unknown): boolean {
  return /Unrecognized API version and kind/.test(messageOf(err)) || (statusOf(err) === 404 && /Failed to fetch resource metadata/.test(messageOf(err)));
}

/**
 * Whether a write that named the live object's uid met another object (deleted and recreated since).
 * A real API server answers a server-side apply (a PATCH: no storage precondition) whose body names
 * another uid with 422 "metadata.uid: Invalid value: …: field is immutable"; an Update, and the
 * emulator, with 409 "Precondition failed: UID in precondition".
 */
export function uidMismatch(err: unknown): boolean {
  const status = statusOf(err);
  const message = messageOf(err);
  return (status === 409 && /UID in precondition/.test(message)) || (status === 422 && /metadata\.uid: Invalid value: .*field is immutable/.test(message));
}

/**
 * Whether a write that named the live object's uid found no object: a real API server answers a
 * server-side apply with a uid for an object that no longer exists with 409 "uid mismatch: the
 * provided object specified uid …, and no existing object was found" (it never creates it).
 */
export function deletedSinceListed(err: unknown): boolean {
  return statusOf(err) === 409 && /uid mismatch: the provided object specified uid .*no existing object was found/.test(messageOf(err));
}

/** The message for an object whose kind's CRD is not installed. */
export function notInstalledMessage(what: string, crd: string): string {
  return `${what}: ${crd} is not installed in this cluster (its CustomResourceDefinition is missing), so it was not applied; every other kind was applied and pruned. Install the CRD (e.g. Istio's CRDs); gitmesh applies it at the next delivery or resync`;
}
