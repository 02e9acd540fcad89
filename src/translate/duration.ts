/**
 * Durations as Istio's validation takes them. Gloo's Duration is Go syntax (`1m30s`, `500us`, `0`);
 * Istio's webhook (ValidateDuration in pkg/config/validation/agent) rejects, on the fields that use
 * it (route timeouts, per-try timeouts, fault delays, outlier detection, connection pool timeouts and
 * keepalives), anything under 1ms or not in whole milliseconds. Pure.
 */

const UNIT_NS: Readonly<Record<string, number>> = { ns: 1, us: 1e3, "µs": 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };
const PART = /(\d+)(?:\.(\d+))?(ns|us|µs|ms|s|m|h)/y;

/** Nanoseconds of a Go duration without sign (`0`, `1h2m3.5s`); undefined when it is not one. */
export function durationNanos(d: string): number | undefined {
  if (d === "0") return 0;
  if (d === "") return undefined;
  let ns = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < d.length) {
    const at = PART.lastIndex;
    const m = PART.exec(d);
    if (m === null || m.index !== at) return undefined;
    const unit = UNIT_NS[m[3]!]!;
    // Whole and fraction apart, as Go does: "0.1s" is 100000000 ns exactly.
    ns += Number(m[1]) * unit + (m[2] === undefined ? 0 : Math.floor(Number(`0.${m[2]}`) * unit + 1e-6));
  }
  return ns;
}

/** Why Istio rejects `d` as a duration, or undefined when it accepts it. */
export function istioDurationProblem(d: string): string | undefined {
  const ns = durationNanos(d);
  if (ns === undefined) return `${JSON.stringify(d)} is not a duration; write it like "10s", "500ms" or "1m"`;
  if (ns < 1e6) return `Istio takes durations of at least 1ms, and ${JSON.stringify(d)} is less`;
  if (ns % 1e6 !== 0) return `Istio takes durations in whole milliseconds, and ${JSON.stringify(d)} is finer`;
  return undefined;
}
