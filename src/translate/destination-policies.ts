/**
 * Destination policies → DestinationRule traffic policy fields, merged into one DestinationRule per
 * destination host:
 *
 * - FailoverPolicy          → `loadBalancer.localityLbSetting` (`enabled: true`; localityMappings
 *                             without weights and with region-only localities → `failover`, any
 *                             weight or zone → `distribute`; priorityLabels → `failoverPriority`).
 * - OutlierDetectionPolicy  → `outlierDetection` (defaults consecutiveErrors 5 → consecutive5xxErrors,
 *                             interval 10s, baseEjectionTime 30s, maxEjectionPercent 100).
 * - ConnectionPolicy        → `connectionPool` (maxRequests → http2MaxRequests, maxPendingRequests →
 *                             http1MaxPendingRequests).
 * - LoadBalancerPolicy      → `loadBalancer.simple | consistentHash`, `warmupDurationSecs`.
 *
 * Selection: `applyToDestinations` (DestinationSelector: ObjectSelector + kind + port); an empty
 * list selects every destination the workspace owns. Policies apply to destinations the policy's
 * workspace owns; selecting an imported destination is reported (IMPORTED_DESTINATION) because the
 * exporting workspace renders that destination's DestinationRule. Two policies of one kind on one
 * (destination, port): the oldest (creationTimestamp, then key) wins, the other gets POLICY_CONFLICT.
 *
 * The VirtualDestination and ExternalService translators read `destinationTrafficPolicy` for their
 * DestinationRules; `translateServiceDestinationPolicies` renders the DestinationRules of plain
 * Services (name from `serviceDestinationRuleName`, so that route subsets can merge into it).
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { sortedKeys } from "./canonical.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import { consumersOf,
  DestinationCode,
  cmpStr,
  namespacesIn,
  objectSelector,
  olderFirst,
  selectServices,
  type ServiceRef,
} from "./destination-common.js";
import { istioDurationProblem } from "./duration.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { serviceHost, stableName } from "./names.js";
import { asArray, asNumber, asRecord, asString } from "./selectors.js";
import { SpecTable } from "./spec-table.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

export const DESTINATION_POLICY_KINDS = ["FailoverPolicy", "OutlierDetectionPolicy", "ConnectionPolicy", "LoadBalancerPolicy"] as const;
type PolicyKind = (typeof DESTINATION_POLICY_KINDS)[number];

export const OUTLIER_DEFAULTS = { consecutiveErrors: 5, interval: "10s", baseEjectionTime: "30s", maxEjectionPercent: 100 } as const;

/** A destination a policy can select: a Service in one cluster, a VirtualDestination or an ExternalService. */
export interface DestinationRef {
  readonly kind: "SERVICE" | "VIRTUAL_DESTINATION" | "EXTERNAL_SERVICE";
  /** `service/<cluster>/<namespace>/<name>` or the Gloo object's key. */
  readonly key: string;
}

export type TrafficPolicy = Record<string, unknown>;

interface Application {
  readonly policy: InputObject;
  /** Port numbers the policy applies to; undefined = every port. */
  readonly ports: ReadonlySet<number> | undefined;
}

export interface DestinationPolicyIndex {
  /** Policies per destination key per kind, oldest first. */
  readonly applications: ReadonlyMap<string, ReadonlyMap<PolicyKind, readonly Application[]>>;
  /** Selected plain Services, by destination key. */
  readonly services: ReadonlyMap<string, ServiceRef>;
  readonly diagnostics: readonly Diagnostic[];
  /** Translated (policy-level) fields per policy key. */
  readonly fields: ReadonlyMap<string, TrafficPolicy>;
}

export function serviceKey(cluster: string, namespace: string, name: string): string {
  return `service/${cluster}/${namespace}/${name}`;
}

/** Name of the DestinationRule of a plain Service host in one cluster (shared with route subsets). */
export function serviceDestinationRuleName(service: string, namespace: string, cluster: string, workspace: string): string {
  return stableName(service, namespace, "svc", cluster, workspace);
}

const indexMemo = new WeakMap<WorkspaceContext, DestinationPolicyIndex>();

export function destinationPolicyIndex(ctx: WorkspaceContext): DestinationPolicyIndex {
  const cached = indexMemo.get(ctx);
  if (cached !== undefined) return cached;
  const diagnostics: Diagnostic[] = [];
  const applications = new Map<string, Map<PolicyKind, Application[]>>();
  const services = new Map<string, ServiceRef>();
  const fields = new Map<string, TrafficPolicy>();
  const ws = ctx.workspace.name;

  for (const kind of DESTINATION_POLICY_KINDS) {
    const policies = [...ctx.own(kind)].sort(olderFirst);
    for (const policy of policies) {
      const translated = translatePolicyConfig(ctx, kind, policy);
      diagnostics.push(...translated.diagnostics);
      fields.set(policy.key, translated.fields);
      const spec = asRecord(policy.spec);
      const selectors = asArray(spec.applyToDestinations);
      const selected: { dest: DestinationRef; ports: Set<number> | undefined; service?: ServiceRef }[] = [];
      const entries = selectors.length === 0 ? [undefined] : selectors;
      entries.forEach((raw, i) => {
        const path = raw === undefined ? "/spec" : `/spec/applyToDestinations/${i}`;
        const ds = asRecord(raw);
        const kindSel = raw === undefined ? undefined : (asString(ds.kind) ?? "SERVICE");
        const sel = objectSelector(ds.selector);
        const portSel = asRecord(ds.port);
        let count = 0;
        let imported = 0;
        if (kindSel === undefined || kindSel === "SERVICE") {
          for (const ref of selectServices(ctx, sel)) {
            if (ref.owner !== ws) {
              imported++;
              continue;
            }
            const ports = servicePorts(ref, portSel);
            if (ports !== undefined && ports.size === 0) continue;
            selected.push({ dest: { kind: "SERVICE", key: serviceKey(ref.cluster, ref.service.namespace, ref.service.name) }, ports, service: ref });
            count++;
          }
        }
        for (const [k, gloo] of [
          ["VIRTUAL_DESTINATION", "VirtualDestination"],
          ["EXTERNAL_SERVICE", "ExternalService"],
        ] as const) {
          if (kindSel !== undefined && kindSel !== k) continue;
          if (kind === "FailoverPolicy" && k === "EXTERNAL_SERVICE") {
            if (kindSel === k) diagnostics.push(ctx.diag(policy, TranslateCode.InvalidField, Severity.Error, `${path}/kind`, "FailoverPolicy cannot apply to ExternalServices; select Services or VirtualDestinations."));
            continue;
          }
          for (const obj of ctx.select(gloo, sel)) {
            if (ctx.ownerOf(obj) !== ws) {
              imported++;
              continue;
            }
            const ports = objectPorts(obj, portSel);
            if (ports !== undefined && ports.size === 0) continue;
            selected.push({ dest: { kind: k, key: obj.key }, ports });
            count++;
          }
        }
        if (count === 0 && imported > 0) {
          diagnostics.push(
            ctx.diag(policy, DestinationCode.ImportedDestination, Severity.Warning, path,
              `the selector matches only destinations imported from other workspaces (${imported}); destination policies apply to destinations of their own workspace "${ws}". Put the policy in the exporting workspace.`),
          );
        }
        if (count === 0 && imported === 0) {
          diagnostics.push(ctx.diag(policy, TranslateCode.SelectsNothing, Severity.Warning, path, `${kind} selects no destination of workspace "${ws}"; check the selector's labels, name, namespace, cluster and port.`));
        }
      });

      for (const s of selected) {
        if (s.service !== undefined) services.set(s.dest.key, s.service);
        let perKind = applications.get(s.dest.key);
        if (perKind === undefined) {
          perKind = new Map();
          applications.set(s.dest.key, perKind);
        }
        const list = perKind.get(kind) ?? [];
        if (list.some((a) => a.policy.key === policy.key)) {
          // selected twice by one policy: widen to the union of ports
          const idx = list.findIndex((a) => a.policy.key === policy.key);
          const prev = list[idx]!;
          list[idx] = { policy, ports: prev.ports === undefined || s.ports === undefined ? undefined : new Set([...prev.ports, ...s.ports]) };
          continue;
        }
        const clash = list.find((a) => overlaps(a.ports, s.ports));
        if (clash !== undefined) {
          diagnostics.push(
            ctx.diag(policy, TranslateCode.PolicyConflict, Severity.Error, "/spec/applyToDestinations",
              `${kind} ${policy.metadata.namespace ?? ""}/${policy.metadata.name} and the older ${clash.policy.metadata.namespace ?? ""}/${clash.policy.metadata.name} both apply to ${describe(s.dest)}; the older one wins there. Narrow one of the selectors.`),
          );
          if (s.ports === undefined) continue;
          const free = new Set([...s.ports].filter((p) => !list.some((a) => a.ports === undefined || a.ports.has(p))));
          if (free.size === 0) continue;
          list.push({ policy, ports: free });
        } else list.push({ policy, ports: s.ports });
        perKind.set(kind, list);
      }
    }
  }
  const result: DestinationPolicyIndex = { applications, services, diagnostics, fields };
  indexMemo.set(ctx, result);
  return result;
}

function describe(d: DestinationRef): string {
  return d.kind === "SERVICE" ? `Service ${d.key.slice("service/".length)}` : d.key;
}

function overlaps(a: ReadonlySet<number> | undefined, b: ReadonlySet<number> | undefined): boolean {
  if (a === undefined || b === undefined) return true;
  for (const p of a) if (b.has(p)) return true;
  return false;
}

function servicePorts(ref: ServiceRef, portSel: Record<string, unknown>): Set<number> | undefined {
  const number = asNumber(portSel.number);
  const name = asString(portSel.name);
  if (number === undefined && name === undefined) return undefined;
  return new Set(ref.service.ports.filter((p) => (number !== undefined ? p.port === number : p.name === name)).map((p) => p.port));
}

function objectPorts(obj: InputObject, portSel: Record<string, unknown>): Set<number> | undefined {
  const number = asNumber(portSel.number);
  const name = asString(portSel.name);
  if (number === undefined && name === undefined) return undefined;
  const ports = asArray(asRecord(obj.spec).ports).map(asRecord);
  return new Set(
    ports
      .filter((p) => (number !== undefined ? asNumber(p.number) === number : asString(p.name) === name || asString(p.protocol)?.toLowerCase() === name))
      .map((p) => asNumber(p.number) ?? 0),
  );
}

/**
 * The DestinationRule `trafficPolicy` for a destination given its port numbers: top-level fields
 * when every port gets the same settings, otherwise `portLevelSettings` (complete per port, because
 * Istio does not inherit destination-level settings into an overridden port). `base` (e.g. the
 * ISTIO_MUTUAL tls of a VirtualDestination) is included everywhere.
 */
export function destinationTrafficPolicy(
  ctx: WorkspaceContext,
  destKey: string,
  ports: readonly number[],
  base: TrafficPolicy | ((port: number) => TrafficPolicy) = {},
): { trafficPolicy: TrafficPolicy | undefined; policies: readonly InputObject[] } {
  const idx = destinationPolicyIndex(ctx);
  const perKind = idx.applications.get(destKey);
  const baseOf = typeof base === "function" ? base : () => base;
  const used = new Map<string, InputObject>();
  const perPort = ports.map((port) => {
    let tp: TrafficPolicy = { ...baseOf(port) };
    for (const kind of DESTINATION_POLICY_KINDS) {
      const app = perKind?.get(kind)?.find((a) => a.ports === undefined || a.ports.has(port));
      if (app === undefined) continue;
      used.set(app.policy.key, app.policy);
      tp = mergeTraffic(tp, idx.fields.get(app.policy.key) ?? {});
    }
    return tp;
  });
  const policies = [...used.values()].sort((a, b) => cmpStr(a.key, b.key));
  const first = JSON.stringify(perPort[0] ?? {});
  const uniform = perPort.every((p) => JSON.stringify(p) === first);
  if (uniform) {
    const tp = perPort[0] ?? {};
    return { trafficPolicy: Object.keys(tp).length === 0 ? undefined : sortedKeys(tp), policies };
  }
  const levels = ports.flatMap((port, i) => (Object.keys(perPort[i] ?? {}).length === 0 ? [] : [sortedKeys({ port: { number: port }, ...perPort[i] })]));
  return { trafficPolicy: { portLevelSettings: levels }, policies };
}

function mergeTraffic(a: TrafficPolicy, b: TrafficPolicy): TrafficPolicy {
  const out: TrafficPolicy = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] = typeof prev === "object" && prev !== null && typeof v === "object" && v !== null ? { ...prev, ...v } : v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// per-kind config translation

function translatePolicyConfig(ctx: WorkspaceContext, kind: PolicyKind, policy: InputObject): { fields: TrafficPolicy; diagnostics: Diagnostic[] } {
  const config = asRecord(asRecord(policy.spec).config);
  switch (kind) {
    case "FailoverPolicy":
      return failoverFields(ctx, policy, config);
    case "OutlierDetectionPolicy":
      return outlierFields(ctx, policy, config);
    case "ConnectionPolicy":
      return connectionFields(ctx, policy, config);
    case "LoadBalancerPolicy":
      return loadBalancerFields(ctx, policy, config);
  }
}

function localityString(l: Record<string, unknown>, wildcard: boolean): string | undefined {
  const region = asString(l.region);
  if (region === undefined || region === "") return undefined;
  const parts = [region];
  const zone = asString(l.zone);
  const sub = asString(l.subZone);
  if (zone) parts.push(zone);
  if (zone && sub) parts.push(sub);
  if (wildcard && parts.length < 3) parts.push("*");
  return parts.join("/");
}

function failoverFields(ctx: WorkspaceContext, policy: InputObject, config: Record<string, unknown>): { fields: TrafficPolicy; diagnostics: Diagnostic[] } {
  const diagnostics = reportUnsupported(ctx, policy, config, "/spec/config", ["localityMappings", "priorityLabels"]);
  const mappings = asArray(config.localityMappings).map(asRecord);
  const priority = asArray(asRecord(config.priorityLabels).labels).filter((l): l is string => typeof l === "string");
  const setting: Record<string, unknown> = { enabled: true };
  if (mappings.length > 0) {
    if (priority.length > 0) {
      diagnostics.push(ctx.diag(policy, TranslateCode.InvalidField, Severity.Warning, "/spec/config/priorityLabels", "localityMappings and priorityLabels are both set; localityMappings win and priorityLabels are ignored. Remove one of them."));
    }
    const weighted = mappings.some((m) => asArray(m.to).some((t) => asRecord(t).weight !== undefined || asString(asRecord(t).zone)) || asString(asRecord(m.from).zone));
    const failover: { from: string; to: string }[] = [];
    const distribute: { from: string; to: Record<string, number> }[] = [];
    mappings.forEach((m, i) => {
      const path = `/spec/config/localityMappings/${i}`;
      const from = localityString(asRecord(m.from), weighted);
      const tos = asArray(m.to).map(asRecord);
      if (from === undefined || tos.length === 0) {
        diagnostics.push(ctx.diag(policy, TranslateCode.InvalidField, Severity.Error, path, "a locality mapping needs from.region and at least one to[] entry with a region; this mapping is skipped."));
        return;
      }
      if (!weighted) {
        for (const t of tos) {
          const to = asString(t.region);
          if (to) failover.push({ from, to });
        }
        return;
      }
      const given = tos.map((t) => asNumber(asRecord(t).weight));
      const sum = given.reduce<number>((a, w) => a + (w ?? 0), 0);
      const missing = given.filter((w) => w === undefined).length;
      if (sum > 100 || (missing === 0 && sum !== 100)) {
        diagnostics.push(ctx.diag(policy, TranslateCode.InvalidWeights, Severity.Error, `${path}/to`, `the weights of a locality mapping must add up to 100 (they add up to ${sum}); this mapping is skipped.`));
        return;
      }
      const rest = 100 - sum;
      const each = missing === 0 ? 0 : Math.floor(rest / missing);
      let extra = missing === 0 ? 0 : rest - each * missing;
      const to: Record<string, number> = {};
      tos.forEach((t, j) => {
        const loc = localityString(t, true);
        if (loc === undefined) return;
        let w = given[j];
        if (w === undefined) {
          w = each + (extra > 0 ? 1 : 0);
          if (extra > 0) extra--;
        }
        to[loc] = (to[loc] ?? 0) + w;
      });
      distribute.push({ from, to });
    });
    if (failover.length > 0) setting.failover = failover;
    if (distribute.length > 0) setting.distribute = distribute;
  } else if (priority.length > 0) {
    setting.failoverPriority = priority;
  }
  return { fields: { loadBalancer: { localityLbSetting: setting } }, diagnostics };
}

/**
 * A duration field; anything else is an error and the field is left out. `istio`: the field is one
 * Istio's webhook checks with ValidateDuration (at least 1ms, whole milliseconds), so a finer or
 * shorter value, which would have the whole DestinationRule rejected, is an error too.
 */
function duration(ctx: WorkspaceContext, policy: InputObject, v: unknown, path: string, diagnostics: Diagnostic[], istio = true): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === "string" && /^\d+(\.\d+)?(h|m|s|ms|us|µs|ns)$/.test(v)) {
    const problem = istio ? istioDurationProblem(v) : undefined;
    if (problem === undefined) return v;
    diagnostics.push(ctx.diag(policy, TranslateCode.InvalidField, Severity.Error, path, `${problem}. The field is left out.`));
    return undefined;
  }
  diagnostics.push(ctx.diag(policy, TranslateCode.InvalidField, Severity.Error, path, `${JSON.stringify(v)} is not a duration; write it like "10s", "500ms" or "1m". The field is left out.`));
  return undefined;
}

function outlierFields(ctx: WorkspaceContext, policy: InputObject, config: Record<string, unknown>): { fields: TrafficPolicy; diagnostics: Diagnostic[] } {
  const diagnostics = reportUnsupported(ctx, policy, config, "/spec/config", ["consecutiveErrors", "interval", "baseEjectionTime", "maxEjectionPercent", "consecutiveGatewayErrors"]);
  const consecutive5xxErrors = asNumber(config.consecutiveErrors) ?? OUTLIER_DEFAULTS.consecutiveErrors;
  const interval = duration(ctx, policy, config.interval, "/spec/config/interval", diagnostics) ?? OUTLIER_DEFAULTS.interval;
  const baseEjectionTime = duration(ctx, policy, config.baseEjectionTime, "/spec/config/baseEjectionTime", diagnostics) ?? OUTLIER_DEFAULTS.baseEjectionTime;
  const max = asNumber(config.maxEjectionPercent);
  const gw = asNumber(config.consecutiveGatewayErrors);
  // Keys in canonical (code-unit) order. maxEjectionPercent 0 means "unset" in the proto: leave it to
  // Istio's default (10%) rather than forbidding ejection.
  const od: Record<string, unknown> = {
    baseEjectionTime,
    consecutive5xxErrors,
    ...(gw === undefined ? {} : { consecutiveGatewayErrors: gw }),
    interval,
    ...(max === undefined ? { maxEjectionPercent: OUTLIER_DEFAULTS.maxEjectionPercent } : max > 0 ? { maxEjectionPercent: Math.min(100, max) } : {}),
  };
  return { fields: { outlierDetection: od }, diagnostics };
}

function connectionFields(ctx: WorkspaceContext, policy: InputObject, config: Record<string, unknown>): { fields: TrafficPolicy; diagnostics: Diagnostic[] } {
  const diagnostics = reportUnsupported(ctx, policy, config, "/spec/config", ["tcp", "http"]);
  // Every object below gets its fields in canonical (code-unit) key order: its canonical form is itself.
  let tcp: Record<string, unknown> | undefined;
  const tcpIn = asRecord(config.tcp);
  if (config.tcp !== undefined) {
    diagnostics.push(...reportUnsupported(ctx, policy, tcpIn, "/spec/config/tcp", ["tcpKeepalive", "maxConnections", "connectTimeout"]));
    const max = asNumber(tcpIn.maxConnections);
    const ct = duration(ctx, policy, tcpIn.connectTimeout, "/spec/config/tcp/connectTimeout", diagnostics);
    let keepalive: Record<string, unknown> | undefined;
    if (tcpIn.tcpKeepalive !== undefined) {
      const ka = asRecord(tcpIn.tcpKeepalive);
      const probes = asNumber(ka.probes);
      const time = duration(ctx, policy, ka.time, "/spec/config/tcp/tcpKeepalive/time", diagnostics);
      const interval = duration(ctx, policy, ka.interval, "/spec/config/tcp/tcpKeepalive/interval", diagnostics);
      keepalive = {
        ...(interval === undefined ? {} : { interval }),
        ...(probes === undefined ? {} : { probes }),
        ...(time === undefined ? {} : { time }),
      };
    }
    tcp = {
      ...(ct === undefined ? {} : { connectTimeout: ct }),
      ...(max === undefined ? {} : { maxConnections: max }),
      ...(keepalive === undefined ? {} : { tcpKeepalive: keepalive }),
    };
  }
  let http: Record<string, unknown> | undefined;
  if (config.http !== undefined) {
    const httpIn = asRecord(config.http);
    diagnostics.push(...reportUnsupported(ctx, policy, httpIn, "/spec/config/http", ["maxRequestsPerConnection", "maxRetries", "maxRequests", "maxPendingRequests", "idleTimeout"]));
    const idle = duration(ctx, policy, httpIn.idleTimeout, "/spec/config/http/idleTimeout", diagnostics);
    const pending = asNumber(httpIn.maxPendingRequests);
    const requests = asNumber(httpIn.maxRequests);
    const perConnection = asNumber(httpIn.maxRequestsPerConnection);
    const retries = asNumber(httpIn.maxRetries);
    http = {
      ...(pending === undefined ? {} : { http1MaxPendingRequests: pending }),
      ...(requests === undefined ? {} : { http2MaxRequests: requests }),
      ...(idle === undefined ? {} : { idleTimeout: idle }),
      ...(perConnection === undefined ? {} : { maxRequestsPerConnection: perConnection }),
      ...(retries === undefined ? {} : { maxRetries: retries }),
    };
  }
  if (tcp === undefined && http === undefined) return { fields: {}, diagnostics };
  return { fields: { connectionPool: { ...(http === undefined ? {} : { http }), ...(tcp === undefined ? {} : { tcp }) } }, diagnostics };
}

const SIMPLE_LB = ["RANDOM", "PASSTHROUGH", "ROUND_ROBIN", "LEAST_REQUEST"] as const;

function loadBalancerFields(ctx: WorkspaceContext, policy: InputObject, config: Record<string, unknown>): { fields: TrafficPolicy; diagnostics: Diagnostic[] } {
  const diagnostics = reportUnsupported(ctx, policy, config, "/spec/config", ["simple", "consistentHash", "warmupDurationSecs"]);
  const lb: Record<string, unknown> = {};
  const simple = asString(config.simple);
  if (simple !== undefined && simple !== "UNSPECIFIED") {
    if ((SIMPLE_LB as readonly string[]).includes(simple)) lb.simple = simple;
    else diagnostics.push(ctx.diag(policy, TranslateCode.InvalidField, Severity.Error, "/spec/config/simple", `unknown load balancer "${simple}"; use one of ${SIMPLE_LB.join(", ")}.`));
  }
  if (config.consistentHash !== undefined) {
    if (lb.simple !== undefined) {
      diagnostics.push(ctx.diag(policy, TranslateCode.InvalidField, Severity.Error, "/spec/config/consistentHash", "simple and consistentHash are exclusive; consistentHash is ignored. Remove one of them."));
    } else {
      const ch = asRecord(config.consistentHash);
      const out: Record<string, unknown> = {};
      if (asString(ch.httpHeaderName)) out.httpHeaderName = ch.httpHeaderName;
      else if (ch.httpCookie !== undefined) {
        const c = asRecord(ch.httpCookie);
        const cookie: Record<string, unknown> = { name: asString(c.name) ?? "" };
        if (asString(c.path)) cookie.path = c.path;
        const ttl = duration(ctx, policy, c.ttl, "/spec/config/consistentHash/httpCookie/ttl", diagnostics, false);
        if (ttl !== undefined) cookie.ttl = ttl;
        out.httpCookie = cookie;
      } else if (ch.useSourceIp === true) out.useSourceIp = true;
      else if (asString(ch.httpQueryParameterName)) out.httpQueryParameterName = ch.httpQueryParameterName;
      if (Object.keys(out).length === 0) {
        diagnostics.push(ctx.diag(policy, TranslateCode.InvalidField, Severity.Error, "/spec/config/consistentHash", "consistentHash needs one of httpHeaderName, httpCookie, useSourceIp or httpQueryParameterName."));
      } else lb.consistentHash = out;
    }
  }
  const warmup = duration(ctx, policy, config.warmupDurationSecs, "/spec/config/warmupDurationSecs", diagnostics, false);
  if (warmup !== undefined) lb.warmupDurationSecs = warmup;
  return { fields: Object.keys(lb).length === 0 ? {} : { loadBalancer: lb }, diagnostics };
}

// ---------------------------------------------------------------------------------------------
// plain Services

/** DestinationRules for plain Services selected by destination policies (one per Service and cluster). */
export function translateServiceDestinationPolicies(ctx: WorkspaceContext): TranslatorOutput {
  const idx = destinationPolicyIndex(ctx);
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [...idx.diagnostics];
  const ws = ctx.workspace.name;
  // The same Service's rule in clusters with the same exportTo and policies: one spec (spec-table.ts).
  const specs = new SpecTable();
  for (const [key, ref] of [...idx.services].sort((a, b) => cmpStr(a[0], b[0]))) {
    const svc = ref.service;
    const ports = svc.ports.map((p) => p.port).sort((a, b) => a - b);
    const { trafficPolicy, policies } = destinationTrafficPolicy(ctx, key, ports);
    if (trafficPolicy === undefined || policies.length === 0) continue;
    const parent = ctx.parentOf(policies[0]!);
    const consumers = consumersOf(ctx, { kind: "Service", name: svc.name, namespace: svc.namespace, cluster: ref.cluster, labels: svc.labels ?? {}, workspace: ws });
    const exportTo = namespacesIn(ctx.index, ref.cluster, [ws, ...consumers]);
    const host = serviceHost(svc.name, svc.namespace);
    resources.push({
      cluster: ref.cluster,
      resource: {
        apiVersion: "networking.istio.io/v1",
        kind: "DestinationRule",
        metadata: outputMetadata(serviceDestinationRuleName(svc.name, svc.namespace, ref.cluster, ws), svc.namespace, ref.cluster, ws, parent, {
          "gitmesh.io/policies": policies.map((p) => `${p.kind}/${p.metadata.namespace ?? ""}/${p.metadata.name}`).join(","),
        }),
        spec: specs.get(`${JSON.stringify(exportTo)}\n${host}\n${JSON.stringify(trafficPolicy)}`, () => ({ exportTo, host, trafficPolicy })),
      },
    });
  }
  return { resources, diagnostics: [...diagnostics, ...failoverWarnings(ctx)] };
}

/** FAILOVER_WITHOUT_OUTLIER_DETECTION for each FailoverPolicy that shares no destination with an OutlierDetectionPolicy. */
function failoverWarnings(ctx: WorkspaceContext): Diagnostic[] {
  const idx = destinationPolicyIndex(ctx);
  const lonely = new Map<string, InputObject>();
  const covered = new Set<string>();
  for (const perKind of idx.applications.values()) {
    const fo = perKind.get("FailoverPolicy") ?? [];
    const od = perKind.get("OutlierDetectionPolicy") ?? [];
    for (const a of fo) {
      if (od.length > 0) covered.add(a.policy.key);
      else lonely.set(a.policy.key, a.policy);
    }
  }
  const out: Diagnostic[] = [];
  for (const [key, policy] of [...lonely].sort((a, b) => cmpStr(a[0], b[0]))) {
    if (covered.has(key)) continue;
    out.push(
      ctx.diag(policy, DestinationCode.FailoverWithoutOutlierDetection, Severity.Warning, "/spec/applyToDestinations",
        "Istio only fails over when outlier detection ejects unhealthy endpoints; add an OutlierDetectionPolicy for the same destinations."),
    );
  }
  return out;
}
