/**
 * Shared helpers of the destination translators (VirtualDestination, ExternalService, federation,
 * destination policies, access policies, workspace settings): trust domains and SPIFFE names,
 * east-west gateway endpoints, synthetic ServiceEntry addresses, port naming, exportTo lists and
 * the effective WorkspaceSettings options (a `global` WorkspaceSettings in the admin namespace
 * overrides every workspace's own options). All pure.
 */
import { isIP } from "node:net";
import { DNS1123_LABEL } from "../core/index.js";
import { globalWorkspaceSettings, shared, sharingRules, type WorkspaceContext, type TranslationIndex } from "./context.js";
import type { DiscoveredGateway, DiscoveredService, DiscoveredWorkload, DiscoveryInput, InputObject } from "./input.js";
import { asArray, asNumber, asRecord, asString, globMatch, labelsMatch, objectSelectorMatches, type Labels, type ObjectSelectorSpec, type Selectable } from "./selectors.js";

/** Codes of the destination translators (in addition to TranslateCode). */
export const DestinationCode = {
  /** Two synthetic addresses hashed to the same IP; the later object (by key) got a re-hashed address. */
  AddressCollision: "ADDRESS_COLLISION",
  /** A VirtualDestination / federated Service has a backing cluster without a usable east-west gateway. */
  NoEastWestGateway: "NO_EAST_WEST_GATEWAY",
  /** A backing cluster has no discovered Istio mesh, so no trust domain for its SPIFFE names. */
  NoMesh: "NO_MESH",
  /** More than one backing Service of a VirtualDestination in one cluster; the first (namespace, name) is used. */
  DuplicateBackingService: "DUPLICATE_BACKING_SERVICE",
  /** A destination policy selects a destination imported from another workspace; it is applied by the owner only. */
  ImportedDestination: "IMPORTED_DESTINATION",
  /** FailoverPolicy rendered without an OutlierDetectionPolicy on the same destination: Istio never fails over. */
  FailoverWithoutOutlierDetection: "FAILOVER_WITHOUT_OUTLIER_DETECTION",
  /** A named target port that discovery cannot resolve to a number. */
  NamedTargetPort: "NAMED_TARGET_PORT",
  /** An AccessPolicy rule whose allowed clients resolve to no service account: the rule is dropped (fails closed). */
  NoAllowedClients: "NO_ALLOWED_CLIENTS",
  /** An AccessPolicy (or part of one) that Istio cannot enforce for the selected destination: not rendered, an error. */
  AccessNotEnforced: "ACCESS_NOT_ENFORCED",
  /** A RootTrustPolicy selects no discovered mesh, or two policies select one mesh (oldest wins). */
  RootTrustConflict: "ROOT_TRUST_CONFLICT",
} as const;
export type DestinationCode = (typeof DestinationCode)[keyof typeof DestinationCode];

// ---------------------------------------------------------------------------------------------
// selectors

export function objectSelector(raw: unknown): ObjectSelectorSpec {
  const r = asRecord(raw);
  const labels = asRecord(r.labels);
  const out: { -readonly [K in keyof ObjectSelectorSpec]: ObjectSelectorSpec[K] } = {};
  if (Object.keys(labels).length > 0) out.labels = Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, String(v)]));
  for (const k of ["name", "namespace", "cluster", "workspace"] as const) {
    const v = asString(r[k]);
    if (v !== undefined && v !== "") out[k] = v;
  }
  return out;
}

/** A discovered Service in one cluster, with the workspace that owns its namespace there ('' = none). */
export interface ServiceRef {
  readonly cluster: string;
  readonly service: DiscoveredService;
  readonly owner: string;
}

/** Owning workspace of a (cluster, namespace) ('' = none; first workspace by name on overlaps). */
export function namespaceOwner(index: TranslationIndex, cluster: string, namespace: string): string {
  return serviceIndex(index).owners.get(cluster)?.get(namespace) ?? "";
}

interface ServiceIndex {
  /** cluster → namespace → owning workspace. */
  readonly owners: ReadonlyMap<string, ReadonlyMap<string, string>>;
  readonly all: readonly ServiceRef[];
  readonly byNamespace: ReadonlyMap<string, readonly ServiceRef[]>;
}
const serviceIndexMemo = new WeakMap<object, ServiceIndex>();

/** Every discovered Service of the fleet with its owner, built once per index. */
export function serviceIndex(index: TranslationIndex): ServiceIndex {
  // Depends on workspaces, clusters and discovery only: memoised by the index's structure.
  const cached = serviceIndexMemo.get(index.structure);
  if (cached !== undefined) return cached;
  const owners = new Map<string, Map<string, string>>();
  for (const w of index.workspaceNames) {
    for (const [c, nss] of index.workspaces.get(w)!.namespaces) {
      let m = owners.get(c);
      if (m === undefined) {
        m = new Map();
        owners.set(c, m);
      }
      for (const ns of nss) if (!m.has(ns)) m.set(ns, w);
    }
  }
  const all: ServiceRef[] = [];
  const byNamespace = new Map<string, ServiceRef[]>();
  for (const cluster of index.clusters) {
    const m = owners.get(cluster);
    for (const service of index.discovery.get(cluster)?.services ?? []) {
      const ref = { cluster, service, owner: m?.get(service.namespace) ?? "" };
      all.push(ref);
      const list = byNamespace.get(service.namespace);
      if (list === undefined) byNamespace.set(service.namespace, [ref]);
      else list.push(ref);
    }
  }
  const idx = { owners, all, byNamespace };
  serviceIndexMemo.set(index.structure, idx);
  return idx;
}

/** Workspaces this one may share with at the workspace level (resources filters not yet applied). */
interface Peers {
  /** Workspaces that may import from this one. */
  readonly consumers: readonly string[];
  /** Workspaces this one may import from. */
  readonly exporters: readonly string[];
}
const peersMemo = new WeakMap<WorkspaceContext, Peers>();

function grantsWorkspace(entries: unknown, peer: { name: string; labels: Labels }): boolean {
  return asArray(entries).some((raw) => {
    const sel = asArray(asRecord(raw).workspaces);
    return (
      sel.length === 0 ||
      sel.some((w) => {
        const r = asRecord(w);
        return globMatch(asString(r.name), peer.name) && labelsMatch(asRecord(r.selector) as Labels, peer.labels);
      })
    );
  });
}

export function peersOf(ctx: WorkspaceContext): Peers {
  const cached = peersMemo.get(ctx);
  if (cached !== undefined) return cached;
  const me = ctx.workspace;
  const consumers: string[] = [];
  const exporters: string[] = [];
  for (const w of ctx.index.workspaceNames) {
    if (w === me.name) continue;
    const other = ctx.index.workspaces.get(w)!;
    const otherSpec = sharingRules(ctx.index, w);
    const mySpec = sharingRules(ctx.index, me.name);
    if (grantsWorkspace(mySpec.exportTo, other) && grantsWorkspace(otherSpec.importFrom, me)) consumers.push(w);
    if (grantsWorkspace(otherSpec.exportTo, me) && grantsWorkspace(mySpec.importFrom, other)) exporters.push(w);
  }
  const p = { consumers, exporters };
  peersMemo.set(ctx, p);
  return p;
}

/** Workspaces (other than this one) that can see `obj` of this workspace, sorted (fast path of ctx.consumersOf). */
export function consumersOf(ctx: WorkspaceContext, obj: Selectable): string[] {
  return peersOf(ctx).consumers.filter((w) => shared(ctx.index, ctx.workspace.name, w, obj));
}

/** Whether a discovered Service is visible to the workspace: in an owned namespace, or exported by its owner and imported here. */
export function serviceVisibleTo(ctx: WorkspaceContext, ref: ServiceRef): boolean {
  if (ref.owner === ctx.workspace.name) return true;
  if (ref.owner === "" || !peersOf(ctx).exporters.includes(ref.owner)) return false;
  const svc = ref.service;
  return shared(ctx.index, ref.owner, ctx.workspace.name, { kind: "Service", name: svc.name, namespace: svc.namespace, cluster: ref.cluster, labels: svc.labels ?? {}, workspace: ref.owner });
}

/** Discovered Services visible to the workspace (owned namespaces or imported) matching an ObjectSelector. */
export function selectServices(ctx: WorkspaceContext, sel: ObjectSelectorSpec, clusters?: readonly string[]): ServiceRef[] {
  const idx = serviceIndex(ctx.index);
  const exactNs = sel.namespace !== undefined && !sel.namespace.includes("*");
  const candidates = exactNs ? (idx.byNamespace.get(sel.namespace) ?? []) : idx.all;
  const out: ServiceRef[] = [];
  for (const ref of candidates) {
    if (clusters !== undefined && !clusters.includes(ref.cluster)) continue;
    const svc = ref.service;
    if (!objectSelectorMatches(sel, { kind: "Service", name: svc.name, namespace: svc.namespace, cluster: ref.cluster, labels: svc.labels ?? {}, workspace: ref.owner })) continue;
    if (!serviceVisibleTo(ctx, ref)) continue;
    out.push(ref);
  }
  return out;
}

const workloadMemo = new WeakMap<object, Map<string, readonly DiscoveredWorkload[]>>();

/** Workloads of one namespace in a snapshot (indexed once per snapshot). */
export function workloadsIn(snap: DiscoveryInput, namespace: string): readonly DiscoveredWorkload[] {
  let m = workloadMemo.get(snap);
  if (m === undefined) {
    const built = new Map<string, DiscoveredWorkload[]>();
    for (const w of snap.workloads) {
      const list = built.get(w.namespace);
      if (list === undefined) built.set(w.namespace, [w]);
      else list.push(w);
    }
    m = built;
    workloadMemo.set(snap, m);
  }
  return m.get(namespace) ?? [];
}

/** Service accounts of the workloads a Service selects in its cluster, sorted. */
export function serviceAccountsOf(snap: DiscoveryInput | undefined, svc: DiscoveredService): string[] {
  const selector = svc.selector ?? {};
  if (snap === undefined || Object.keys(selector).length === 0) return [];
  const out = new Set<string>();
  for (const w of workloadsIn(snap, svc.namespace)) if (labelsMatch(selector, w.podLabels)) out.add(w.serviceAccount);
  return [...out].sort();
}

export function trustDomainOf(snap: DiscoveryInput | undefined): string | undefined {
  return snap?.meshes?.[0]?.trustDomain;
}

export function spiffe(trustDomain: string, namespace: string, serviceAccount: string): string {
  return `spiffe://${trustDomain}/ns/${namespace}/sa/${serviceAccount}`;
}

// ---------------------------------------------------------------------------------------------
// workspace settings

/** Effective `spec.options` of a workspace: its own WorkspaceSettings, overridden key by key by `global` in the admin namespace. */
export function effectiveOptions(ctx: WorkspaceContext): Record<string, unknown> {
  const own = asRecord(asRecord(ctx.workspace.settings?.spec).options);
  const global = globalSettings(ctx.index);
  if (global === undefined) return own;
  return { ...own, ...asRecord(asRecord(global.spec).options) };
}

export function globalSettings(index: TranslationIndex): InputObject | undefined {
  return globalWorkspaceSettings(index);
}

/** Namespaces of the given workspaces in one cluster, sorted and unique (for `exportTo`). */
export function namespacesIn(index: TranslationIndex, cluster: string, workspaces: readonly string[]): string[] {
  const out = new Set<string>();
  for (const w of workspaces) for (const ns of index.workspaces.get(w)?.namespaces.get(cluster) ?? []) out.add(ns);
  return [...out].sort();
}

// ---------------------------------------------------------------------------------------------
// east-west gateways

export interface GatewayEndpoint {
  readonly cluster: string;
  readonly address: string;
  readonly port: number;
  readonly locality: string | undefined;
  readonly network: string | undefined;
  /** The discovered gateway behind the endpoint and the pod port its Service port sends to (undefined: only hostInfoOverrides name the port). */
  readonly gateway: DiscoveredGateway;
  readonly serverPort: number | undefined;
}

/** Every port of an entry (by name) sent to the gateway's port; `portNames` sorted, so the map is in canonical key order. */
export function gatewayPorts(ep: GatewayEndpoint, portNames: readonly string[]): Record<string, number> {
  return Object.fromEntries(portNames.map((n) => [n, ep.port]));
}

/**
 * A ServiceEntry's `endpoints` reaching remote workloads through east-west gateways, with the
 * resolution they need (STATIC when every address is an IP). Built in canonical key order; the same
 * for every client cluster, so a translator builds it once and shares it.
 */
export function gatewayEntryEndpoints(eps: readonly GatewayEndpoint[], portNames: readonly string[]): { endpoints: Record<string, unknown>[]; resolution: "STATIC" | "DNS" } {
  const sorted = [...portNames].sort(cmpStr);
  return {
    endpoints: eps.map((ep) => ({ address: ep.address, ...(ep.locality === undefined ? {} : { locality: ep.locality }), ports: gatewayPorts(ep, sorted) })),
    resolution: eps.every((e) => isIpAddress(e.address)) ? "STATIC" : "DNS",
  };
}

/**
 * Endpoints through which other clusters reach `cluster`: its east-west gateways (or those the
 * workspace's `eastWestGateways` option selects), port "tls" (15443) or, for tlsTermination
 * client mode, port "https"; `hostInfoOverrides` replace the discovered addresses.
 */
export function eastWestEndpoints(ctx: WorkspaceContext, cluster: string, tlsTermination: boolean): GatewayEndpoint[] {
  const snap = ctx.snapshot(cluster);
  if (snap === undefined) return [];
  const selectors = asArray(effectiveOptions(ctx).eastWestGateways).map(asRecord);
  const out: GatewayEndpoint[] = [];
  const entries = selectors.length > 0 ? selectors : [{}];
  for (const entry of entries) {
    const sel = objectSelector(entry.selector);
    const portSel = asRecord(tlsTermination ? entry.tlsTerminationPort : entry.port);
    const wantName = asString(portSel.name) ?? (tlsTermination ? "https" : "tls");
    const wantNumber = asNumber(portSel.number);
    for (const g of snap.gateways) {
      const matches =
        selectors.length === 0
          ? g.kind === "east-west"
          : objectSelectorMatches(sel, { kind: "Service", name: g.name, namespace: g.namespace, cluster, labels: g.podLabels, workspace: "" });
      if (!matches) continue;
      const overrides = asArray(entry.hostInfoOverrides).map(asRecord);
      const found = g.ports.find((p) => (wantNumber !== undefined ? p.port === wantNumber : p.name === wantName || (!tlsTermination && p.port === 15443)));
      // hostInfoOverrides give the address and port explicitly (e.g. a load balancer in front of the gateway)
      const port = found ?? (overrides.length > 0 ? { port: wantNumber ?? 15443 } : undefined);
      if (port === undefined) continue;
      const loc = (g as { locality?: { region?: string; zone?: string; subZone?: string } }).locality;
      const locality = loc?.region ? [loc.region, loc.zone, loc.subZone].filter((x) => x !== undefined && x !== "").join("/") : undefined;
      const network = (g as { network?: string }).network ?? (snap.meshes?.[0] as { network?: string } | undefined)?.network;
      const addrs =
        overrides.length > 0
          ? overrides.map((o) => ({ address: asString(o.addr) ?? "", port: asNumber(o.port) ?? port.port }))
          : (g.addresses ?? []).map((a) => ({ address: a, port: port.port }));
      const serverPort = found === undefined ? undefined : typeof found.targetPort === "number" ? found.targetPort : found.port;
      for (const a of addrs) if (a.address !== "") out.push({ cluster, address: a.address, port: a.port, locality, network, gateway: g, serverPort });
    }
  }
  const seen = new Set<string>();
  return out.filter((e) => (seen.has(`${e.address}:${e.port}`) ? false : (seen.add(`${e.address}:${e.port}`), true)));
}

// ---------------------------------------------------------------------------------------------
// ports and protocols

const ISTIO_PROTOCOLS = ["HTTP", "HTTPS", "GRPC", "HTTP2", "MONGO", "TCP", "TLS"] as const;

/** Istio protocol of a Gloo protocol string or a Kubernetes appProtocol / port name ('TCP' when unknown). */
export function istioProtocol(raw: string | undefined): string {
  const up = (raw ?? "").toUpperCase();
  const head = up.split(/[-.]/)[0] ?? "";
  for (const p of ISTIO_PROTOCOLS) if (up === p || head === p) return p;
  if (head === "H2C") return "HTTP2";
  return "TCP";
}

export function portName(protocol: string, number: number): string {
  return `${protocol.toLowerCase()}-${number}`;
}

/** Whether `a` is an IPv4 or IPv6 address (Istio's IsValidIPAddress); `host:port` is not one. */
export function isIpAddress(a: string): boolean {
  return isIP(a) !== 0;
}

/**
 * Whether `a` is a host name Istio accepts as an endpoint address (its ValidateFQDN): at most 255
 * characters of DNS-1123 labels (one trailing dot allowed), the last not all digits.
 */
export function isDnsName(a: string): boolean {
  if (a.length === 0 || a.length > 255) return false;
  const labels = (a.endsWith(".") ? a.slice(0, -1) : a).split(".");
  if (/^\d+$/.test(labels[labels.length - 1] ?? "")) return false;
  return labels.every((l) => l.length <= 63 && DNS1123_LABEL.test(l));
}

// ---------------------------------------------------------------------------------------------
// synthetic addresses

/** FNV-1a 32-bit. */
export function fnv32a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** fnv32a of the identity OR'ed into 240.0.0.0/4 (never the broadcast address). */
export function syntheticAddress(identity: string): string {
  let h = (0xf0000000 | (fnv32a(identity) & 0x0fffffff)) >>> 0;
  if (h === 0xffffffff) h = 0xfffffffe;
  return `${h >>> 24}.${(h >>> 16) & 255}.${(h >>> 8) & 255}.${h & 255}`;
}

export interface AddressAllocation {
  readonly address: string;
  /** The identity that already held the first-choice address, when this one had to be re-hashed. */
  readonly collidedWith?: string;
}

const allocationMemo = new WeakMap<TranslationIndex, Map<string, AddressAllocation>>();

/**
 * Fleet-wide allocation of synthetic addresses. Identities are `name/namespace/cluster/scope`;
 * they are processed in sorted order, and an identity whose hash is taken re-hashes
 * `<identity>#<n>` until free, so the result depends only on the set of identities. Memoised
 * per index, so every workspace sees the same table.
 */
export function addressTable(index: TranslationIndex): ReadonlyMap<string, AddressAllocation> {
  const cached = allocationMemo.get(index);
  if (cached !== undefined) return cached;
  const identities: string[] = [];
  for (const vd of index.byKind.get("VirtualDestination") ?? []) identities.push(vdIdentity(vd, index.adminNamespace));
  for (const id of federationIdentities(index)) identities.push(id);
  identities.sort();
  const used = new Map<string, string>();
  const table = new Map<string, AddressAllocation>();
  for (const id of identities) {
    if (table.has(id)) continue;
    let address = syntheticAddress(id);
    let collidedWith: string | undefined;
    for (let n = 1; used.has(address); n++) {
      collidedWith ??= used.get(address);
      address = syntheticAddress(`${id}#${n}`);
    }
    used.set(address, id);
    table.set(id, collidedWith === undefined ? { address } : { address, collidedWith });
  }
  allocationMemo.set(index, table);
  return table;
}

export function vdIdentity(vd: InputObject, adminNamespace: string): string {
  return `${vd.metadata.name}/${vd.metadata.namespace ?? adminNamespace}/${vd.cluster ?? ""}/virtual-destination`;
}

export function federationIdentity(service: string, namespace: string, cluster: string): string {
  return `${service}/${namespace}/${cluster}/federation`;
}

const federationMemo = new WeakMap<object, readonly string[]>();

/** Identities of every federated (service, cluster) in the fleet, computed from settings and discovery alone (memoised by structure). */
function federationIdentities(index: TranslationIndex): readonly string[] {
  const cached = federationMemo.get(index.structure);
  if (cached !== undefined) return cached;
  const out: string[] = [];
  const global = asRecord(asRecord(globalSettings(index)?.spec).options).federation;
  for (const w of index.workspaceNames) {
    const info = index.workspaces.get(w)!;
    const fed = asRecord(global ?? asRecord(asRecord(info.settings?.spec).options).federation);
    if (fed.enabled !== true) continue;
    const sels = asArray(fed.serviceSelector).map(objectSelector);
    for (const [cluster, nss] of info.namespaces) {
      for (const svc of index.discovery.get(cluster)?.services ?? []) {
        if (!nss.includes(svc.namespace)) continue;
        const s = { kind: "Service", name: svc.name, namespace: svc.namespace, cluster, labels: svc.labels ?? {}, workspace: w };
        if (sels.length === 0 || sels.some((sel) => objectSelectorMatches(sel, s))) out.push(federationIdentity(svc.name, svc.namespace, cluster));
      }
    }
  }
  federationMemo.set(index.structure, out);
  return out;
}

// ---------------------------------------------------------------------------------------------

/** Creation order of two Gloo objects: creationTimestamp (missing = oldest), then key. */
export function olderFirst(a: InputObject, b: InputObject): number {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

export function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export type { Labels };
