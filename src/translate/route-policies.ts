/**
 * Route policies → fields of the Istio HTTP route: RetryTimeoutPolicy (timeout, retries),
 * FaultInjectionPolicy (fault), CORSPolicy (corsPolicy), HeaderManipulationPolicy (headers),
 * MirrorPolicy (mirror, mirrorPercentage).
 *
 * Selection: `applyToRoutes[].route{labels, namespace, cluster, workspace}` — labels match the
 * route's labels or its route table's labels; an empty `applyToRoutes` selects every route of the
 * workspace. Policies apply to routes of route tables owned by the policy's workspace. Two
 * policies of one kind on one route: the oldest (creationTimestamp, then namespace/name) wins and
 * the other gets POLICY_CONFLICT. A policy that selects no route gets SELECTS_NOTHING.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { reportUnsupported, workspaceContext, type WorkspaceContext } from "./context.js";
import type { FlatRoute } from "./delegation.js";
import { durationNanos, istioDurationProblem } from "./duration.js";
import type { InputObject } from "./input.js";
import { objectSelector, serviceIndex } from "./destination-common.js";
import { regexError } from "./route-matchers.js";
import { dottedField, unreadKeys, type ReadTree } from "./read-keys.js";
import { asArray, asLabels, asNumber, asRecord, asString, globMatch, labelsMatch, objectSelectorMatches } from "./selectors.js";
import { TranslateCode, type TranslatorOutput } from "./types.js";

export const ROUTE_POLICY_KINDS = ["RetryTimeoutPolicy", "FaultInjectionPolicy", "CORSPolicy", "HeaderManipulationPolicy", "MirrorPolicy"] as const;
export type RoutePolicyKind = (typeof ROUTE_POLICY_KINDS)[number];

/** Resolves a Gloo DestinationReference to `{host, port}` for mirror targets; provided by route-table.ts. */
export type DestinationResolver = (ref: unknown, path: string, policy: InputObject) => { readonly host: string; readonly port?: number } | { readonly error: string; readonly path: string; readonly code: string };

/**
 * The `config` keys each route policy's translation reads (read-keys.ts): every other set key is
 * reported at its path, so a field the schema gains later is reported until it is translated.
 */
const CONFIG_READS: Readonly<Record<RoutePolicyKind, ReadTree>> = {
  RetryTimeoutPolicy: { requestTimeout: true, retries: { attempts: true, perTryTimeout: true, retryOn: true, retryRemoteLocalities: true } },
  FaultInjectionPolicy: { delay: { fixedDelay: true, percentage: true }, abort: { httpStatus: true, percentage: true } },
  CORSPolicy: { allowOrigins: { exact: true, prefix: true, suffix: true, regex: true, ignoreCase: true }, allowMethods: true, allowHeaders: true, exposeHeaders: true, maxAge: true, allowCredentials: true },
  HeaderManipulationPolicy: { appendRequestHeaders: true, appendResponseHeaders: true, removeRequestHeaders: true, removeResponseHeaders: true },
  MirrorPolicy: {
    destination: {
      ref: true,
      kind: true,
      port: true,
      // resolveDestination: NEEDS_GLOO_DATA_PLANE
      awsLambda: true,
      function: true,
      subset: "a mirror to a subset is not translated: the mirrored requests go to every endpoint of the destination",
      weight: "weight has no meaning for a mirror (one destination); it is ignored",
    },
    percentage: true,
  },
};

/** Whether a policy selects a route (by route labels or table labels, or by the destinations it forwards to). */
export function policySelects(ctx: WorkspaceContext, policy: InputObject, route: Pick<FlatRoute, "table" | "labels" | "route">): boolean {
  const spec = asRecord(policy.spec);
  const sels = asArray(spec.applyToRoutes);
  // "If no selectors are provided, will apply to all routes": applyToRouteDestinations is a selector
  // (not translated, reported), so a policy with only that one applies nowhere, not everywhere.
  if (sels.length === 0) return asArray(spec.applyToRouteDestinations).length === 0;
  const t = route.table;
  return sels.some((raw) => {
    const s = asRecord(raw);
    if (s.withDestinations !== undefined) return forwardsTo(ctx, route, asRecord(s.withDestinations));
    if (s.route === undefined) return false;
    const r = asRecord(s.route);
    const labels = asLabels(r.labels);
    return (
      (labelsMatch(labels, route.labels) || labelsMatch(labels, t.metadata.labels)) &&
      globMatch(asString(r.namespace), t.metadata.namespace ?? ctx.index.adminNamespace) &&
      (asString(r.cluster) === undefined || t.cluster === undefined || globMatch(asString(r.cluster), t.cluster)) &&
      globMatch(asString(r.workspace), ctx.ownerOf(t))
    );
  });
}

/**
 * RouteSelector `withDestinations` (common/v2 selectors.proto): the route forwards to a destination the
 * DestinationSelector matches — its kind (default SERVICE), and the selector's name, namespace (a
 * ref without one is in the route table's namespace), cluster, workspace and labels (a Service's
 * labels as discovered in any cluster; a VirtualDestination's or ExternalService's own), and its
 * port: the destination's port number or name, or the one port of a Service given without one.
 */
function forwardsTo(ctx: WorkspaceContext, route: Pick<FlatRoute, "table" | "route">, sel: Record<string, unknown>): boolean {
  const kind = asString(sel.kind) ?? "SERVICE";
  const spec = objectSelector(sel.selector);
  const tableNs = route.table.metadata.namespace ?? ctx.index.adminNamespace;
  const portSel = asRecord(sel.port);
  const wantPort = asNumber(portSel.number) !== undefined || asString(portSel.name) !== undefined ? portSel : undefined;
  return asArray(asRecord(route.route.forwardTo).destinations).some((raw) => {
    const d = asRecord(raw);
    if ((asString(d.kind) ?? "SERVICE") !== kind) return false;
    const ref = asRecord(d.ref);
    const name = asString(ref.name);
    if (name === undefined) return false;
    const namespace = asString(ref.namespace) ?? tableNs;
    const cluster = asString(ref.cluster) ?? "";
    if (kind === "SERVICE") {
      const found = (serviceIndex(ctx.index).byNamespace.get(namespace) ?? []).filter((r) => r.service.name === name && (cluster === "" || r.cluster === cluster));
      if (found.length === 0) return portMatches(wantPort, asRecord(d.port), []) && objectSelectorMatches(spec, { kind, name, namespace, cluster, labels: {}, workspace: "" });
      return found.some((r) => portMatches(wantPort, asRecord(d.port), r.service.ports) && objectSelectorMatches(spec, { kind, name, namespace, cluster: r.cluster, labels: r.service.labels ?? {}, workspace: r.owner }));
    }
    if (!portMatches(wantPort, asRecord(d.port), [])) return false;
    const k = kind === "VIRTUAL_DESTINATION" ? "VirtualDestination" : kind === "EXTERNAL_SERVICE" ? "ExternalService" : undefined;
    const obj = k === undefined ? undefined : ctx.index.byKind.get(k)?.find((o) => o.metadata.name === name && (o.metadata.namespace ?? ctx.index.adminNamespace) === namespace);
    return obj !== undefined && objectSelectorMatches(spec, ctx.selectable(obj));
  });
}

/**
 * Whether a route destination's port (`{number}` / `{name}`, or none: the Service's only port) is the
 * selector's port; `servicePorts` translate between names and numbers (empty for other kinds).
 */
function portMatches(want: Record<string, unknown> | undefined, port: Record<string, unknown>, servicePorts: readonly { readonly port: number; readonly name?: string | undefined }[]): boolean {
  if (want === undefined) return true;
  const only = servicePorts.length === 1 ? servicePorts[0] : undefined;
  const number = asNumber(port.number) ?? servicePorts.find((p) => p.name !== undefined && p.name === asString(port.name))?.port ?? (asString(port.name) === undefined ? only?.port : undefined);
  const name = asString(port.name) ?? servicePorts.find((p) => p.port === number)?.name;
  const wantNumber = asNumber(want.number);
  return wantNumber !== undefined ? number === wantNumber : name !== undefined && name === asString(want.name);
}

/** Oldest first: creationTimestamp (missing = oldest), then namespace, then name. */
export function olderPolicyFirst(a: InputObject, b: InputObject): number {
  return (
    cmp(a.metadata.creationTimestamp ?? "", b.metadata.creationTimestamp ?? "") ||
    cmp(a.metadata.namespace ?? "", b.metadata.namespace ?? "") ||
    cmp(a.metadata.name, b.metadata.name)
  );
}

/** The winning policy of each kind for a route, in the route table owner's workspace. */
export function winningPolicies(ctx: WorkspaceContext, route: FlatRoute): Map<RoutePolicyKind, InputObject> {
  const out = new Map<RoutePolicyKind, InputObject>();
  for (const kind of ROUTE_POLICY_KINDS) {
    const win = winningPolicy(ctx, route, kind);
    if (win !== undefined) out.set(kind, win);
  }
  return out;
}

/**
 * The policy of `kind` on a route: the oldest of the route table owner's policies of that kind that
 * select it (and that `applies`, e.g. a JWTPolicy that applies to routes at all). Route policies,
 * JWTPolicy and CSRFPolicy all choose this way.
 */
export function winningPolicy(ctx: WorkspaceContext, route: FlatRoute, kind: string, applies: (p: InputObject) => boolean = () => true): InputObject | undefined {
  const owner = workspaceContext(ctx.index, ctx.ownerOf(route.table));
  if (owner === undefined) return undefined;
  const candidates = owner.own(kind);
  if (candidates.length === 0) return undefined;
  return candidates.filter((p) => applies(p) && policySelects(owner, p, route)).sort(olderPolicyFirst)[0];
}

/** Sets the fields of the winning policies on one Istio HTTP route. Returns diagnostics (e.g. an unresolvable mirror). */
export function applyRoutePolicies(
  route: Record<string, unknown>,
  winners: ReadonlyMap<RoutePolicyKind, InputObject>,
  resolve: DestinationResolver,
  diag: (p: InputObject, code: string, path: string, msg: string, severity?: Diagnostic["severity"]) => Diagnostic,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const [kind, p] of winners) {
    const config = asRecord(asRecord(p.spec).config);
    // A value Istio's webhook would reject (and the whole VirtualService with it) is left out, as an error.
    const invalid: Invalid = (path, msg) => out.push(diag(p, TranslateCode.InvalidField, path, msg, Severity.Error));
    const duration = (v: unknown, path: string): string | undefined => {
      const d = asString(v);
      if (d === undefined) return undefined;
      const problem = istioDurationProblem(d);
      if (problem === undefined) return d;
      invalid(path, `${problem}; the field is left out.`);
      return undefined;
    };
    switch (kind) {
      case "RetryTimeoutPolicy":
        applyRetryTimeout(route, config, duration, invalid);
        break;
      case "FaultInjectionPolicy":
        applyFault(route, config, duration);
        break;
      case "CORSPolicy":
        applyCors(route, config, duration, invalid);
        break;
      case "HeaderManipulationPolicy":
        applyHeaders(route, config, invalid);
        break;
      case "MirrorPolicy": {
        const r = resolve(config.destination, "/spec/config/destination", p);
        if ("error" in r) {
          out.push(diag(p, r.code, r.path, `${r.error}; the mirror is not applied.`));
          break;
        }
        route.mirror = { host: r.host, ...(r.port === undefined ? {} : { port: { number: r.port } }) };
        const pct = asNumber(config.percentage);
        if (pct !== undefined) route.mirrorPercentage = { value: pct };
        break;
      }
    }
  }
  return out;
}

type DurationField = (v: unknown, path: string) => string | undefined;
type Invalid = (path: string, msg: string) => void;

/** Envoy's retry conditions Istio accepts in retryOn (validateHTTPRetry), besides HTTP status codes. */
const RETRY_ON: ReadonlySet<string> = new Set([
  "5xx", "gateway-error", "reset", "reset-before-request", "connect-failure", "retriable-4xx", "refused-stream", "retriable-status-codes", "retriable-headers", "envoy-ratelimited", "http3-post-connect-failure",
  "cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable",
]);
/** The status codes Go's net/http names (Istio takes a code in retryOn when http.StatusText knows it). */
const KNOWN_STATUS = /^(10[0-3]|20[0-8]|226|30[0-57-8]|4(0\d|1[0-8])|42[1-689]|431|451|50[0-8]|51[01])$/;
const CORS_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE", "*"]);
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~A-Za-z0-9]+$/;

function applyRetryTimeout(route: Record<string, unknown>, c: Record<string, unknown>, duration: DurationField, invalid: Invalid): void {
  const timeout = duration(c.requestTimeout, "/spec/config/requestTimeout");
  if (timeout !== undefined) route.timeout = timeout;
  if (c.retries !== undefined) {
    const r = asRecord(c.retries);
    const attempts = asNumber(r.attempts) ?? 2;
    const perTryTimeout = duration(r.perTryTimeout, "/spec/config/retries/perTryTimeout");
    let retryOn = asString(r.retryOn);
    const unknown = retryOn?.split(",").filter((x) => !RETRY_ON.has(x) && !KNOWN_STATUS.test(x)) ?? [];
    if (unknown.length > 0) {
      invalid("/spec/config/retries/retryOn", `${unknown.map((x) => JSON.stringify(x)).join(", ")} ${unknown.length === 1 ? "is not a retry condition" : "are not retry conditions"} Istio accepts (Envoy's x-envoy-retry-on and x-envoy-retry-grpc-on conditions, or HTTP status codes, comma-separated without spaces); retryOn is left out.`);
      retryOn = undefined;
    }
    const remote = typeof r.retryRemoteLocalities === "boolean" ? r.retryRemoteLocalities : undefined;
    if (attempts === 0 && (perTryTimeout !== undefined || retryOn !== undefined || remote !== undefined)) {
      // Istio: "http retry policy configured when attempts are set to 0 (disabled)".
      invalid("/spec/config/retries", "attempts 0 disables retries, and Istio rejects perTryTimeout, retryOn or retryRemoteLocalities beside it; they are left out.");
      route.retries = { attempts };
      return;
    }
    route.retries = {
      attempts,
      ...(perTryTimeout === undefined ? {} : { perTryTimeout }),
      ...(retryOn === undefined ? {} : { retryOn }),
      ...(remote === undefined ? {} : { retryRemoteLocalities: remote }),
    };
  }
}

function applyFault(route: Record<string, unknown>, c: Record<string, unknown>, duration: DurationField): void {
  const fault: Record<string, unknown> = {};
  if (c.delay !== undefined) {
    const d = asRecord(c.delay);
    const fixedDelay = d.fixedDelay === undefined ? undefined : duration(d.fixedDelay, "/spec/config/delay/fixedDelay");
    // Without its fixedDelay (left out above) the delay is left out too.
    if (d.fixedDelay === undefined || fixedDelay !== undefined) fault.delay = { fixedDelay, percentage: { value: asNumber(d.percentage) ?? 100 } };
  }
  if (c.abort !== undefined) {
    const a = asRecord(c.abort);
    fault.abort = { httpStatus: asNumber(a.httpStatus), percentage: { value: asNumber(a.percentage) ?? 100 } };
  }
  if (Object.keys(fault).length > 0) route.fault = fault;
}

function applyCors(route: Record<string, unknown>, c: Record<string, unknown>, duration: DurationField, invalid: Invalid): void {
  const cors: Record<string, unknown> = {};
  const origins: Record<string, string>[] = [];
  asArray(c.allowOrigins).forEach((o, i) => {
    const r = asRecord(o);
    const exact = asString(r.exact);
    const prefix = asString(r.prefix);
    const suffix = asString(r.suffix);
    const regex = asString(r.regex);
    const path = `/spec/config/allowOrigins/${String(i)}`;
    const bad = regex === undefined || exact !== undefined || prefix !== undefined || suffix !== undefined ? undefined : regexError(regex);
    if ((exact ?? prefix ?? suffix ?? regex ?? "") === "") invalid(path, "an allowed origin needs a non-empty exact, prefix, suffix or regex; it is left out.");
    else if (bad !== undefined) invalid(`${path}/regex`, `invalid regex "${regex ?? ""}": ${bad}; the origin is left out.`);
    else origins.push(originMatch(exact, prefix, suffix, regex, r.ignoreCase === true));
  });
  if (origins.length > 0) cors.allowOrigins = origins;
  for (const k of ["allowMethods", "allowHeaders", "exposeHeaders"] as const) {
    const v = asArray(c[k])
      .filter((x): x is string => typeof x === "string")
      .filter((x, i) => {
        const ok = k === "allowMethods" ? CORS_METHODS.has(x) : x === "*" || HEADER_NAME.test(x);
        if (!ok) invalid(`/spec/config/${k}/${String(i)}`, `${JSON.stringify(x)} is not ${k === "allowMethods" ? "an HTTP method Istio accepts (GET, HEAD, POST, PUT, PATCH, DELETE, CONNECT, OPTIONS, TRACE or *)" : "a header name"}; it is left out.`);
        return ok;
      });
    if (v.length > 0) cors[k] = v;
  }
  let maxAge = duration(c.maxAge, "/spec/config/maxAge");
  if (maxAge !== undefined && (durationNanos(maxAge) ?? 0) % 1e9 !== 0) {
    invalid("/spec/config/maxAge", `Istio takes maxAge in whole seconds, and ${JSON.stringify(maxAge)} is finer; the field is left out.`);
    maxAge = undefined;
  }
  if (maxAge !== undefined) cors.maxAge = maxAge;
  if (typeof c.allowCredentials === "boolean") cors.allowCredentials = c.allowCredentials;
  route.corsPolicy = cors;
}

/**
 * A Gloo StringMatch as an Istio CORS origin match. Istio has exact, prefix and regex: a suffix, and
 * `ignoreCase` ("If true, indicates the exact/prefix/suffix matching should be case insensitive. This
 * has no effect for the regex match", common.gloo.solo.io StringMatch), become an RE2 regex, which
 * Envoy matches against the whole origin.
 */
function originMatch(exact: string | undefined, prefix: string | undefined, suffix: string | undefined, regex: string | undefined, ignoreCase: boolean): Record<string, string> {
  const re = (s: string) => s.replace(/[\\^$.|?*+()[\]{}]/g, "\\$&");
  const ci = ignoreCase ? "(?i)" : "";
  if (exact !== undefined) return ignoreCase ? { regex: `${ci}${re(exact)}` } : { exact };
  if (prefix !== undefined) return ignoreCase ? { regex: `${ci}${re(prefix)}.*` } : { prefix };
  if (suffix !== undefined) return { regex: `${ci}.*${re(suffix)}` };
  return { regex: regex ?? "" };
}

function applyHeaders(route: Record<string, unknown>, c: Record<string, unknown>, invalid: Invalid): void {
  const side = (addKey: string, removeKey: string, request: boolean): Record<string, unknown> | undefined => {
    const add: Record<string, string> = {};
    for (const [name, value] of Object.entries(asLabels(c[addKey]) ?? {})) {
      const problem = headerNameProblem(name, request) ?? headerValueProblem(value);
      if (problem === undefined) add[name] = value;
      else invalid(`/spec/config/${addKey}/${name}`, `${problem}; this header is left out.`);
    }
    const remove = asArray(c[removeKey])
      .filter((x): x is string => typeof x === "string")
      .filter((name, i) => {
        const problem = headerNameProblem(name, false);
        if (problem !== undefined) invalid(`/spec/config/${removeKey}/${String(i)}`, `${problem}; it is left out.`);
        return problem === undefined;
      });
    const out: Record<string, unknown> = {};
    if (Object.keys(add).length > 0) out.add = add;
    if (remove.length > 0) out.remove = remove;
    return Object.keys(out).length > 0 ? out : undefined;
  };
  const request = side("appendRequestHeaders", "removeRequestHeaders", true);
  const response = side("appendResponseHeaders", "removeResponseHeaders", false);
  if (request === undefined && response === undefined) return;
  route.headers = { ...(request === undefined ? {} : { request }), ...(response === undefined ? {} : { response }) };
}

/**
 * Why Istio rejects a header name in a header operation (ValidateHTTPHeaderWithAuthorityOperationName
 * for headers added to requests, ValidateHTTPHeaderOperationName for the rest), or undefined.
 */
function headerNameProblem(name: string, requestAdd: boolean): string | undefined {
  if (name === "") return "a header name cannot be empty";
  if (name.startsWith(":") && !(requestAdd && name.toLowerCase() === ":authority")) return `Istio does not let a route change the pseudo-header "${name}"`;
  if (!requestAdd && name.toLowerCase() === "host") return `Istio does not let a route remove the Host header or set it on a response ("${name}")`;
  return undefined;
}

/**
 * Why Istio rejects a header value (ValidateHTTPHeaderValue), or undefined: control characters other
 * than tab, or Envoy's `%VARIABLE%` / `%VARIABLE(args)%` syntax broken (a literal % is written %%).
 */
export function headerValueProblem(value: string): string | undefined {
  if (/[\u0000-\u0008\u000A-\u001F\u007F]/.test(value)) return `the header value ${JSON.stringify(value)} has control characters`;
  type State = "literal" | "name" | "array" | "string-start" | "string" | "delimiter" | "args-end" | "end";
  let state: State = "literal";
  const bad = (why: string) => `the header value ${JSON.stringify(value)} is not valid for Envoy: ${why} (write a literal % as %%)`;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    switch (state) {
      case "literal":
        if (ch !== "%") break;
        if (i + 1 === value.length) return bad("a % ends it");
        if (value[i + 1] === "%") i++;
        else state = "name";
        break;
      case "name":
        if (ch === "%") state = "literal";
        else if (ch === "(") state = "array";
        break;
      case "array":
        if (ch === "[") state = "string-start";
        else if (ch !== " ") state = "string";
        break;
      case "delimiter":
        if (ch === ",") state = "string-start";
        else if (ch === "]") state = "args-end";
        else if (ch !== " ") return bad("',' or ']' expected in the arguments");
        break;
      case "string-start":
        if (ch === '"') state = "string";
        else if (ch !== " ") return bad("'\"' expected in the arguments");
        break;
      case "string":
        if (ch === "\\") {
          if (i + 1 === value.length) return bad("an unterminated backslash");
          i++;
        } else if (ch === ")") state = "end";
        else if (ch === '"') state = "delimiter";
        break;
      case "args-end":
        if (ch === ")") state = "end";
        else if (ch !== " ") return bad("')' expected after the arguments");
        break;
      case "end":
        if (ch === "%") state = "literal";
        else if (ch !== " ") return bad("'%' expected after the arguments");
        break;
    }
  }
  return state === "literal" ? undefined : bad("a %VARIABLE% is not closed");
}

/**
 * Diagnostics of the workspace's route policies against the routes of its own route tables:
 * UNSUPPORTED_FIELD for untranslated selectors/fields, POLICY_CONFLICT for losers, SELECTS_NOTHING
 * for policies that select no route. `routes` are the workspace's own tables' flattened routes.
 */
export function routePolicyDiagnostics(ctx: WorkspaceContext, routes: readonly FlatRoute[]): TranslatorOutput {
  const diagnostics: Diagnostic[] = [];
  for (const kind of ROUTE_POLICY_KINDS) {
    const policies = [...ctx.own(kind)].sort(olderPolicyFirst);
    for (const p of policies) {
      const spec = asRecord(p.spec);
      diagnostics.push(...reportUnsupported(ctx, p, spec, "/spec", ["applyToRoutes", "config", ...(kind === "HeaderManipulationPolicy" ? ["applyToRouteDestinations"] : [])]));
      if (kind === "HeaderManipulationPolicy" && asArray(spec.applyToRouteDestinations).length > 0) {
        diagnostics.push(ctx.diag(p, TranslateCode.UnsupportedField, Severity.Warning, "/spec/applyToRouteDestinations", "applyToRouteDestinations is not translated: the headers are NOT set on the selected routes' destinations (only routes selected by applyToRoutes get them). Select the routes with applyToRoutes, or split the route so each destination has its own."));
      }
      asArray(spec.applyToRoutes).forEach((s, i) => {
        diagnostics.push(...reportUnsupported(ctx, p, s, `/spec/applyToRoutes/${i}`, ["route", "withDestinations"]));
      });
      for (const u of unreadKeys(spec.config, CONFIG_READS[kind], "/spec/config")) {
        const why = u.reason ?? "gitmesh does not translate it; it has no effect on the rendered Istio configuration";
        diagnostics.push(ctx.diag(p, TranslateCode.UnsupportedField, Severity.Warning, u.path, `${kind} config.${dottedField(u.path, "/spec/config")}: ${why}.`));
      }
    }
    const used = new Set<string>();
    const conflicts = new Map<string, { loser: InputObject; winner: InputObject; routes: string[] }>();
    for (const r of routes) {
      const selecting = policies.filter((p) => policySelects(ctx, p, r));
      const [winner, ...losers] = selecting;
      for (const p of selecting) used.add(p.key);
      if (winner === undefined) continue;
      for (const l of losers) {
        const k = `${l.key}|${winner.key}`;
        const entry = conflicts.get(k) ?? { loser: l, winner, routes: [] };
        entry.routes.push(`${r.table.metadata.namespace ?? ""}/${r.table.metadata.name}:${r.name}`);
        conflicts.set(k, entry);
      }
    }
    for (const { loser, winner, routes: rs } of conflicts.values()) {
      diagnostics.push(
        ctx.diag(loser, TranslateCode.PolicyConflict, Severity.Warning, "/spec/applyToRoutes", `${kind} ${winner.metadata.namespace ?? ""}/${winner.metadata.name} is older and already applies to route(s) ${rs.join(", ")}; this policy is not applied there. Narrow applyToRoutes so that one ${kind} selects each route.`),
      );
    }
    for (const p of policies) {
      if (!used.has(p.key)) {
        diagnostics.push(ctx.diag(p, TranslateCode.SelectsNothing, Severity.Warning, "/spec/applyToRoutes", `this ${kind} selects no route of workspace "${ctx.workspace.name}"; it has no effect. Check the labels in applyToRoutes against the route and route table labels.`));
      }
    }
  }
  return { resources: [], diagnostics };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
