/**
 * The fleet analysis: `analyze(input) → Insight[]`. Pure — every input is in the signature ("today"
 * included), no I/O, clock or logging — and deterministic (sorted output). One small function per
 * code; each reads what it needs and returns its findings. Selection questions (which policy applies
 * to which route or destination, which workspaces import what) are answered by src/translate's own
 * functions, so an insight never disagrees with what is rendered.
 */
import { Severity } from "../core/index.js";
import {
  effectiveOptions,
  flattenRoutes,
  globMatch,
  indexOf,
  labelsMatch,
  objectSelector,
  objectSelectorMatches,
  selectServices,
  toDesiredInput,
  winningPolicy,
  workspaceContext,
  workspacePeers,
  type InputObject,
  type TranslationIndex,
  type WorkspaceContext,
} from "../translate/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import { INSIGHT_CODES, InsightCode } from "./codes.js";
import { istioMinor, istioRelease, ISTIO_RELEASES_SOURCE } from "./istio-releases.js";
import type { AnalyzeOptions, Insight, InsightInput } from "./types.js";

const DAY_MS = 86_400_000;

/** Every finding about the fleet, sorted (severity, code, cluster, workspace, file, line, message). */
export function analyze(input: InsightInput, options: AnalyzeOptions = {}): Insight[] {
  const index = input.desired === undefined ? undefined : indexOf(toDesiredInput(input.desired), input.discovery);
  const contexts = index === undefined ? [] : index.workspaceNames.flatMap((w) => workspaceContext(index, w) ?? []);
  const todayMs = parseDay(input.today);
  if (todayMs === undefined) throw new TypeError(`analyze: today ${JSON.stringify(input.today)} is not an ISO 8601 date (e.g. 2026-11-29)`);
  const found: Insight[] = [
    ...contexts.flatMap(mtlsPermissive),
    ...(index === undefined ? [] : policiesSelectingNothing(index, input.translation?.diagnostics ?? [])),
    ...contexts.flatMap(multiclusterWithoutOutlierDetection),
    ...routesWithoutTimeout(contexts),
    ...istioVersionSkew(input.discovery),
    ...istioEndOfLife(input.discovery, todayMs),
    ...contexts.flatMap(exportsNotImported),
    ...certificatesExpiring(input.certificates ?? [], todayMs, options.certificateWarningDays ?? 7),
    ...sidecarsMissing(input.discovery, index),
    ...(index === undefined ? [] : trafficWithoutRoute(index, contexts, input.traffic ?? [])),
  ];
  return sortInsights(found);
}

// ---------------------------------------------------------------------------------------------
// configuration (Git)

/** AccessPolicy `authn.tlsMode` PERMISSIVE/DISABLE in a workspace whose settings isolate its services (STRICT). */
function mtlsPermissive(ctx: WorkspaceContext): Insight[] {
  const isolation = record(effectiveOptions(ctx).serviceIsolation);
  if (isolation.enabled !== true) return [];
  const out: Insight[] = [];
  for (const ap of ctx.own("AccessPolicy")) {
    const mode = record(record(record(ap.spec).config).authn).tlsMode;
    if (mode !== "PERMISSIVE" && mode !== "DISABLE") continue;
    out.push(
      fromGit(InsightCode.MtlsPermissive, ap, ctx.workspace.name, "/spec/config/authn/tlsMode", {
        message: `AccessPolicy ${ap.metadata.namespace ?? ""}/${ap.metadata.name} sets mTLS ${mode} for the workloads it selects, but workspace "${ctx.workspace.name}" isolates its services (serviceIsolation, STRICT mTLS): those workloads accept ${mode === "DISABLE" ? "only plaintext" : "plaintext"} traffic that bypasses the isolation's identities.`,
        fix: "Set authn.tlsMode to STRICT (or remove authn so the workspace's STRICT applies); if a client outside the mesh needs plaintext, move that workload out of the isolated workspace.",
      }),
    );
  }
  return out;
}

/** Translation's SELECTS_NOTHING diagnostics on policies (kinds ending in `Policy`). */
function policiesSelectingNothing(index: TranslationIndex, diagnostics: readonly { code: string; file?: string; line?: number; path?: string; message: string; object?: { kind: string; name: string; namespace?: string; cluster?: string } }[]): Insight[] {
  const seen = new Set<string>();
  const out: Insight[] = [];
  for (const d of diagnostics) {
    if (d.code !== "SELECTS_NOTHING" || d.object === undefined || !d.object.kind.endsWith("Policy")) continue;
    const id = `${d.file ?? ""}:${d.line ?? 0}:${d.path ?? ""}`;
    if (seen.has(id)) continue;
    seen.add(id);
    const o = d.object;
    const workspace = index.owner.get(`${o.kind}/${o.cluster ?? ""}/${o.namespace ?? index.adminNamespace}/${o.name}`) || undefined;
    out.push({
      code: InsightCode.PolicySelectsNothing,
      severity: INSIGHT_CODES.POLICY_SELECTS_NOTHING.severity,
      ...(o.cluster === undefined ? {} : { cluster: o.cluster }),
      ...(workspace === undefined ? {} : { workspace }),
      object: { kind: o.kind, name: o.name, ...(o.namespace === undefined ? {} : { namespace: o.namespace }) },
      ...(d.file === undefined ? {} : { file: d.file }),
      ...(d.line === undefined ? {} : { line: d.line }),
      message: `${o.kind} ${o.namespace ?? ""}/${o.name}${d.path ? ` (${d.path})` : ""} ${d.message}`,
      fix: "Correct the selector (labels, name, namespace, cluster, workspace) so that it matches what the policy is meant for, or delete the policy if it is no longer needed.",
    });
  }
  return out;
}

/** A VirtualDestination whose backing Services are in two or more clusters, with no OutlierDetectionPolicy of its workspace on it. */
function multiclusterWithoutOutlierDetection(ctx: WorkspaceContext): Insight[] {
  const out: Insight[] = [];
  const policies = ctx.own("OutlierDetectionPolicy");
  for (const vd of ctx.own("VirtualDestination")) {
    const clusters = new Set<string>();
    for (const sel of array(record(vd.spec).services)) for (const ref of selectServices(ctx, objectSelector(sel))) clusters.add(ref.cluster);
    if (clusters.size < 2) continue;
    const target = ctx.selectable(vd);
    const covered = policies.some((p) => {
      const entries = array(record(p.spec).applyToDestinations);
      return entries.length === 0 || entries.some((e) => record(e).kind === "VIRTUAL_DESTINATION" && objectSelectorMatches(objectSelector(record(e).selector), target));
    });
    if (covered) continue;
    const list = [...clusters].sort().join(", ");
    out.push(
      fromGit(InsightCode.MulticlusterNoOutlierDetection, vd, ctx.workspace.name, "", {
        message: `VirtualDestination ${vd.metadata.namespace ?? ""}/${vd.metadata.name} is backed by Services in ${clusters.size} clusters (${list}) but no OutlierDetectionPolicy of workspace "${ctx.workspace.name}" selects it: Istio never ejects a failing endpoint, so requests keep going to an unhealthy cluster instead of failing over (locality failover needs outlier detection).`,
        fix: "Add an OutlierDetectionPolicy whose applyToDestinations selects this VirtualDestination (kind: VIRTUAL_DESTINATION); add a FailoverPolicy to choose where traffic goes when a locality fails.",
      }),
    );
  }
  return out;
}

/** Forwarding routes whose winning RetryTimeoutPolicy sets no requestTimeout (or that have none). */
function routesWithoutTimeout(contexts: readonly WorkspaceContext[]): Insight[] {
  const out: Insight[] = [];
  // A delegated child's routes are reached from every parent that delegates to it: reported once, in the child's workspace.
  const seen = new Set<string>();
  for (const ctx of contexts) for (const rt of ctx.own("RouteTable")) {
    for (const route of flattenRoutes(ctx, rt).routes) {
      const id = `${route.table.key}#${route.path}`;
      if (seen.has(id) || route.route.forwardTo === undefined) continue;
      seen.add(id);
      const policy = winningPolicy(ctx, route, "RetryTimeoutPolicy");
      if (policy !== undefined && record(record(policy.spec).config).requestTimeout !== undefined) continue;
      const t = route.table;
      out.push(
        fromGit(InsightCode.RouteWithoutTimeout, t, ctx.ownerOf(t), route.path, {
          message: `route "${route.name}" of RouteTable ${t.metadata.namespace ?? ""}/${t.metadata.name} forwards without a request timeout${policy === undefined ? "" : ` (RetryTimeoutPolicy ${policy.metadata.namespace ?? ""}/${policy.metadata.name} applies but sets only retries)`}: Istio's default for HTTP routes is no timeout, so a hung upstream holds the caller's request and connection indefinitely.`,
          fix: "Add a RetryTimeoutPolicy with config.requestTimeout (e.g. 15s) whose applyToRoutes selects the route's labels (or the route table's), or set requestTimeout on the policy that already applies.",
        }),
      );
    }
  }
  return out;
}

/** An exportTo entry none of whose selected workspaces imports from this workspace. */
function exportsNotImported(ctx: WorkspaceContext): Insight[] {
  const settings = ctx.workspace.settings;
  if (settings === undefined) return [];
  const index = ctx.index;
  const me = ctx.workspace.name;
  const consumers = new Set(workspacePeers(index, me).consumers);
  const out: Insight[] = [];
  array(record(settings.spec).exportTo).forEach((entry, i) => {
    const selectors = array(record(entry).workspaces);
    const selected = index.workspaceNames.filter(
      (w) =>
        w !== me &&
        (selectors.length === 0 ||
          selectors.some((s) => globMatch(string(record(s).name), w) && labelsMatch(labelMap(record(s).selector), index.workspaces.get(w)?.labels ?? {}))),
    );
    if (selected.some((w) => consumers.has(w))) return;
    out.push(
      fromGit(InsightCode.ExportNotImported, settings, me, `/spec/exportTo/${i}`, {
        message:
          selected.length === 0
            ? `exportTo entry ${i} of workspace "${me}" selects no workspace: nothing is shared through it.`
            : `exportTo entry ${i} of workspace "${me}" exports to ${selected.map((w) => `"${w}"`).join(", ")}, but none of them imports from "${me}" (importFrom in their WorkspaceSettings): sharing needs both sides, so nothing is shared.`,
        fix: `Add an importFrom entry selecting workspace "${me}" to the WorkspaceSettings of the workspace that should consume it, or remove the export.`,
      }),
    );
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// discovery

/** Clusters whose newest Istio minor is older than the fleet's newest. */
function istioVersionSkew(discovery: ReadonlyMap<string, DiscoverySnapshot>): Insight[] {
  const newest = new Map<string, string>();
  for (const [cluster, snap] of discovery) {
    for (const m of snap.meshes) {
      const minor = m.version === undefined ? undefined : istioMinor(m.version);
      if (minor !== undefined && (newest.get(cluster) === undefined || compareMinor(minor, newest.get(cluster)!) > 0)) newest.set(cluster, minor);
    }
  }
  const minors = [...new Set(newest.values())].sort(compareMinor);
  if (minors.length < 2) return [];
  const top = minors[minors.length - 1]!;
  const ahead = [...newest].filter(([, v]) => v === top).map(([c]) => c).sort();
  return [...newest]
    .filter(([, v]) => v !== top)
    .sort(([a], [b]) => cmp(a, b))
    .map(([cluster, v]) => ({
      code: InsightCode.IstioVersionSkew,
      severity: INSIGHT_CODES.ISTIO_VERSION_SKEW.severity,
      cluster,
      message: `cluster "${cluster}" runs Istio ${v} while ${ahead.map((c) => `"${c}"`).join(", ")} run${ahead.length === 1 ? "s" : ""} ${top}: clusters that share a mesh exchange configuration and certificates across control planes, and Istio tests multi-cluster meshes with equal versions.`,
      fix: `Upgrade the control plane of "${cluster}" to Istio ${top} (a canary revision, then move namespaces over), so that every cluster runs the same minor version.`,
    }));
}

/** Control planes whose Istio minor version is past its end of life on `today`. */
function istioEndOfLife(discovery: ReadonlyMap<string, DiscoverySnapshot>, todayMs: number): Insight[] {
  const out: Insight[] = [];
  for (const [cluster, snap] of discovery) {
    for (const m of snap.meshes) {
      if (m.version === undefined) continue;
      const release = istioRelease(m.version);
      if (release === undefined || Date.parse(`${release.endOfLife}T00:00:00Z`) > todayMs) continue;
      out.push({
        code: InsightCode.IstioEndOfLife,
        severity: INSIGHT_CODES.ISTIO_END_OF_LIFE.severity,
        cluster,
        object: { kind: "Deployment", name: m.revision === "default" ? "istiod" : `istiod-${m.revision}`, namespace: m.namespace, cluster },
        message: `cluster "${cluster}" runs Istio ${m.version} (revision ${m.revision}); Istio ${release.minor} reached end of life on ${release.endOfLife}${release.expected ? " (the month istio.io announced)" : ""}: it gets no more security fixes (${ISTIO_RELEASES_SOURCE}).`,
        fix: `Upgrade the control plane of "${cluster}" to a supported Istio minor version (a canary revision, then move namespaces and gateways over).`,
      });
    }
  }
  return out;
}

/** Namespace injection on (istio-injection=enabled, or an istio.io/rev label not overridden) and a workload opting out. */
function sidecarsMissing(discovery: ReadonlyMap<string, DiscoverySnapshot>, index: TranslationIndex | undefined): Insight[] {
  const out: Insight[] = [];
  for (const [cluster, snap] of discovery) {
    const injected = new Set(
      snap.namespaces
        .filter((n) => n.labels["istio-injection"] === "enabled" || (n.labels["istio.io/rev"] !== undefined && n.labels["istio-injection"] !== "disabled"))
        .map((n) => n.name),
    );
    for (const w of snap.workloads) {
      if (!injected.has(w.namespace) || w.podLabels["sidecar.istio.io/inject"] !== "false") continue;
      const workspace = index === undefined ? undefined : ownerOf(index, cluster, w.namespace);
      out.push({
        code: InsightCode.SidecarMissing,
        severity: INSIGHT_CODES.SIDECAR_MISSING.severity,
        cluster,
        ...(workspace === undefined ? {} : { workspace }),
        object: { kind: w.kind, name: w.name, namespace: w.namespace, cluster },
        message: `${w.kind} ${w.namespace}/${w.name} in cluster "${cluster}" runs without a sidecar (pod label sidecar.istio.io/inject: "false") in a namespace that injects one: its traffic is plaintext, outside mTLS, authorization and every route policy of the mesh.`,
        fix: `Remove the sidecar.istio.io/inject: "false" label from the pod template of ${w.name} and restart it; if it must stay outside the mesh, move it to a namespace without injection.`,
      });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// certificates, traffic

function certificatesExpiring(certs: readonly { cluster: string; subject: string; notAfter: string }[], todayMs: number, warnDays: number): Insight[] {
  const out: Insight[] = [];
  for (const c of certs) {
    const at = Date.parse(c.notAfter);
    if (!Number.isFinite(at)) continue;
    const days = (at - todayMs) / DAY_MS;
    if (days > warnDays) continue;
    const expired = days <= 0;
    out.push({
      code: InsightCode.CertificateExpiring,
      severity: expired ? Severity.Error : INSIGHT_CODES.CERTIFICATE_EXPIRING.severity,
      cluster: c.cluster,
      message: expired
        ? `the ${c.subject} of cluster "${c.cluster}" expired on ${new Date(at).toISOString()}: the cluster cannot authenticate with it.`
        : `the ${c.subject} of cluster "${c.cluster}" expires on ${new Date(at).toISOString()} (in ${Math.max(0, Math.floor(days))} day${Math.floor(days) === 1 ? "" : "s"}) and has not been renewed.`,
      fix: expired
        ? `Re-issue the cluster's identity (gitmesh cluster reissue ${c.cluster}) and give the agent the new bootstrap credential.`
        : `Check that the agent of "${c.cluster}" is connected and renewing (it renews its certificate before expiry); if it cannot, re-issue the identity (gitmesh cluster reissue ${c.cluster}).`,
    });
  }
  return out;
}

/** Services with observed traffic that no RouteTable forwards to and no VirtualDestination is backed by. */
function trafficWithoutRoute(index: TranslationIndex, contexts: readonly WorkspaceContext[], traffic: readonly { destination: { cluster: string; namespace: string; service: string }; rps: number }[]): Insight[] {
  if (traffic.length === 0) return [];
  // Routed services as (cluster or '' for any, namespace, name).
  const routed = new Set<string>();
  for (const rt of index.byKind.get("RouteTable") ?? []) {
    const spec = record(rt.spec);
    const tableNs = rt.metadata.namespace ?? index.adminNamespace;
    const destinations = [...array(spec.http).flatMap((r) => array(record(record(r).forwardTo).destinations)), ...(spec.defaultDestination === undefined ? [] : [spec.defaultDestination])];
    for (const d of destinations) {
      const dr = record(d);
      if ((string(dr.kind) ?? "SERVICE") !== "SERVICE") continue;
      const ref = record(dr.ref);
      const name = string(ref.name);
      if (name !== undefined) routed.add(`${string(ref.cluster) ?? ""}/${string(ref.namespace) ?? tableNs}/${name}`);
    }
  }
  for (const ctx of contexts) {
    for (const vd of ctx.own("VirtualDestination")) for (const sel of array(record(vd.spec).services)) for (const ref of selectServices(ctx, objectSelector(sel))) routed.add(`${ref.cluster}/${ref.service.namespace}/${ref.service.name}`);
  }
  const unrouted = new Map<string, { cluster: string; namespace: string; service: string; rps: number }>();
  for (const e of traffic) {
    const d = e.destination;
    if (!(e.rps > 0) || routed.has(`${d.cluster}/${d.namespace}/${d.service}`) || routed.has(`/${d.namespace}/${d.service}`)) continue;
    const key = `${d.cluster}/${d.namespace}/${d.service}`;
    const prev = unrouted.get(key);
    unrouted.set(key, { cluster: d.cluster, namespace: d.namespace, service: d.service, rps: (prev?.rps ?? 0) + e.rps });
  }
  return [...unrouted.values()].map((u) => {
    const workspace = ownerOf(index, u.cluster, u.namespace);
    return {
      code: InsightCode.TrafficWithoutRoute,
      severity: INSIGHT_CODES.TRAFFIC_WITHOUT_ROUTE.severity,
      cluster: u.cluster,
      ...(workspace === undefined ? {} : { workspace }),
      object: { kind: "Service", name: u.service, namespace: u.namespace, cluster: u.cluster },
      message: `Service ${u.namespace}/${u.service} in cluster "${u.cluster}" receives traffic (${round(u.rps)} req/s) but no RouteTable forwards to it and no VirtualDestination is backed by it: that traffic gets Istio's defaults (no timeout, no retries, no route policy) and does not appear in any reviewed route.`,
      fix: "Add a RouteTable (or a VirtualDestination) for the Service so that its traffic follows reviewed policy, or find the client that calls it directly and route it through the intended destination.",
    };
  });
}

// ---------------------------------------------------------------------------------------------
// helpers

function fromGit(code: InsightCode, obj: InputObject, workspace: string, pointer: string, text: { message: string; fix: string }): Insight {
  return {
    code,
    severity: INSIGHT_CODES[code].severity,
    ...(obj.cluster === undefined ? {} : { cluster: obj.cluster }),
    workspace,
    object: { kind: obj.kind, name: obj.metadata.name, ...(obj.metadata.namespace === undefined ? {} : { namespace: obj.metadata.namespace }), ...(obj.cluster === undefined ? {} : { cluster: obj.cluster }) },
    file: obj.source.file,
    line: lineOf(obj, pointer),
    ...text,
  };
}

/** Line of the node at `pointer`, or of its nearest ancestor with a known position, or of the document. */
function lineOf(obj: InputObject, pointer: string): number {
  let p = pointer;
  while (p !== "") {
    const hit = obj.positions?.[p];
    if (hit !== undefined) return hit[0];
    p = p.slice(0, p.lastIndexOf("/"));
  }
  return obj.source.line;
}

function ownerOf(index: TranslationIndex, cluster: string, namespace: string): string | undefined {
  for (const w of index.workspaceNames) if (index.workspaces.get(w)?.namespaces.get(cluster)?.includes(namespace)) return w;
  return undefined;
}

const severityRank: Record<Severity, number> = { error: 0, warning: 1, info: 2 };

export function sortInsights(list: readonly Insight[]): Insight[] {
  return [...list].sort(
    (a, b) =>
      severityRank[a.severity] - severityRank[b.severity] ||
      cmp(a.code, b.code) ||
      cmp(a.cluster ?? "", b.cluster ?? "") ||
      cmp(a.workspace ?? "", b.workspace ?? "") ||
      cmp(a.file ?? "", b.file ?? "") ||
      (a.line ?? 0) - (b.line ?? 0) ||
      cmp(a.message, b.message),
  );
}

function parseDay(today: string): number | undefined {
  const t = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(today) ? `${today}T00:00:00Z` : today);
  return Number.isFinite(t) ? t : undefined;
}

function compareMinor(a: string, b: string): number {
  const [am = 0, an = 0] = a.split(".").map(Number);
  const [bm = 0, bn = 0] = b.split(".").map(Number);
  return am - bm || an - bn;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function round(n: number): string {
  return n >= 10 ? n.toFixed(0) : n.toFixed(1);
}

function record(v: unknown): Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function array(v: unknown): readonly unknown[] {
  return Array.isArray(v) ? v : [];
}

function string(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function labelMap(v: unknown): Record<string, string> | undefined {
  const r = record(v);
  return Object.keys(r).length === 0 ? undefined : Object.fromEntries(Object.entries(r).map(([k, x]) => [k, String(x)]));
}
