/**
 * Gloo `HTTPRequestMatcher` → Istio `HTTPMatchRequest`, one small function per construct
 * (createUriMatch, createHeaderMatch, createQueryMatch), plus route specificity for sorting.
 * Errors are returned as values (`{ error }`) for the caller to turn into diagnostics.
 */
import { asArray, asNumber, asRecord, asString, type Labels } from "./selectors.js";

export type MatchResult = { readonly match: Record<string, unknown> } | { readonly error: string; readonly path: string };

/** `StringMatch{exact|prefix|regex|suffix, ignoreCase}` → Istio StringMatch (+ ignoreUriCase). */
export function createUriMatch(raw: unknown, path: string): { readonly uri: Record<string, string>; readonly ignoreCase: boolean } | { readonly error: string; readonly path: string } {
  const m = asRecord(raw);
  const ignoreCase = m.ignoreCase === true;
  const exact = asString(m.exact);
  const prefix = asString(m.prefix);
  const regex = asString(m.regex);
  const suffix = asString(m.suffix);
  const set = [exact, prefix, regex, suffix].filter((x) => x !== undefined).length;
  if (set !== 1) return { error: "a uri matcher needs exactly one of exact, prefix, regex or suffix", path };
  if (exact !== undefined) return { uri: { exact }, ignoreCase };
  if (prefix !== undefined) return { uri: { prefix }, ignoreCase };
  if (regex !== undefined) {
    const bad = regexError(regex);
    if (bad !== undefined) return { error: `invalid regex "${regex}": ${bad}`, path: `${path}/regex` };
    return { uri: { regex }, ignoreCase };
  }
  return { uri: { regex: `.*${escapeRegex(suffix!)}` }, ignoreCase };
}

/** Header matcher `{name, value, regex, invertMatch}`; a matcher without value tests presence. */
export function createHeaderMatch(raw: unknown, path: string): { readonly name: string; readonly match: Record<string, string>; readonly invert: boolean } | { readonly error: string; readonly path: string } {
  const h = asRecord(raw);
  const name = asString(h.name);
  if (name === undefined || name === "") return { error: "a header matcher needs a name", path: `${path}/name` };
  const value = asString(h.value);
  const invert = h.invertMatch === true;
  if (value === undefined) return { name: name.toLowerCase(), match: { regex: ".*" }, invert };
  if (h.regex === true) {
    const bad = regexError(value);
    if (bad !== undefined) return { error: `invalid regex "${value}": ${bad}`, path: `${path}/value` };
    return { name: name.toLowerCase(), match: { regex: value }, invert };
  }
  return { name: name.toLowerCase(), match: { exact: value }, invert };
}

/** Query parameter matcher `{name, value, regex}`. */
export function createQueryMatch(raw: unknown, path: string): { readonly name: string; readonly match: Record<string, string> } | { readonly error: string; readonly path: string } {
  const q = asRecord(raw);
  const name = asString(q.name);
  if (name === undefined || name === "") return { error: "a query parameter matcher needs a name", path: `${path}/name` };
  const value = asString(q.value);
  if (value === undefined) return { name, match: { regex: ".*" } };
  if (q.regex === true) {
    const bad = regexError(value);
    if (bad !== undefined) return { error: `invalid regex "${value}": ${bad}`, path: `${path}/value` };
    return { name, match: { regex: value } };
  }
  return { name, match: { exact: value } };
}

/** One Gloo matcher (+ optional source labels) → one Istio HTTPMatchRequest. */
export function createMatch(raw: unknown, path: string, sourceLabels: Labels | undefined): MatchResult {
  const m = asRecord(raw);
  let uri: { uri: unknown; ignoreCase: boolean } | undefined;
  if (m.uri !== undefined) {
    const u = createUriMatch(m.uri, `${path}/uri`);
    if ("error" in u) return u;
    uri = u;
  }
  const headers: Record<string, unknown> = {};
  const without: Record<string, unknown> = {};
  for (const [i, h] of asArray(m.headers).entries()) {
    const r = createHeaderMatch(h, `${path}/headers/${i}`);
    if ("error" in r) return r;
    (r.invert ? without : headers)[r.name] = r.match;
  }
  const query: Record<string, unknown> = {};
  for (const [i, q] of asArray(m.queryParameters).entries()) {
    const r = createQueryMatch(q, `${path}/queryParameters/${i}`);
    if ("error" in r) return r;
    query[r.name] = r.match;
  }
  // Fields set in canonical (code-unit) key order, so the output's canonical form is this object (no copy).
  const out: Record<string, unknown> = {};
  if (Object.keys(headers).length > 0) out.headers = headers;
  if (uri?.ignoreCase === true) out.ignoreUriCase = true;
  const method = asString(m.method);
  if (method !== undefined) out.method = { exact: method.toUpperCase() };
  const name = asString(m.name);
  if (name !== undefined) out.name = name;
  const port = asNumber(m.port);
  if (port !== undefined) out.port = port;
  if (Object.keys(query).length > 0) out.queryParams = query;
  if (sourceLabels !== undefined && Object.keys(sourceLabels).length > 0) out.sourceLabels = sourceLabels;
  if (uri !== undefined) out.uri = uri.uri;
  if (Object.keys(without).length > 0) out.withoutHeaders = without;
  return { match: out };
}

/**
 * All matches of a route: the cross product of its matchers and the source-label sets (east-west
 * `workloadSelectors`). No matchers and no source labels ⇒ `undefined` (matches everything).
 */
export function createMatches(matchers: readonly unknown[], path: string, sourceLabelSets: readonly Labels[]): { readonly matches: Record<string, unknown>[] | undefined } | { readonly error: string; readonly path: string } {
  const sources = sourceLabelSets.length === 0 ? [undefined] : sourceLabelSets;
  const ms = matchers.length === 0 ? [{}] : matchers;
  const out: Record<string, unknown>[] = [];
  for (const [i, m] of ms.entries()) {
    for (const s of sources) {
      const r = createMatch(m, `${path}/${i}`, s);
      if ("error" in r) return r;
      out.push(r.match);
    }
  }
  const nonEmpty = out.filter((m) => Object.keys(m).length > 0);
  return { matches: nonEmpty.length === 0 ? undefined : out };
}

/**
 * Specificity of a route for `ROUTE_SPECIFICITY` sorting: exact path > regex > prefix > none;
 * for exact and prefix, longer paths first. Only the most specific matcher of a route counts.
 */
export function routeSpecificity(matchers: readonly unknown[]): readonly [number, number] {
  let best: readonly [number, number] = [0, 0];
  for (const raw of matchers) {
    const uri = asRecord(asRecord(raw).uri);
    const exact = asString(uri.exact);
    const prefix = asString(uri.prefix);
    const cand: readonly [number, number] =
      exact !== undefined ? [3, exact.length] : asString(uri.regex) !== undefined || asString(uri.suffix) !== undefined ? [2, 0] : prefix !== undefined ? [1, prefix.length] : [0, 0];
    if (cand[0] > best[0] || (cand[0] === best[0] && cand[1] > best[1])) best = cand;
  }
  return best;
}

const RE2 = "Istio (like Gloo's Envoy) takes RE2 syntax, https://github.com/google/re2/wiki/Syntax";
/** Letters RE2 (Go's regexp, which Istio's webhook compiles with) accepts after a backslash. */
const RE2_ESCAPES = new Set("afnrtvxdDsSwWpPAzbBQE");

/**
 * Why `re` is not an RE2 regex, or undefined. RE2 has no lookaround, no backreferences and no escapes
 * of other letters, all of which JavaScript takes; it has flag groups (`(?i)`, `(?s:…)`) and
 * `(?P<name>…)`, which JavaScript (Node 20) refuses. Those are checked here, and the rest, with the
 * RE2-only constructs rewritten to their JavaScript equivalents, by JavaScript's parser.
 */
export function regexError(re: string): string | undefined {
  let js = "";
  let inClass = false;
  for (let i = 0; i < re.length; i++) {
    const c = re[i]!;
    if (c === "\\") {
      const n = re[i + 1] ?? "";
      if (/[1-9]/.test(n) && !/[0-9]/.test(re[i + 2] ?? "")) return `backreferences (\\${n}) are not supported; ${RE2}`;
      if (/[A-Za-z]/.test(n) && !RE2_ESCAPES.has(n)) return `\\${n} is not an escape sequence; ${RE2}`;
      js += c + n;
      i++;
      continue;
    }
    if (inClass || c === "[") {
      // A class: `]` first (after `[` or `[^`) is a literal, as in both syntaxes.
      if (!inClass) {
        inClass = true;
        const first = re[i + 1] === "^" ? 2 : 1;
        if (re[i + first] === "]") {
          js += re.slice(i, i + first + 1);
          i += first;
          continue;
        }
      } else if (c === "]") inClass = false;
      js += c;
      continue;
    }
    if (c === "(" && re[i + 1] === "?") {
      const rest = re.slice(i + 2);
      if (/^(=|!|<=|<!)/.test(rest)) return `lookahead and lookbehind are not supported; ${RE2}`;
      const flags = /^[imsU]*(-[imsU]*)?(?=[):])/.exec(rest)?.[0];
      if (flags !== undefined && flags !== "" && flags !== "-") {
        // (?i) applies to what follows: JavaScript has no equivalent, and the syntax is all that is checked.
        if (rest[flags.length] === ")") i += 2 + flags.length;
        else {
          js += "(?:";
          i += 2 + flags.length;
        }
        continue;
      }
      if (rest.startsWith("P<")) {
        js += "(?<";
        i += 3;
        continue;
      }
    }
    js += c;
  }
  try {
    new RegExp(js);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : "invalid";
  }
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
