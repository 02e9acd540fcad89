/**
 * Admission of (re)connecting agents at a bounded rate (#35 item 1): a token bucket in front of the
 * two expensive things an agent asks for when it (re)connects, a registration and a discovery push
 * stream (its full snapshot follows). A thousand agents reconnecting at once cannot starve the
 * server's own work (its leader lease among it): the excess is answered RESOURCE_EXHAUSTED with a
 * retry hint in the trailer `gitmesh-retry-after-ms`, long enough for everyone waiting to be
 * admitted at the rate; the client waits that long, spread with jitter (client.ts).
 *
 * State: the bucket, and the clusters refused recently (bounded) that size the hint.
 */
import { RELAY_DEFAULTS } from "./constants.js";
import { RelayBusyError } from "./errors.js";

export interface AdmissionOptions {
  /** Admissions per second, sustained (default 50). 0 or less: no limit. */
  readonly ratePerSecond?: number;
  /** Admissions allowed at once after a quiet spell (default 100, at least 1). */
  readonly burst?: number;
  /** Clock (default Date.now). */
  readonly now?: () => number;
}

export interface Admission {
  /** Admits `cluster` now, or throws RelayBusyError with the delay after which to come back. */
  admit(cluster: string): void;
}

/** How long a refused cluster counts as waiting (it normally comes back within its hint). */
const WAITING_FOR_MS = 60_000;
/** Most refused clusters remembered (registration names are not verified: bounded). */
const WAITING_MAX = 20_000;

export function createAdmission(options: AdmissionOptions = {}): Admission {
  const rate = options.ratePerSecond ?? RELAY_DEFAULTS.admission.ratePerSecond;
  const burst = Math.max(1, options.burst ?? RELAY_DEFAULTS.admission.burst);
  const now = options.now ?? Date.now;
  if (!(rate > 0)) return { admit: () => undefined };
  let tokens = burst;
  let refilledAt = now();
  /** Cluster → when it was last refused (insertion order = oldest first). */
  const waiting = new Map<string, number>();

  const refill = (t: number) => {
    tokens = Math.min(burst, tokens + ((t - refilledAt) * rate) / 1000);
    refilledAt = t;
  };
  const forgetOld = (t: number) => {
    for (const [c, at] of waiting) {
      if (t - at <= WAITING_FOR_MS && waiting.size <= WAITING_MAX) break;
      waiting.delete(c);
    }
  };

  return {
    admit(cluster) {
      const t = now();
      refill(t);
      if (tokens >= 1) {
        tokens -= 1;
        waiting.delete(cluster);
        return;
      }
      waiting.delete(cluster);
      waiting.set(cluster, t);
      forgetOld(t);
      // Time for the next token, plus time to admit everyone waiting at the rate.
      const retryAfterMs = Math.ceil(((1 - tokens) * 1000) / rate + (waiting.size * 1000) / rate);
      throw new RelayBusyError(`the relay server admits ${String(rate)} (re)connecting agents per second and is busy; the agent retries in about ${String(retryAfterMs)} ms`, retryAfterMs);
    },
  };
}
