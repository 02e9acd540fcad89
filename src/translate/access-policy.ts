/**
 * AccessPolicy → AuthorizationPolicy (action ALLOW) + PeerAuthentication (authn.tlsMode), per
 * target workload set in each cluster:
 *
 * - Targets: `applyToWorkloads` (labels → `selector.matchLabels`, in every owned namespace that
 *   matches and has such workloads) or else `applyToDestinations` (Services: the Service's pod
 *   selector), or else every Service the workspace owns.
 * - One rule per `authzList` entry (the deprecated `authz` only when authzList is empty, as Gloo):
 *   `from.source.principals` = `<trustDomain>/ns/<ns>/sa/<sa>` of the workloads that
 *   allowedClients' `serviceAccountSelector` selects in discovery (name/namespace/cluster globs on
 *   the service account, labels on the pods), `requestPrincipals`, `ipBlocks`, `remoteIpBlocks`;
 *   `to.operation{paths, methods}`; `when` for header matches. An entry whose clients resolve to
 *   no identity is dropped (NO_ALLOWED_CLIENTS): an ALLOW policy then allows less, never more.
 *   An empty entry `{}` allows nothing (Gloo's deny-all fallback).
 * - `dryRun` entries go to a second AuthorizationPolicy `<name>-dry-run` annotated
 *   `istio.io/dry-run: "true"`.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import { DestinationCode, cmpStr, consumersOf, namespaceOwner, objectSelector, selectServices, trustDomainOf, workloadsIn } from "./destination-common.js";
import { egressRoutes } from "./egress.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { asArray, asRecord, asString, globMatch, labelsMatch, type Labels } from "./selectors.js";
import { SpecTable } from "./spec-table.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

const TLS_MODES = ["DISABLE", "PERMISSIVE", "STRICT"] as const;

interface Target {
  readonly cluster: string;
  readonly namespace: string;
  /** Pod labels to select; empty = the whole namespace. */
  readonly matchLabels: Labels;
  /** Distinguishes targets of one policy in one namespace. */
  readonly id: string;
  /** An ExternalService's hosts: the target is its egress gateway, and every rule is limited to these hosts. */
  readonly hosts?: readonly string[];
}

export function translateAccessPolicies(ctx: WorkspaceContext): TranslatorOutput {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const ap of ctx.own("AccessPolicy")) {
    const out = translateOne(ctx, ap);
    resources.push(...out.resources);
    diagnostics.push(...out.diagnostics);
  }
  return { resources, diagnostics };
}

/**
 * Where one AccessPolicy of the workspace is enforced on mesh workloads (not egress gateways):
 * `authz` when it renders an enforced ALLOW AuthorizationPolicy there, `authn` when it renders a
 * PeerAuthentication. WorkspaceSettings `serviceIsolation` yields to it there (workspace-settings.ts):
 * "Applying AccessPolicies to destinations in this workspace will override the default service
 * isolation behavior" (admin.gloo.solo.io WorkspaceSettings proto), and Istio ORs ALLOW policies, so
 * the isolation ALLOW beside the AccessPolicy's would let every workspace client through.
 */
export interface AccessPolicyCoverage {
  readonly policy: InputObject;
  readonly cluster: string;
  readonly namespace: string;
  /** Pod labels the policy selects; empty = every pod of the namespace. */
  readonly matchLabels: Labels;
  readonly authz: boolean;
  readonly authn: boolean;
}

/** Every mesh target of the workspace's own AccessPolicies (diagnostics are translateOne's to report). */
export function accessPolicyCoverage(ctx: WorkspaceContext): AccessPolicyCoverage[] {
  const out: AccessPolicyCoverage[] = [];
  for (const ap of ctx.own("AccessPolicy")) {
    const config = asRecord(asRecord(ap.spec).config);
    const entries = authzEntries(config).map(([e]) => e);
    // Only enforced entries override isolation: a dry-run policy must not open the service.
    const authz = entries.some((e) => asRecord(e).dryRun !== true);
    const authn = (TLS_MODES as readonly string[]).includes(asString(asRecord(config.authn).tlsMode) ?? "");
    if (!authz && !authn) continue;
    for (const t of targetsOf(ctx, ap, [])) {
      if (t.hosts !== undefined) continue;
      out.push({ policy: ap, cluster: t.cluster, namespace: t.namespace, matchLabels: t.matchLabels, authz, authn });
    }
  }
  return out;
}

function targetsOf(ctx: WorkspaceContext, ap: InputObject, diagnostics: Diagnostic[]): Target[] {
  const ws = ctx.workspace;
  const spec = asRecord(ap.spec);
  const workloads = asArray(spec.applyToWorkloads);
  const out: Target[] = [];
  if (workloads.length > 0) {
    workloads.forEach((raw, i) => {
      const s = asRecord(asRecord(raw).selector);
      const labels = objectSelector(s).labels ?? {};
      const nsGlob = asString(s.namespace);
      const clusterGlob = asString(s.cluster);
      const wsGlob = asString(s.workspace);
      let n = 0;
      for (const cluster of ws.clusters) {
        if (!globMatch(clusterGlob, cluster)) continue;
        const snap = ctx.snapshot(cluster);
        for (const ns of ws.namespaces.get(cluster) ?? []) {
          if (!globMatch(nsGlob, ns) || !globMatch(wsGlob, namespaceOwner(ctx.index, cluster, ns))) continue;
          if (!(snap?.workloads ?? []).some((w) => w.namespace === ns && labelsMatch(labels, w.podLabels))) continue;
          out.push({ cluster, namespace: ns, matchLabels: labels, id: `workloads-${i}` });
          n++;
        }
      }
      if (n === 0) diagnostics.push(ctx.diag(ap, TranslateCode.SelectsNothing, Severity.Warning, `/spec/applyToWorkloads/${i}`, `selects no workload in the namespaces of workspace "${ws.name}"; check labels, namespace and cluster.`));
    });
    if (asArray(spec.applyToDestinations).length > 0) {
      diagnostics.push(ctx.diag(ap, TranslateCode.InvalidField, Severity.Warning, "/spec/applyToDestinations", "applyToDestinations is ignored because applyToWorkloads is set; remove one of them."));
    }
    return out;
  }
  const dests = asArray(spec.applyToDestinations);
  const entries = dests.length === 0 ? [undefined] : dests;
  entries.forEach((raw, i) => {
    const path = raw === undefined ? "/spec" : `/spec/applyToDestinations/${i}`;
    const d = asRecord(raw);
    const kind = asString(d.kind) ?? "SERVICE";
    if (d.port !== undefined && d.port !== null) {
      // Gloo limits the policy to that port; an ALLOW AuthorizationPolicy on the Service's pods covers all of them.
      diagnostics.push(ctx.diag(ap, TranslateCode.UnsupportedField, Severity.Warning, `${path}/port`, "gitmesh does not limit an access policy to one destination port: the rendered AuthorizationPolicy and PeerAuthentication apply to every port of the selected workloads (stricter than Gloo on the other ports). Remove the port, or use a policy that allows those ports' clients too."));
    }
    if (kind === "EXTERNAL_SERVICE") {
      out.push(...externalServiceTargets(ctx, ap, d, path, diagnostics));
      return;
    }
    if (kind !== "SERVICE") {
      // A security policy that is not enforced is an error, never a warning.
      diagnostics.push(ctx.diag(ap, DestinationCode.AccessNotEnforced, Severity.Error, `${path}/kind`, `AccessPolicy cannot be applied to ${kind} destinations (Gloo does not support it either); this entry is NOT enforced. Select the backing Services or their workloads (applyToWorkloads) instead.`));
      return;
    }
    let n = 0;
    for (const ref of selectServices(ctx, objectSelector(d.selector))) {
      if (ref.owner !== ws.name) continue;
      const selector = ref.service.selector ?? {};
      if (Object.keys(selector).length === 0) {
        diagnostics.push(ctx.diag(ap, TranslateCode.InvalidField, Severity.Warning, path, `Service ${ref.service.namespace}/${ref.service.name} in cluster "${ref.cluster}" has no pod selector; it cannot carry an AuthorizationPolicy and is skipped.`));
        continue;
      }
      out.push({ cluster: ref.cluster, namespace: ref.service.namespace, matchLabels: selector, id: ref.service.name });
      n++;
    }
    if (n === 0) diagnostics.push(ctx.diag(ap, TranslateCode.SelectsNothing, Severity.Warning, path, `selects no Service owned by workspace "${ws.name}"; check the selector.`));
  });
  return out;
}

/**
 * An AccessPolicy on ExternalServices is enforced on the egress gateway(s) their traffic goes
 * through (Gloo, "Block egress traffic with an egress gateway": "Route all egress traffic for an
 * external service through an egress gateway and ensure that only certain services in the mesh can
 * send requests to the external endpoint"): one target per gateway, rules limited to the
 * ExternalService's hosts. Without an egress gateway (ports[].egressGatewayRoutes), or in a client
 * cluster where none runs, the sidecars reach the host directly and Istio has no workload on which
 * an AuthorizationPolicy could check the request: an error (ACCESS_NOT_ENFORCED), never a skip.
 */
function externalServiceTargets(ctx: WorkspaceContext, ap: InputObject, d: Record<string, unknown>, path: string, diagnostics: Diagnostic[]): Target[] {
  const out: Target[] = [];
  const selected = ctx.select("ExternalService", objectSelector(d.selector));
  if (selected.length === 0) {
    diagnostics.push(ctx.diag(ap, TranslateCode.SelectsNothing, Severity.Warning, path, `selects no ExternalService visible to workspace "${ctx.workspace.name}"; check the selector (and that the ExternalService is exported to this workspace and imported).`));
    return out;
  }
  for (const es of selected) {
    const esName = `${es.metadata.namespace ?? ""}/${es.metadata.name}`;
    const hosts = asArray(asRecord(es.spec).hosts).filter((h): h is string => typeof h === "string" && h !== "");
    const routes = egressRoutes(ctx, es);
    const clients = new Set<string>();
    for (const w of [ctx.ownerOf(es), ...consumersOf(ctx, ctx.selectable(es))]) for (const c of ctx.index.workspaces.get(w)?.clusters ?? []) clients.add(c);
    const unguarded = [...clients].filter((c) => !routes.some((r) => r.binding.cluster === c)).sort(cmpStr);
    if (routes.length === 0) {
      diagnostics.push(ctx.diag(ap, DestinationCode.AccessNotEnforced, Severity.Error, path, `ExternalService ${esName} is reached directly from the clients' sidecars (no ports[].egressGatewayRoutes to an egress gateway), and Istio enforces an AuthorizationPolicy only on the workload that receives a request: this access policy is NOT enforced for it. Route the ExternalService through an egress VirtualGateway (ports[].egressGatewayRoutes), as Gloo requires for access policies on external services.`));
      continue;
    }
    const directPorts = asArray(asRecord(es.spec).ports)
      .map(asRecord)
      .filter((p) => p.egressGatewayRoutes === undefined || p.egressGatewayRoutes === null)
      .map((p) => String(p.number));
    if (directPorts.length > 0) {
      diagnostics.push(ctx.diag(ap, DestinationCode.AccessNotEnforced, Severity.Error, path, `port(s) ${directPorts.join(", ")} of ExternalService ${esName} have no egressGatewayRoutes: clients reach them directly and this access policy is NOT enforced on them. Route every port through the egress gateway, or remove the port.`));
    }
    if (unguarded.length > 0) {
      diagnostics.push(ctx.diag(ap, DestinationCode.AccessNotEnforced, Severity.Error, path, `ExternalService ${esName} has no egress gateway in cluster(s) ${unguarded.map((c) => `"${c}"`).join(", ")}: sidecars there reach it directly and this access policy is NOT enforced there. Run an egress gateway of the referenced VirtualGateway in those clusters.`));
    }
    const seen = new Set<string>();
    for (const r of routes) {
      const key = `${r.binding.cluster}|${r.binding.namespace}|${r.binding.name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ cluster: r.binding.cluster, namespace: r.binding.namespace, matchLabels: r.binding.podLabels, id: `${es.metadata.name}-${es.metadata.namespace ?? ""}-egress`, hosts });
    }
  }
  return out;
}

/** A rule limited to requests for `hosts` (the Host header the egress gateway sees is the external host). */
function forHosts(rule: Record<string, unknown>, hosts: readonly string[]): Record<string, unknown> {
  const op = asRecord(asRecord(asArray(rule.to)[0]).operation);
  return { ...rule, to: [{ operation: { ...op, hosts: [...hosts] } }] };
}

const principalMemo = new WeakMap<object, Map<string, string[]>>();

/** Principals of the workloads an IdentitySelector's serviceAccountSelector selects, sorted (memoised per selector and index structure: clusters and discovery). */
function principalsOf(ctx: WorkspaceContext, sel: Record<string, unknown>): string[] {
  const s = objectSelector(sel);
  let memo = principalMemo.get(ctx.index.structure);
  if (memo === undefined) {
    memo = new Map();
    principalMemo.set(ctx.index.structure, memo);
  }
  const key = JSON.stringify([s.name, s.namespace, s.cluster, s.workspace, s.labels === undefined ? null : Object.entries(s.labels).sort()]);
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  const result = computePrincipals(ctx, s);
  memo.set(key, result);
  return result;
}

function computePrincipals(ctx: WorkspaceContext, s: ReturnType<typeof objectSelector>): string[] {
  const out = new Set<string>();
  for (const cluster of ctx.index.clusters) {
    if (!globMatch(s.cluster, cluster)) continue;
    const snap = ctx.snapshot(cluster);
    const td = trustDomainOf(snap);
    if (snap === undefined || td === undefined) continue;
    const exactNs = s.namespace !== undefined && !s.namespace.includes("*");
    for (const w of exactNs ? workloadsIn(snap, s.namespace) : snap.workloads) {
      if (!globMatch(s.namespace, w.namespace) || !globMatch(s.name, w.serviceAccount) || !labelsMatch(s.labels, w.podLabels)) continue;
      if (s.workspace !== undefined && !globMatch(s.workspace, namespaceOwner(ctx.index, cluster, w.namespace))) continue;
      out.add(`${td}/ns/${w.namespace}/sa/${w.serviceAccount}`);
    }
  }
  return [...out].sort(cmpStr);
}

function strings(v: unknown): string[] {
  return asArray(v).filter((x): x is string => typeof x === "string" && x !== "");
}

function ruleOf(ctx: WorkspaceContext, ap: InputObject, raw: unknown, path: string, diagnostics: Diagnostic[]): Record<string, unknown> | undefined {
  const e = asRecord(raw);
  diagnostics.push(...reportUnsupported(ctx, ap, e, path, ["allowedClients", "allowedPaths", "allowedMethods", "match", "allowedIpBlocks", "allowedRemoteIpBlocks", "dryRun"]));
  const source: Record<string, unknown> = {};
  const clients = asArray(e.allowedClients).map(asRecord);
  if (clients.length > 0) {
    const principals = new Set<string>();
    const requestPrincipals = new Set<string>();
    const notRequestPrincipals = new Set<string>();
    clients.forEach((c, j) => {
      diagnostics.push(...reportUnsupported(ctx, ap, c, `${path}/allowedClients/${j}`, ["serviceAccountSelector", "requestIdentityMatcher", "externalWorkloadSelector"]));
      if (c.externalWorkloadSelector !== undefined && c.externalWorkloadSelector !== null) {
        diagnostics.push(ctx.diag(ap, TranslateCode.UnsupportedField, Severity.Warning, `${path}/allowedClients/${j}/externalWorkloadSelector`, "gitmesh does not discover external workloads (VMs): the clients this selects are NOT allowed by this rule (a rule with no other allowed client allows nothing)."));
      }
      if (c.serviceAccountSelector !== undefined) for (const p of principalsOf(ctx, asRecord(c.serviceAccountSelector))) principals.add(p);
      const rim = asRecord(c.requestIdentityMatcher);
      for (const p of strings(rim.requestPrincipals)) requestPrincipals.add(p);
      for (const p of strings(rim.notRequestPrincipals)) notRequestPrincipals.add(p);
    });
    // An external-workload client counts as a peer identity that resolves to none: never "any client".
    const wantsPeers = clients.some((c) => c.serviceAccountSelector !== undefined || (c.externalWorkloadSelector !== undefined && c.externalWorkloadSelector !== null));
    if (wantsPeers && principals.size === 0) {
      diagnostics.push(ctx.diag(ap, DestinationCode.NoAllowedClients, Severity.Warning, `${path}/allowedClients`, "the allowed clients match no service account in any discovered cluster; this rule is dropped, so it allows nothing. Check the serviceAccountSelector."));
      return undefined;
    }
    if (principals.size > 0) source.principals = [...principals].sort(cmpStr);
    if (requestPrincipals.size > 0) source.requestPrincipals = [...requestPrincipals].sort(cmpStr);
    if (notRequestPrincipals.size > 0) source.notRequestPrincipals = [...notRequestPrincipals].sort(cmpStr);
  }
  const ipBlocks = strings(e.allowedIpBlocks);
  if (ipBlocks.length > 0) source.ipBlocks = ipBlocks;
  const remote = strings(e.allowedRemoteIpBlocks);
  if (remote.length > 0) source.remoteIpBlocks = remote;
  const operation: Record<string, unknown> = {};
  const paths = strings(e.allowedPaths);
  const methods = strings(e.allowedMethods);
  if (methods.length > 0) operation.methods = methods;
  if (paths.length > 0) operation.paths = paths;
  const when: Record<string, unknown>[] = [];
  const headers = asRecord(asRecord(asRecord(e.match).request).headers);
  for (const name of Object.keys(headers).sort(cmpStr)) {
    const h = asRecord(headers[name]);
    const values = strings(h.values);
    const notValues = strings(h.notValues);
    if (values.length === 0 && notValues.length === 0) continue;
    when.push({ key: `request.headers[${name}]`, ...(values.length > 0 ? { values } : {}), ...(notValues.length > 0 ? { notValues } : {}) });
  }
  const rule: Record<string, unknown> = {};
  if (Object.keys(source).length > 0) rule.from = [{ source }];
  if (Object.keys(operation).length > 0) rule.to = [{ operation }];
  if (when.length > 0) rule.when = when;
  // `{}` in Gloo is the deny-all fallback; in Istio an empty rule would allow everything.
  return Object.keys(rule).length === 0 ? undefined : rule;
}

/**
 * The Authorization entries in force, with their paths: `authzList`, or else the deprecated `authz`
 * ("If authzList is set, it takes precedence and this field is ignored", security.policy.gloo.solo.io
 * AccessPolicy proto): counting both would OR one more ALLOW rule than Gloo enforces.
 */
function authzEntries(config: Record<string, unknown>): [unknown, string][] {
  const list: [unknown, string][] = asArray(config.authzList).map((e, i) => [e, `/spec/config/authzList/${i}`]);
  if (list.length > 0) return list;
  return config.authz === undefined || config.authz === null ? [] : [[config.authz, "/spec/config/authz"]];
}

function translateOne(ctx: WorkspaceContext, ap: InputObject): TranslatorOutput {
  const ws = ctx.workspace.name;
  const spec = asRecord(ap.spec);
  const config = asRecord(spec.config);
  const diagnostics: Diagnostic[] = reportUnsupported(ctx, ap, config, "/spec/config", ["authn", "authz", "authzList", "enforcementLayers"]);
  const layers = asRecord(config.enforcementLayers);
  if (config.enforcementLayers !== undefined && config.enforcementLayers !== null && layers.mesh !== true) {
    diagnostics.push(ctx.diag(ap, TranslateCode.UnsupportedField, Severity.Warning, "/spec/config/enforcementLayers", "enforcementLayers does not select the mesh layer, but gitmesh enforces access policies only there (Istio AuthorizationPolicy / PeerAuthentication), so it renders them anyway. Set mesh: true to say so."));
  }
  if (layers.cni === true) diagnostics.push(ctx.diag(ap, TranslateCode.UnsupportedField, Severity.Warning, "/spec/config/enforcementLayers/cni", "CNI (Cilium) enforcement is not rendered by gitmesh; only the Istio mesh layer is."));
  const targets = targetsOf(ctx, ap, diagnostics);

  const enforced: Record<string, unknown>[] = [];
  const dry: Record<string, unknown>[] = [];
  const entries = authzEntries(config);
  if (entries.length > 0 && config.authz !== undefined && config.authz !== null && entries[0]?.[1] !== "/spec/config/authz") {
    diagnostics.push(ctx.diag(ap, TranslateCode.UnsupportedField, Severity.Warning, "/spec/config/authz", "authz (deprecated) is ignored because authzList is set (\"If authzList is set, it takes precedence and this field is ignored\"); move its rule into authzList."));
  }
  const hasAuthz = entries.length > 0;
  for (const [raw, path] of entries) {
    const rule = ruleOf(ctx, ap, raw, path, diagnostics);
    if (rule === undefined) continue;
    (asRecord(raw).dryRun === true ? dry : enforced).push(rule);
  }
  const anyDry = entries.some(([raw]) => asRecord(raw).dryRun === true);
  const anyEnforced = entries.some(([raw]) => asRecord(raw).dryRun !== true);

  let tlsMode: string | undefined;
  if (config.authn !== undefined) {
    const m = asString(asRecord(config.authn).tlsMode);
    if (m === undefined) {
      diagnostics.push(ctx.diag(ap, TranslateCode.InvalidField, Severity.Warning, "/spec/config/authn", "authn has no tlsMode; no PeerAuthentication is rendered. Set tlsMode to STRICT, PERMISSIVE or DISABLE."));
    } else if ((TLS_MODES as readonly string[]).includes(m)) tlsMode = m;
    else diagnostics.push(ctx.diag(ap, TranslateCode.InvalidField, Severity.Error, "/spec/config/authn/tlsMode", `unknown tlsMode "${m}"; use ${TLS_MODES.join(", ")}.`));
  }

  const apNs = ap.metadata.namespace ?? ctx.index.adminNamespace;
  const parent = ctx.parentOf(ap);
  const resources: Emitted[] = [];
  if (tlsMode !== undefined && targets.some((t) => t.hosts !== undefined)) {
    diagnostics.push(ctx.diag(ap, TranslateCode.UnsupportedField, Severity.Warning, "/spec/config/authn", "authn.tlsMode does not apply to ExternalService destinations (the mTLS between sidecars and the egress gateway is set by the egress listener's tls.mode); no PeerAuthentication is rendered for them."));
  }
  // Targets with the same selector and hosts (the same Service in several clusters) share their specs (spec-table.ts).
  const enforcedSpecs = new SpecTable();
  const drySpecs = new SpecTable();
  const peerSpecs = new SpecTable();
  for (const t of targets) {
    const name = stableName("accesspolicy", ap.metadata.name, apNs, t.id, ws);
    const selector = Object.keys(t.matchLabels).length > 0 ? { selector: { matchLabels: t.matchLabels } } : {};
    const targetKey = `${JSON.stringify(t.matchLabels)}\n${JSON.stringify(t.hosts ?? null)}`;
    if (hasAuthz && anyEnforced) {
      const spec = enforcedSpecs.get(targetKey, () => authorizationPolicySpec(enforced, t.hosts, selector));
      resources.push({ cluster: t.cluster, resource: { apiVersion: "security.istio.io/v1", kind: "AuthorizationPolicy", metadata: outputMetadata(name, t.namespace, t.cluster, ws, parent), spec } });
    }
    if (hasAuthz && anyDry) {
      const spec = drySpecs.get(targetKey, () => authorizationPolicySpec(dry, t.hosts, selector));
      const metadata = outputMetadata(stableName(name, "dry-run"), t.namespace, t.cluster, ws, parent, { "istio.io/dry-run": "true" });
      resources.push({ cluster: t.cluster, resource: { apiVersion: "security.istio.io/v1", kind: "AuthorizationPolicy", metadata, spec } });
    }
    if (tlsMode !== undefined && t.hosts === undefined) {
      const mode = tlsMode;
      resources.push({
        cluster: t.cluster,
        resource: {
          apiVersion: "security.istio.io/v1",
          kind: "PeerAuthentication",
          metadata: outputMetadata(name, t.namespace, t.cluster, ws, parent),
          spec: peerSpecs.get(targetKey, () => ({ mtls: { mode }, ...selector })),
        },
      });
    }
  }
  return { resources, diagnostics };
}

/**
 * ALLOW with the rules (none: allow nothing). On an egress gateway (`hosts`), rules are limited to
 * the ExternalService's hosts, and "allow nothing" is a DENY for those hosts: an ALLOW policy without
 * rules would deny every request through the gateway, for every external host.
 */
function authorizationPolicySpec(rules: readonly Record<string, unknown>[], hosts: readonly string[] | undefined, selector: Record<string, unknown>): Record<string, unknown> {
  if (hosts !== undefined && rules.length === 0) return { action: "DENY", rules: [{ to: [{ operation: { hosts: [...hosts] } }] }], ...selector };
  const scoped = hosts === undefined ? rules : rules.map((r) => forHosts(r, hosts));
  return { action: "ALLOW", ...(scoped.length > 0 ? { rules: scoped } : {}), ...selector };
}
