/**
 * TrimProxyConfigPolicy → per selected workload (its pods' labels, in each cluster) an Istio Sidecar
 * whose egress hosts are the included destinations only (plus the control plane's namespace, which
 * every proxy needs): Services as `*\/<svc>.<ns>.svc.cluster.local`, VirtualDestinations and
 * ExternalServices as `*\/<host>`.
 *
 * Selection (trim_proxy_config_policy.proto): `applyToWorkloads` omitted = every workload of the
 * workspace; `includedDestinations` omitted or matching nothing = no trimming (nothing rendered, a
 * SELECTS_NOTHING warning); `{}` selects every destination of its kind the workspace sees. Several
 * policies on one workload: the union of their destinations, in one Sidecar (Istio allows one per
 * workload) named as WorkspaceSettings' trimmed Sidecars are: for a workload a policy selects, the
 * policy's Sidecar replaces the one `serviceIsolation.trimProxyConfig` would render.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import type { WorkspaceContext } from "./context.js";
import { cmpStr, namespaceOwner, objectSelector, selectServices } from "./destination-common.js";
import type { DiscoveredWorkload, InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { serviceHost, stableName } from "./names.js";
import { asArray, asRecord, asString, objectSelectorMatches } from "./selectors.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

/** The name of the one Sidecar a workload gets (WorkspaceSettings' trimming uses it too). */
export function sidecarName(w: Pick<DiscoveredWorkload, "name" | "namespace">, cluster: string, workspace: string): string {
  return stableName("sidecar", w.name, w.namespace, cluster, workspace);
}

/** Whether one of the workspace's TrimProxyConfigPolicies trims this workload (then it renders the workload's Sidecar). */
export function trimPolicySelects(ctx: WorkspaceContext, cluster: string, w: DiscoveredWorkload): boolean {
  return ctx.own("TrimProxyConfigPolicy").some((p) => selectsWorkload(ctx, p, cluster, w) && includedHosts(ctx, p, cluster).hosts !== undefined);
}

function selectsWorkload(ctx: WorkspaceContext, policy: InputObject, cluster: string, w: DiscoveredWorkload): boolean {
  const sels = asArray(asRecord(policy.spec).applyToWorkloads);
  if (sels.length === 0) return true;
  return sels.some((raw) => {
    const s = asRecord(raw);
    if ((asString(s.kind) ?? "KUBE") !== "KUBE") return false;
    return objectSelectorMatches(objectSelector(s.selector), { kind: w.kind, name: w.name, namespace: w.namespace, cluster, labels: w.podLabels, workspace: ctx.workspace.name });
  });
}

interface Included {
  /** Egress hosts of the included destinations; undefined: the policy trims nothing there. */
  readonly hosts: ReadonlySet<string> | undefined;
  readonly diagnostics: readonly Diagnostic[];
}

/** Per workspace context (one index): policy key + cluster → its included destinations, computed once. */
const includedMemo = new WeakMap<WorkspaceContext, Map<string, Included>>();

/** One policy's included destinations in one cluster (asked by this translator and, per workload, by WorkspaceSettings' trimming). */
function includedHosts(ctx: WorkspaceContext, policy: InputObject, cluster: string): Included {
  let memo = includedMemo.get(ctx);
  if (memo === undefined) {
    memo = new Map();
    includedMemo.set(ctx, memo);
  }
  const key = `${policy.key}\n${cluster}`;
  const hit = memo.get(key);
  if (hit !== undefined) return hit;
  const diagnostics: Diagnostic[] = [];
  const hosts = new Set<string>();
  asArray(asRecord(asRecord(policy.spec).config).includedDestinations).forEach((raw, i) => {
    const d = asRecord(raw);
    const kind = asString(d.kind) ?? "SERVICE";
    const sel = objectSelector(d.selector);
    if (d.port !== undefined) diagnostics.push(ctx.diag(policy, TranslateCode.UnsupportedField, Severity.Warning, `/spec/config/includedDestinations/${String(i)}/port`, "a Sidecar includes a destination with all its ports; port is not used"));
    if (kind === "SERVICE") {
      for (const ref of selectServices(ctx, sel, [cluster])) hosts.add(`*/${serviceHost(ref.service.name, ref.service.namespace)}`);
    } else if (kind === "VIRTUAL_DESTINATION" || kind === "EXTERNAL_SERVICE") {
      for (const o of ctx.select(kind === "VIRTUAL_DESTINATION" ? "VirtualDestination" : "ExternalService", sel)) {
        for (const h of asArray(asRecord(o.spec).hosts)) if (typeof h === "string") hosts.add(`*/${h}`);
      }
    } else {
      diagnostics.push(ctx.diag(policy, TranslateCode.UnsupportedField, Severity.Warning, `/spec/config/includedDestinations/${String(i)}/kind`, `${kind} destinations are not translated`));
    }
  });
  const out: Included = { hosts: hosts.size === 0 ? undefined : hosts, diagnostics };
  memo.set(key, out);
  return out;
}

export function translateTrimProxyConfigPolicies(ctx: WorkspaceContext): TranslatorOutput {
  const policies = [...ctx.own("TrimProxyConfigPolicy")].sort((a, b) => cmpStr(`${a.metadata.namespace ?? ""}/${a.metadata.name}`, `${b.metadata.namespace ?? ""}/${b.metadata.name}`));
  if (policies.length === 0) return { resources: [], diagnostics: [] };
  const ws = ctx.workspace;
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  const trims = new Set<InputObject>();
  for (const cluster of ws.clusters) {
    const snap = ctx.snapshot(cluster);
    const owned = ws.namespaces.get(cluster) ?? [];
    const meshNs = snap?.meshes?.[0]?.namespace ?? "istio-system";
    const hostsOf = new Map(policies.map((p) => [p, includedHosts(ctx, p, cluster).hosts] as const));
    // The policy's own diagnostics are the same in every cluster: reported once.
    if (cluster === ws.clusters[0]) for (const p of policies) diagnostics.push(...includedHosts(ctx, p, cluster).diagnostics);
    for (const w of snap?.workloads ?? []) {
      if (!owned.includes(w.namespace) || namespaceOwner(ctx.index, cluster, w.namespace) !== ws.name) continue;
      const mine = policies.filter((p) => selectsWorkload(ctx, p, cluster, w));
      const hosts = new Set<string>();
      for (const p of mine) for (const h of hostsOf.get(p) ?? []) hosts.add(h);
      if (hosts.size === 0) continue;
      hosts.add(`${meshNs}/*`);
      const parent = mine.find((p) => hostsOf.get(p) !== undefined)!;
      for (const p of mine) if (hostsOf.get(p) !== undefined) trims.add(p);
      resources.push({
        cluster,
        resource: {
          apiVersion: "networking.istio.io/v1",
          kind: "Sidecar",
          metadata: outputMetadata(sidecarName(w, cluster, ws.name), w.namespace, cluster, ws.name, ctx.parentOf(parent)),
          spec: { egress: [{ hosts: [...hosts].sort(cmpStr) }], workloadSelector: { labels: w.podLabels } },
        },
      });
    }
  }
  for (const p of policies) {
    if (!trims.has(p)) diagnostics.push(ctx.diag(p, TranslateCode.SelectsNothing, Severity.Warning, "/spec/config/includedDestinations", "no workload of this workspace gets a trimmed configuration: includedDestinations is empty or matches no destination, or applyToWorkloads matches no workload (as in Gloo, nothing is trimmed)"));
  }
  return { resources, diagnostics };
}
