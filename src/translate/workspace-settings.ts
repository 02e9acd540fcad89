/**
 * WorkspaceSettings options (own settings, overridden key by key by `global` in the admin namespace):
 *
 * - `serviceIsolation.enabled` → per owned Service and cluster a STRICT PeerAuthentication
 *   `settings-<svc>-<ns>-<cluster>-<ws>` (selector = the Service's pod selector) and an
 *   AuthorizationPolicy of the same name allowing only principals `<trustDomain>/ns/<ns>/sa/*` of
 *   the namespaces of this workspace and of every workspace that imports the Service, in every
 *   cluster (trust domain per cluster). An AccessPolicy of the workspace that covers every pod of
 *   the Service replaces that AuthorizationPolicy (its enforced rules) and that PeerAuthentication
 *   (its `authn`), as Gloo documents; one that covers only some of the Service's pods cannot
 *   (Istio ORs ALLOW policies and has no "all but these pods" selector): ACCESS_NOT_ENFORCED.
 * - `serviceIsolation.trimProxyConfig` (or `trimAllProxyConfig`) → per owned workload a Sidecar
 *   `sidecar-<workload>-<ns>-<cluster>-<ws>` with `workloadSelector` = its pod labels and egress
 *   hosts = the mesh namespace, the workspace's own namespaces in that cluster (`<ns>/*`), and
 *   `*` + `/<host>` (any namespace) for every imported Service, every visible VirtualDestination and ExternalService.
 *
 * Import/export itself (`exportTo` of destinations) is applied by the destination translators.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { accessPolicyCoverage, type AccessPolicyCoverage } from "./access-policy.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import { DestinationCode, consumersOf, serviceVisibleTo, cmpStr, effectiveOptions, globalSettings, namespaceOwner, trustDomainOf } from "./destination-common.js";
import { outputMetadata, type ParentRef } from "./labels.js";
import { serviceHost, stableName } from "./names.js";
import { asArray, asRecord, labelsMatch, type Labels } from "./selectors.js";
import { sidecarName, trimPolicySelects } from "./trim-proxy-config.js";
import { SpecTable } from "./spec-table.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

/** The keys of `spec.options` this module reads; any other set key is reported as UNSUPPORTED_FIELD. */
const SETTINGS_OPTIONS = ["serviceIsolation", "federation", "eastWestGateways", "virtualDestClientMode", "trimAllProxyConfig"] as const;

export function translateWorkspaceSettings(ctx: WorkspaceContext): TranslatorOutput {
  const ws = ctx.workspace;
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  const settings = ws.settings;
  const global = globalSettings(ctx.index);
  const source = settings ?? global;
  if (source === undefined) return { resources, diagnostics };
  if (settings !== undefined) {
    diagnostics.push(...reportUnsupported(ctx, settings, asRecord(settings.spec), "/spec", ["importFrom", "exportTo", "options"]));
    diagnostics.push(...reportUnsupported(ctx, settings, asRecord(asRecord(settings.spec).options), "/spec/options", SETTINGS_OPTIONS));
  }
  const options = effectiveOptions(ctx);
  const iso = asRecord(options.serviceIsolation);
  const layers = asRecord(iso.enforcementLayers);
  if (layers.cni === true && settings !== undefined) {
    diagnostics.push(ctx.diag(settings, TranslateCode.UnsupportedField, Severity.Warning, "/spec/options/serviceIsolation/enforcementLayers/cni", "CNI (Cilium) enforcement is not rendered by gitmesh; only the Istio mesh layer is."));
  }
  const isolated = iso.enabled === true;
  const trim = (isolated && iso.trimProxyConfig !== false && iso.trimProxyConfig !== undefined) || options.trimAllProxyConfig === true;

  if (isolated) {
    const out = isolation(ctx, source);
    resources.push(...out.resources);
    diagnostics.push(...out.diagnostics);
  }
  if (trim) resources.push(...trimmedSidecars(ctx, source));
  return { resources, diagnostics };
}

function serviceParent(cluster: string, namespace: string, name: string, kind: string, file: string | undefined): ParentRef {
  return { kind, name, namespace, cluster, ...(file === undefined ? {} : { file }) };
}

/** How far the workspace's AccessPolicies cover a Service's pods, for one kind of rule. */
type Cover = { readonly full: boolean; readonly partial: readonly AccessPolicyCoverage[] };

/**
 * Whether the AccessPolicy targets (`authz` or `authn` ones, per `flag`) in the Service's cluster
 * and namespace select every pod the Service selects: a target whose labels are a subset of the
 * Service's selector does for any pod; otherwise every discovered pod of the Service must match
 * some target. Targets that select some but not all of them are returned as `partial`.
 */
function coverOf(targets: readonly AccessPolicyCoverage[], flag: "authz" | "authn", selector: Labels, pods: readonly Labels[]): Cover {
  const relevant = targets.filter((t) => t[flag]);
  if (relevant.length === 0) return { full: false, partial: [] };
  if (relevant.some((t) => labelsMatch(t.matchLabels, selector))) return { full: true, partial: [] };
  const touching = relevant.filter((t) => pods.some((p) => labelsMatch(t.matchLabels, p)));
  if (touching.length === 0) return { full: false, partial: [] };
  const full = pods.every((p) => touching.some((t) => labelsMatch(t.matchLabels, p)));
  return { full, partial: full ? [] : touching };
}

function isolation(ctx: WorkspaceContext, source: { source: { file: string } }): TranslatorOutput {
  const ws = ctx.workspace;
  const out: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  const coverage = accessPolicyCoverage(ctx);
  // principals of a set of workspaces, memoised by the sorted set
  const memo = new Map<string, string[]>();
  const principalsFor = (workspaces: readonly string[]): string[] => {
    const key = workspaces.join(",");
    let p = memo.get(key);
    if (p === undefined) {
      const set = new Set<string>();
      for (const w of workspaces) {
        for (const [cluster, nss] of ctx.index.workspaces.get(w)?.namespaces ?? []) {
          const td = trustDomainOf(ctx.snapshot(cluster));
          if (td === undefined) continue;
          for (const ns of nss) set.add(`${td}/ns/${ns}/sa/*`);
        }
      }
      p = [...set].sort(cmpStr);
      memo.set(key, p);
    }
    return p;
  };
  // One spec object per distinct content, shared by the clusters that render it (see SpecTable).
  const peerSpecs = new SpecTable();
  const allowSpecs = new SpecTable();
  for (const cluster of ws.clusters) {
    const snap = ctx.snapshot(cluster);
    const owned = new Set(ws.namespaces.get(cluster) ?? []);
    for (const svc of snap?.services ?? []) {
      if (!owned.has(svc.namespace) || namespaceOwner(ctx.index, cluster, svc.namespace) !== ws.name) continue;
      const selector = svc.selector ?? {};
      if (Object.keys(selector).length === 0) continue;
      const consumers = consumersOf(ctx, { kind: "Service", name: svc.name, namespace: svc.namespace, cluster, labels: svc.labels ?? {}, workspace: ws.name });
      const principalsKey = [ws.name, ...consumers].sort(cmpStr);
      const principals = principalsFor(principalsKey);
      const name = stableName("settings", svc.name, svc.namespace, cluster, ws.name);
      const meta = outputMetadata(name, svc.namespace, cluster, ws.name, serviceParent(cluster, svc.namespace, svc.name, "Service", source.source.file));
      const selectorKey = JSON.stringify(selector);
      const peer = peerSpecs.get(selectorKey, () => ({ mtls: { mode: "STRICT" }, selector: { matchLabels: selector } }));
      const allow = allowSpecs.get(`${principalsKey.join(",")}\n${selectorKey}`, () => ({ action: "ALLOW", rules: [{ from: [{ source: { principals } }] }], selector: { matchLabels: selector } }));
      const targets = coverage.filter((t) => t.cluster === cluster && t.namespace === svc.namespace);
      const pods = targets.length === 0 ? [] : (snap?.workloads ?? []).filter((w) => w.namespace === svc.namespace && labelsMatch(selector, w.podLabels)).map((w) => w.podLabels);
      const authz = coverOf(targets, "authz", selector, pods);
      const authn = coverOf(targets, "authn", selector, pods);
      for (const t of authz.partial) {
        diagnostics.push(ctx.diag(t.policy, DestinationCode.AccessNotEnforced, Severity.Error, "/spec", `selects only some pods of Service ${svc.namespace}/${svc.name} in cluster "${cluster}", whose workspace isolates its services: the isolation's ALLOW for the Service applies to those pods too and Istio ORs ALLOW policies, so this AccessPolicy does NOT restrict the workspace's clients there. Select every pod of the Service (its pod selector), or split the Service.`));
      }
      if (!authn.full) out.push({ cluster, resource: { apiVersion: "security.istio.io/v1", kind: "PeerAuthentication", metadata: meta, spec: peer } });
      if (!authz.full) out.push({ cluster, resource: { apiVersion: "security.istio.io/v1", kind: "AuthorizationPolicy", metadata: meta, spec: allow } });
    }
  }
  return { resources: out, diagnostics };
}

function trimmedSidecars(ctx: WorkspaceContext, source: { source: { file: string } }): Emitted[] {
  const ws = ctx.workspace;
  const out: Emitted[] = [];
  const globalHosts = new Set<string>();
  for (const kind of ["VirtualDestination", "ExternalService"]) {
    for (const o of ctx.visible(kind)) for (const h of asArray(asRecord(o.spec).hosts)) if (typeof h === "string") globalHosts.add(`*/${h}`);
  }
  // One spec per distinct content (SpecTable): the same workload's Sidecar in every cluster that runs it.
  const sidecarSpecs = new SpecTable();
  const egressIds = new Map<string, number>();
  for (const cluster of ws.clusters) {
    const snap = ctx.snapshot(cluster);
    const owned = ws.namespaces.get(cluster) ?? [];
    const hosts = new Set<string>(globalHosts);
    const meshNs = snap?.meshes?.[0]?.namespace ?? "istio-system";
    hosts.add(`${meshNs}/*`);
    for (const ns of owned) hosts.add(`${ns}/*`);
    for (const svc of snap?.services ?? []) {
      if (owned.includes(svc.namespace)) continue;
      if (serviceVisibleTo(ctx, { cluster, service: svc, owner: namespaceOwner(ctx.index, cluster, svc.namespace) })) hosts.add(`*/${serviceHost(svc.name, svc.namespace)}`);
    }
    const egressHosts = [...hosts].sort(cmpStr);
    // Clusters with the same egress hosts share one id in the spec key (the list is long, the key per workload short).
    const hostsKey = egressHosts.join(" ");
    let egressKey = egressIds.get(hostsKey);
    if (egressKey === undefined) egressIds.set(hostsKey, (egressKey = egressIds.size));
    for (const w of snap?.workloads ?? []) {
      if (!owned.includes(w.namespace) || namespaceOwner(ctx.index, cluster, w.namespace) !== ws.name) continue;
      // A TrimProxyConfigPolicy that selects the workload renders its one Sidecar (trim-proxy-config.ts).
      if (trimPolicySelects(ctx, cluster, w)) continue;
      const name = sidecarName(w, cluster, ws.name);
      out.push({
        cluster,
        resource: {
          apiVersion: "networking.istio.io/v1",
          kind: "Sidecar",
          metadata: outputMetadata(name, w.namespace, cluster, ws.name, serviceParent(cluster, w.namespace, w.name, w.kind, source.source.file)),
          spec: sidecarSpecs.get(`${egressKey}\n${JSON.stringify(w.podLabels)}`, () => ({ egress: [{ hosts: egressHosts }], workloadSelector: { labels: w.podLabels } })),
        },
      });
    }
  }
  return out;
}
