/**
 * Which rendered HTTP routes of a VirtualService can never be used: Envoy (like Gloo) takes the
 * first route whose match fits, so a route every match of which an earlier route's match already
 * covers is unreachable. Gloo documents that order (a table's routes as written; delegated tables by
 * weight, then the order the parent lists them), so an unreachable route is the user's to fix, and it
 * is reported rather than reordered. Istio's own validation warns on the exact-duplicate and
 * no-match cases; this check also finds broader prefixes (`/` before `/api`).
 *
 * Coverage is decided conservatively (a route is only called unreachable when it certainly is):
 * an earlier match covers a later one when each condition it sets is set identically in the later
 * one, and its path condition is absent, equal, or a string prefix of the later path (Istio renders
 * a prefix as Envoy's string prefix, and its own validation warns on the same cases).
 */
import { asArray, asRecord } from "./selectors.js";

export interface Unreachable {
  /** Index of the route in `http`. */
  readonly index: number;
  /** Indexes of the route's matches that earlier routes cover (all of them when `whole`). */
  readonly matches: readonly number[];
  /** Whether no request can reach the route. */
  readonly whole: boolean;
  /** Index of the (first) earlier route that covers a match. */
  readonly by: number;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function uriCovers(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  if (typeof a.prefix === "string") {
    const p = a.prefix;
    const other = typeof b.prefix === "string" ? b.prefix : typeof b.exact === "string" ? b.exact : undefined;
    if (other === undefined) return p === "" || p === "/";
    // Istio renders a prefix as Envoy's string prefix: /graphql also matches /graphql-stitched.
    return other.startsWith(p);
  }
  return sameJson(a, b);
}

/** Whether every request `later` matches, `earlier` matches too (Istio HTTPMatchRequest objects). */
export function matchCovers(earlier: Record<string, unknown>, later: Record<string, unknown>): boolean {
  for (const [k, v] of Object.entries(earlier)) {
    if (k === "name" || k === "uri" || k === "ignoreUriCase") continue;
    if (!sameJson(v, later[k])) return false;
  }
  if (earlier.uri === undefined) return true;
  if (later.uri === undefined) return false;
  if ((earlier.ignoreUriCase === true) !== (later.ignoreUriCase === true)) {
    const p = asRecord(earlier.uri).prefix;
    if (!(p === "/" || p === "")) return false;
  }
  return uriCovers(asRecord(earlier.uri), asRecord(later.uri));
}

/** The routes (and matches) of `http` that earlier routes make unreachable, in order. */
export function unreachableRoutes(http: readonly Record<string, unknown>[]): Unreachable[] {
  const out: Unreachable[] = [];
  const seen: { readonly route: number; readonly match: Record<string, unknown> | undefined }[] = [];
  http.forEach((route, index) => {
    const matches = asArray(route.match).map(asRecord);
    const coverOf = (m: Record<string, unknown> | undefined) => seen.find((s) => s.match === undefined || (m !== undefined && matchCovers(s.match, m)));
    if (matches.length === 0) {
      const c = coverOf(undefined);
      if (c !== undefined) out.push({ index, matches: [], whole: true, by: c.route });
      seen.push({ route: index, match: undefined });
      return;
    }
    const covered: number[] = [];
    let by: number | undefined;
    matches.forEach((m, i) => {
      const c = coverOf(m);
      if (c !== undefined) {
        covered.push(i);
        by ??= c.route;
      }
    });
    if (by !== undefined) out.push({ index, matches: covered, whole: covered.length === matches.length, by });
    for (const m of matches) seen.push({ route: index, match: m });
  });
  return out;
}
