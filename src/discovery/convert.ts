/**
 * Kubernetes objects → discovery snapshot. PURE: plain objects in (what `kubectl get -o yaml`
 * prints, or what the agent's informers hold), snapshot and diagnostics out; no I/O, clock or
 * logging. The agent and `gitmesh render --discovery` both use it, so a cluster described by
 * manifests on disk renders exactly like the live cluster.
 *
 * Malformed objects and fields never throw: they are skipped (or defaulted) with a diagnostic.
 * Kinds that translation does not need are ignored silently (ReplicaSets, Endpoints, Secrets...).
 */
import { parse as parseYaml } from "yaml";
import { Severity, type Diagnostic, type ObjectRef } from "../core/index.js";
import type {
  DiscoveredGateway,
  DiscoveredGatewayPort,
  DiscoveredIstioObject,
  DiscoveredLocality,
  DiscoveredMesh,
  DiscoveredNamespace,
  DiscoveredService,
  DiscoveredServicePort,
  DiscoveredWorkload,
  DiscoverySnapshot,
} from "../model/index.js";
import { matchesLabels, matchesSelector, type LabelSelector, type LabelSelectorRequirement, type Labels } from "../core/index.js";
import { apiGroup, DISCOVERY_API_VERSION, DISCOVERY_KIND, localityTuple, normalizeSnapshot } from "./snapshot.js";

/** Stable diagnostic codes of the conversion and of readDiscoveryDirectory. */
export const DiscoveryCode = {
  /** An object that is not a Kubernetes object (no apiVersion/kind/metadata.name); skipped. */
  MalformedObject: "DISCOVERY_MALFORMED_OBJECT",
  /** A field with the wrong type or value; the field is skipped or defaulted. */
  MalformedField: "DISCOVERY_MALFORMED_FIELD",
  /** The same object twice; the last one is used. */
  DuplicateObject: "DISCOVERY_DUPLICATE_OBJECT",
  /** The `mesh` entry of an Istio ConfigMap is not valid YAML; defaults are used. */
  BadMeshConfig: "DISCOVERY_BAD_MESH_CONFIG",
  /** The cluster name is not a DNS-1123 label. */
  InvalidClusterName: "DISCOVERY_INVALID_CLUSTER_NAME",
  /** A discovery file or directory cannot be read. */
  ReadError: "DISCOVERY_READ_ERROR",
  /** A discovery file is not valid YAML/JSON. */
  YamlError: "DISCOVERY_YAML_ERROR",
  /** A snapshot document violates schemas/discovery-snapshot.schema.json. */
  InvalidSnapshot: "DISCOVERY_INVALID_SNAPSHOT",
  /** A snapshot document names another cluster than its directory. */
  ClusterMismatch: "DISCOVERY_CLUSTER_MISMATCH",
  /** A cluster directory mixes snapshot documents and manifests, or holds several snapshots. */
  AmbiguousSource: "DISCOVERY_AMBIGUOUS_SOURCE",
  /** A file that cannot be attributed to a cluster, or a directory with nothing in it. */
  NothingDiscovered: "DISCOVERY_NOTHING_DISCOVERED",
} as const;
export type DiscoveryCode = (typeof DiscoveryCode)[keyof typeof DiscoveryCode];

/** Where a top-level input object (and a JSON pointer inside it) came from, for diagnostics. */
export interface SourceLocation {
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
}

export interface SnapshotOptions {
  /**
   * Discovery selectors on namespace labels (Istio `meshConfig.discoverySelectors` semantics: a
   * namespace is discovered when it matches ANY selector). Default: the `discoverySelectors` of
   * the mesh config of the cluster's control plane(s) when `honorMeshDiscoverySelectors`, else
   * every namespace; an empty list also means every namespace (as in Istio). The control plane's
   * own namespace is always discovered, and gitmesh-managed
   * Istio objects are reported wherever they are (so that they can still be pruned).
   */
  readonly discoverySelectors?: readonly LabelSelector[];
  /** Use the mesh config's `discoverySelectors` when `discoverySelectors` is not given. Default true. */
  readonly honorMeshDiscoverySelectors?: boolean;
  /** Maps (index of a top-level input object, JSON pointer inside it) to a file position. Default: none. */
  readonly locate?: (index: number, path: string) => SourceLocation | undefined;
}

export interface SnapshotResult {
  readonly snapshot: DiscoverySnapshot;
  readonly diagnostics: Diagnostic[];
}

const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MANAGED_LABEL = "gitmesh.io/managed";
const REV_LABEL = "istio.io/rev";
const NETWORK_LABEL = "topology.istio.io/network";
const DEFAULT_TRUST_DOMAIN = "cluster.local";
const SERVICE_TYPES = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"] as const;
const PROTOCOLS = ["TCP", "UDP", "SCTP"] as const;
const WORKLOAD_KINDS = ["Deployment", "StatefulSet", "DaemonSet"] as const;
type WorkloadKind = (typeof WORKLOAD_KINDS)[number];
const CLUSTER_SCOPED = new Set(["v1/Namespace", "v1/Node"]);

type Json = Readonly<Record<string, unknown>>;

/** One Kubernetes object of the input, with where it came from. */
export interface KubeObject {
  readonly index: number;
  /** JSON pointer of the object inside its top-level input (`` or `/items/3`). */
  readonly base: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly labels: Labels;
  readonly raw: Json;
}

function isRecord(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Collects diagnostics with their source locations. */
export class Reporter {
  readonly diagnostics: Diagnostic[] = [];
  constructor(private readonly locate: SnapshotOptions["locate"]) {}

  report(
    code: DiscoveryCode,
    severity: Severity,
    at: { index: number; path: string; object?: ObjectRef },
    message: string,
  ): void {
    const loc = at.index >= 0 ? this.locate?.(at.index, at.path) : undefined;
    this.diagnostics.push({
      code,
      severity,
      ...(loc?.file !== undefined ? { file: loc.file } : {}),
      ...(loc?.line !== undefined ? { line: loc.line } : {}),
      ...(loc?.column !== undefined ? { column: loc.column } : {}),
      path: at.path === "" ? "/" : at.path,
      message,
      ...(at.object ? { object: at.object } : {}),
    });
  }

  /** A field of `obj` is malformed. */
  field(obj: KubeObject, path: string, message: string): void {
    this.report(DiscoveryCode.MalformedField, Severity.Warning, { index: obj.index, path: obj.base + path, object: refOf(obj) }, message);
  }
}

function refOf(obj: KubeObject): ObjectRef {
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    name: obj.name,
    ...(obj.namespace !== "" ? { namespace: obj.namespace } : {}),
  };
}

function get(v: unknown, ...path: string[]): unknown {
  let cur = v;
  for (const p of path) {
    if (!isRecord(cur)) return undefined;
    cur = cur[p];
  }
  return cur;
}

function nonEmptyString(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Reads a string map (labels, matchLabels, selector); non-string values are stringified with a warning. */
function readLabels(r: Reporter, obj: KubeObject, value: unknown, path: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) {
    r.field(obj, path, `expected a map of strings, got ${typeof value}; ignored`);
    return {};
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === "string") out[k] = v;
    else if (typeof v === "number" || typeof v === "boolean") {
      r.field(obj, `${path}/${escapePointer(k)}`, `label values are strings: quote it ("${String(v)}")`);
      out[k] = String(v);
    } else r.field(obj, `${path}/${escapePointer(k)}`, "label values are strings; ignored");
  }
  return out;
}

function escapePointer(s: string): string {
  return s.replace(/~/g, "~0").replace(/\//g, "~1");
}

export function readSelector(r: Reporter, obj: KubeObject, value: unknown, path: string): LabelSelector | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) {
    r.field(obj, path, "expected a label selector (matchLabels / matchExpressions); ignored");
    return undefined;
  }
  const matchLabels = readLabels(r, obj, value.matchLabels, `${path}/matchLabels`);
  const matchExpressions: LabelSelectorRequirement[] = [];
  const exprs = value.matchExpressions;
  if (Array.isArray(exprs)) {
    exprs.forEach((e: unknown, i) => {
      const key = nonEmptyString(get(e, "key"));
      const operator = nonEmptyString(get(e, "operator"));
      const values = get(e, "values");
      if (key === undefined || operator === undefined || (values !== undefined && !Array.isArray(values))) {
        r.field(obj, `${path}/matchExpressions/${i}`, "expected {key, operator, values[]}; this requirement matches nothing");
        matchExpressions.push({ key: "", operator: "Invalid" });
        return;
      }
      matchExpressions.push({ key, operator, values: ((values ?? []) as unknown[]).map(String) });
    });
  } else if (exprs !== undefined) {
    r.field(obj, `${path}/matchExpressions`, "expected a list; ignored");
  }
  return { matchLabels, matchExpressions };
}

// ---- parsing the input list ---------------------------------------------------------------

/**
 * One input value that is not a List: the parsed object, or undefined (with a diagnostic when it
 * is malformed). Lists are expanded by collectObjects.
 */
export function parseObject(r: Reporter, value: unknown, index: number, base: string): KubeObject | undefined {
  if (!isRecord(value)) {
    if (value === null || value === undefined) return undefined; // empty YAML documents
    r.report(DiscoveryCode.MalformedObject, Severity.Error, { index, path: base }, "not a Kubernetes object (expected a map with apiVersion, kind and metadata); skipped");
    return undefined;
  }
  const apiVersion = nonEmptyString(value.apiVersion);
  const kind = nonEmptyString(value.kind);
  const name = nonEmptyString(get(value, "metadata", "name"));
  if (apiVersion === undefined || kind === undefined || name === undefined) {
    const missing = [apiVersion === undefined && "apiVersion", kind === undefined && "kind", name === undefined && "metadata.name"].filter(Boolean).join(", ");
    r.report(DiscoveryCode.MalformedObject, Severity.Error, { index, path: base }, `Kubernetes object without ${missing}; skipped — add the missing field(s)`);
    return undefined;
  }
  const clusterScoped = CLUSTER_SCOPED.has(`${apiVersion}/${kind}`);
  const rawNs = get(value, "metadata", "namespace");
  const namespace = clusterScoped ? "" : (nonEmptyString(rawNs) ?? "default");
  const partial: KubeObject = { index, base, apiVersion, kind, name, namespace, labels: {}, raw: value };
  if (!clusterScoped && rawNs !== undefined && typeof rawNs !== "string") {
    r.field(partial, "/metadata/namespace", "expected a string; using namespace default");
  }
  return { ...partial, labels: readLabels(r, partial, get(value, "metadata", "labels"), "/metadata/labels") };
}

/** Identity of an object in the input (the last occurrence of an identity wins). */
export function objectIdentity(obj: KubeObject): string {
  return `${apiGroup(obj.apiVersion)}/${obj.kind}/${obj.namespace}/${obj.name}`;
}

/** The identity objectIdentity would give `value` once parsed (undefined when it is not an object); no diagnostics. */
export function rawIdentity(value: unknown): string | undefined {
  if (!isRecord(value)) return undefined;
  const apiVersion = nonEmptyString(value.apiVersion);
  const kind = nonEmptyString(value.kind);
  const name = nonEmptyString(get(value, "metadata", "name"));
  if (apiVersion === undefined || kind === undefined || name === undefined) return undefined;
  const namespace = CLUSTER_SCOPED.has(`${apiVersion}/${kind}`) ? "" : (nonEmptyString(get(value, "metadata", "namespace")) ?? "default");
  return `${apiGroup(apiVersion)}/${kind}/${namespace}/${name}`;
}

function collectObjects(objects: readonly unknown[], r: Reporter): KubeObject[] {
  const out = new Map<string, KubeObject>();
  const visit = (value: unknown, index: number, base: string): void => {
    if (isRecord(value)) {
      const kind = value.kind;
      if (typeof kind === "string" && kind.endsWith("List") && Array.isArray(value.items)) {
        (value.items as unknown[]).forEach((item, i) => visit(item, index, `${base}/items/${i}`));
        return;
      }
    }
    const obj = parseObject(r, value, index, base);
    if (obj === undefined) return;
    const key = objectIdentity(obj);
    if (out.has(key)) {
      r.report(DiscoveryCode.DuplicateObject, Severity.Warning, { index, path: base, object: refOf(obj) }, `${obj.kind} ${obj.namespace ? `${obj.namespace}/` : ""}${obj.name} appears more than once; the last one is used`);
      out.delete(key); // re-insert so that order follows the last occurrence
    }
    out.set(key, obj);
  };
  objects.forEach((o, i) => visit(o, i, ""));
  return [...out.values()];
}

export function is(obj: KubeObject, apiVersion: string, kind: string): boolean {
  return obj.apiVersion === apiVersion && obj.kind === kind;
}

// ---- nodes and localities ---------------------------------------------------------------------

export function nodeLocality(obj: KubeObject): DiscoveredLocality | undefined {
  const l = obj.labels;
  const region = nonEmptyString(l["topology.kubernetes.io/region"]) ?? nonEmptyString(l["failure-domain.beta.kubernetes.io/region"]);
  if (region === undefined) return undefined;
  const zone = nonEmptyString(l["topology.kubernetes.io/zone"]) ?? nonEmptyString(l["failure-domain.beta.kubernetes.io/zone"]);
  const subZone = nonEmptyString(l["topology.istio.io/subzone"]);
  return { region, ...(zone !== undefined ? { zone } : {}), ...(subZone !== undefined ? { subZone } : {}) };
}

export function uniqueLocalities(list: Iterable<DiscoveredLocality>): DiscoveredLocality[] {
  const map = new Map<string, DiscoveredLocality>();
  for (const l of list) map.set(localityTuple(l).join("/"), l);
  return [...map.entries()].sort(([a], [b]) => compare(a, b)).map(([, l]) => l);
}

// ---- pods -----------------------------------------------------------------------------------

/** What discovery keeps of an active pod (its locality comes from its node, looked up when used). */
export interface PodInfo {
  readonly name: string;
  readonly labels: Labels;
  readonly serviceAccount: string | undefined;
  readonly nodeName: string | undefined;
}

/** Node name → locality (undefined: unknown node or node without region). */
export type LocalityOf = (nodeName: string | undefined) => DiscoveredLocality | undefined;

/**
 * The pods of one namespace, indexed by label pair so that matching a selector looks at the pods
 * carrying its rarest label instead of every pod (5,000 workloads × 20,000 pods stay cheap).
 * Mutable (the incremental builder adds and removes pods by name).
 */
export class PodIndex {
  readonly all = new Map<string, PodInfo>();
  private readonly byLabel = new Map<string, Map<string, PodInfo>>();

  add(pod: PodInfo): void {
    this.remove(pod.name);
    this.all.set(pod.name, pod);
    for (const k in pod.labels) {
      const key = `${k}=${pod.labels[k]!}`;
      const list = this.byLabel.get(key);
      if (list) list.set(pod.name, pod);
      else this.byLabel.set(key, new Map([[pod.name, pod]]));
    }
  }

  remove(name: string): void {
    const pod = this.all.get(name);
    if (pod === undefined) return;
    this.all.delete(name);
    for (const k in pod.labels) {
      const key = `${k}=${pod.labels[k]!}`;
      const list = this.byLabel.get(key);
      list?.delete(name);
      if (list?.size === 0) this.byLabel.delete(key);
    }
  }

  /** Pods that may match `matchLabels` (a superset of the matches; every pod when it is empty). */
  candidates(matchLabels: Labels | undefined): ReadonlyMap<string, PodInfo> {
    let best: ReadonlyMap<string, PodInfo> = this.all;
    for (const k in matchLabels) {
      const list = this.byLabel.get(`${k}=${matchLabels[k]!}`);
      if (list === undefined) return EMPTY_PODS;
      if (list.size < best.size) best = list;
    }
    return best;
  }

  /** Pods matching `selector`, in name order. */
  matching(selector: LabelSelector): PodInfo[] {
    const out: PodInfo[] = [];
    for (const p of this.candidates(selector.matchLabels).values()) if (matchesSelector(selector, p.labels)) out.push(p);
    return out.sort((a, b) => compare(a.name, b.name));
  }
}

const EMPTY_PODS: ReadonlyMap<string, PodInfo> = new Map();
export const NO_PODS = new PodIndex();

/** The pod as discovery sees it, or undefined when it does not count (terminating, finished). */
export function podInfo(obj: KubeObject): PodInfo | undefined {
  if (get(obj.raw, "metadata", "deletionTimestamp") !== undefined) return undefined;
  const phase = get(obj.raw, "status", "phase");
  if (phase === "Succeeded" || phase === "Failed") return undefined;
  return {
    name: obj.name,
    labels: obj.labels,
    serviceAccount: nonEmptyString(get(obj.raw, "spec", "serviceAccountName")) ?? nonEmptyString(get(obj.raw, "spec", "serviceAccount")),
    nodeName: nonEmptyString(get(obj.raw, "spec", "nodeName")),
  };
}

function activePods(objs: readonly KubeObject[]): Map<string, PodIndex> {
  const byNs = new Map<string, PodIndex>();
  for (const obj of objs) {
    if (!is(obj, "v1", "Pod")) continue;
    const info = podInfo(obj);
    if (info === undefined) continue;
    let index = byNs.get(obj.namespace);
    if (!index) byNs.set(obj.namespace, (index = new PodIndex()));
    index.add(info);
  }
  return byNs;
}

// ---- the control plane ------------------------------------------------------------------------

const ISTIOD_NAME = /^istiod(?:-(.+))?$/;

interface MeshConfigInfo {
  readonly trustDomain?: string;
  readonly rootNamespace?: string;
  readonly discoverySelectors?: LabelSelector[];
}

function readMeshConfig(r: Reporter, cm: KubeObject): MeshConfigInfo {
  const text = get(cm.raw, "data", "mesh");
  if (text === undefined) return {};
  if (typeof text !== "string") {
    r.report(DiscoveryCode.BadMeshConfig, Severity.Warning, { index: cm.index, path: `${cm.base}/data/mesh`, object: refOf(cm) }, "the mesh config must be a YAML string; using defaults (trust domain cluster.local)");
    return {};
  }
  let mesh: unknown;
  try {
    mesh = parseYaml(text);
  } catch (err) {
    r.report(DiscoveryCode.BadMeshConfig, Severity.Warning, { index: cm.index, path: `${cm.base}/data/mesh`, object: refOf(cm) }, `the mesh config is not valid YAML (${(err as Error).message.split("\n")[0] ?? ""}); using defaults (trust domain cluster.local)`);
    return {};
  }
  if (mesh === null || mesh === undefined) return {};
  if (!isRecord(mesh)) {
    r.report(DiscoveryCode.BadMeshConfig, Severity.Warning, { index: cm.index, path: `${cm.base}/data/mesh`, object: refOf(cm) }, "the mesh config must be a YAML map; using defaults (trust domain cluster.local)");
    return {};
  }
  const trustDomain = nonEmptyString(mesh.trustDomain);
  const rootNamespace = nonEmptyString(mesh.rootNamespace);
  let discoverySelectors: LabelSelector[] | undefined;
  if (Array.isArray(mesh.discoverySelectors)) {
    discoverySelectors = [];
    for (const [i, s] of (mesh.discoverySelectors as unknown[]).entries()) {
      const sel = readSelector(r, cm, s, `/data/mesh#/discoverySelectors/${i}`);
      if (sel) discoverySelectors.push(sel);
    }
  }
  return {
    ...(trustDomain !== undefined ? { trustDomain } : {}),
    ...(rootNamespace !== undefined ? { rootNamespace } : {}),
    ...(discoverySelectors !== undefined ? { discoverySelectors } : {}),
  };
}

function imageTag(image: string): string | undefined {
  const noDigest = image.split("@")[0] ?? "";
  const lastSlash = noDigest.lastIndexOf("/");
  const colon = noDigest.lastIndexOf(":");
  if (colon <= lastSlash) return undefined;
  const tag = noDigest.slice(colon + 1).replace(/-distroless$|-debug$/, "");
  return tag === "" ? undefined : tag;
}

export interface MeshFound {
  readonly mesh: DiscoveredMesh;
  readonly discoverySelectors?: LabelSelector[];
}

/** Whether a Deployment may be an Istio control plane (istiod, istiod-<revision>). */
export function isIstiodCandidate(obj: KubeObject): boolean {
  return is(obj, "apps/v1", "Deployment") && ISTIOD_NAME.test(obj.name);
}

/**
 * The control planes: istiod Deployments (in namespace/name order, so that the last of two with
 * the same namespace and revision wins whatever the input order) with their mesh ConfigMaps
 * (`<namespace>/<name>` → ConfigMap).
 */
export function findMeshes(r: Reporter, deployments: readonly KubeObject[], configMaps: ReadonlyMap<string, KubeObject>, nsLabels: ReadonlyMap<string, Labels>): MeshFound[] {
  const out: MeshFound[] = [];
  const sorted = deployments.filter(isIstiodCandidate).sort((a, b) => compare(a.namespace, b.namespace) || compare(a.name, b.name));
  for (const o of sorted) {
    const m = ISTIOD_NAME.exec(o.name);
    if (!m) continue;
    const revLabel = nonEmptyString(o.labels[REV_LABEL]);
    const revision = revLabel ?? m[1] ?? "default";
    const cm =
      (revision !== "default" ? configMaps.get(`${o.namespace}/istio-${revision}`) : undefined) ?? configMaps.get(`${o.namespace}/istio`);
    const meshConfig = cm ? readMeshConfig(r, cm) : {};
    const podSpec = get(o.raw, "spec", "template", "spec");
    const sa = nonEmptyString(get(podSpec, "serviceAccountName")) ?? nonEmptyString(get(podSpec, "serviceAccount")) ?? o.name;
    const containers = get(podSpec, "containers");
    let version: string | undefined;
    if (Array.isArray(containers)) {
      const list = containers as unknown[];
      const c = list.find((x) => get(x, "name") === "discovery") ?? list[0];
      const image = nonEmptyString(get(c, "image"));
      version = image === undefined ? undefined : imageTag(image);
    }
    const network = nonEmptyString(nsLabels.get(o.namespace)?.[NETWORK_LABEL]);
    const rootNamespace = meshConfig.rootNamespace !== undefined && meshConfig.rootNamespace !== o.namespace ? meshConfig.rootNamespace : undefined;
    out.push({
      mesh: {
        revision,
        namespace: o.namespace,
        trustDomain: meshConfig.trustDomain ?? DEFAULT_TRUST_DOMAIN,
        istiodServiceAccount: sa,
        ...(version !== undefined ? { version } : {}),
        ...(network !== undefined ? { network } : {}),
        ...(rootNamespace !== undefined ? { rootNamespace } : {}),
      },
      ...(meshConfig.discoverySelectors ? { discoverySelectors: meshConfig.discoverySelectors } : {}),
    });
  }
  return out;
}

// ---- services and gateways -------------------------------------------------------------------

function readPorts(r: Reporter, obj: KubeObject, withNodePort: boolean): (DiscoveredServicePort & { nodePort?: number })[] {
  const ports = get(obj.raw, "spec", "ports");
  if (ports === undefined || ports === null) return [];
  if (!Array.isArray(ports)) {
    r.field(obj, "/spec/ports", "expected a list of ports; ignored");
    return [];
  }
  const out: (DiscoveredServicePort & { nodePort?: number })[] = [];
  (ports as unknown[]).forEach((p, i) => {
    const path = `/spec/ports/${i}`;
    if (!isRecord(p)) {
      r.field(obj, path, "expected a port {name, port, targetPort, protocol}; skipped");
      return;
    }
    const port = p.port;
    if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) {
      r.field(obj, `${path}/port`, "port must be an integer between 1 and 65535; port skipped");
      return;
    }
    let targetPort: number | string = port;
    const tp = p.targetPort;
    if (typeof tp === "number" && Number.isInteger(tp) && tp >= 1 && tp <= 65535) targetPort = tp;
    else if (typeof tp === "string" && /^\d+$/.test(tp) && Number(tp) >= 1 && Number(tp) <= 65535) targetPort = Number(tp);
    else if (typeof tp === "string" && tp !== "") targetPort = tp;
    else if (tp !== undefined && tp !== null) r.field(obj, `${path}/targetPort`, `targetPort must be a port number or a container port name; using ${port}`);
    let protocol: (typeof PROTOCOLS)[number] = "TCP";
    if (p.protocol !== undefined && p.protocol !== null) {
      const found = PROTOCOLS.find((x) => x === p.protocol);
      if (found === undefined) r.field(obj, `${path}/protocol`, `protocol must be one of ${PROTOCOLS.join(", ")}; using TCP`);
      else protocol = found;
    }
    const name = typeof p.name === "string" ? p.name : "";
    const appProtocol = nonEmptyString(p.appProtocol);
    const nodePort = p.nodePort;
    out.push({
      name,
      port,
      targetPort,
      protocol,
      ...(appProtocol !== undefined ? { appProtocol } : {}),
      ...(withNodePort && typeof nodePort === "number" && Number.isInteger(nodePort) && nodePort >= 1 && nodePort <= 65535 ? { nodePort } : {}),
    });
  });
  return out;
}

function serviceType(r: Reporter, obj: KubeObject): DiscoveredService["type"] {
  const t = get(obj.raw, "spec", "type");
  if (t === undefined || t === null) return "ClusterIP";
  const found = SERVICE_TYPES.find((x) => x === t);
  if (found === undefined) r.field(obj, "/spec/type", `type must be one of ${SERVICE_TYPES.join(", ")}; using ClusterIP`);
  return found ?? "ClusterIP";
}

export function readService(r: Reporter, obj: KubeObject): DiscoveredService {
  const clusterIP = nonEmptyString(get(obj.raw, "spec", "clusterIP"));
  const externalName = nonEmptyString(get(obj.raw, "spec", "externalName"));
  return {
    name: obj.name,
    namespace: obj.namespace,
    labels: { ...obj.labels },
    selector: readLabels(r, obj, get(obj.raw, "spec", "selector"), "/spec/selector"),
    ports: readPorts(r, obj, false).map(({ nodePort: _n, ...p }) => p),
    type: serviceType(r, obj),
    ...(clusterIP !== undefined ? { clusterIP } : {}),
    ...(externalName !== undefined ? { externalName } : {}),
  };
}

export function gatewayKind(svc: DiscoveredService): DiscoveredGateway["kind"] | undefined {
  const istio = svc.labels.istio ?? svc.selector.istio;
  if (istio === "eastwestgateway") return "east-west";
  if (istio === "ingressgateway") return "ingress";
  if (istio === "egressgateway") return "egress";
  if (svc.labels[NETWORK_LABEL] !== undefined) return "east-west";
  return undefined;
}

function gatewayAddresses(r: Reporter, obj: KubeObject): string[] {
  const out: string[] = [];
  const ingress = get(obj.raw, "status", "loadBalancer", "ingress");
  if (Array.isArray(ingress)) {
    (ingress as unknown[]).forEach((i, n) => {
      const addr = nonEmptyString(get(i, "ip")) ?? nonEmptyString(get(i, "hostname"));
      if (addr === undefined) r.field(obj, `/status/loadBalancer/ingress/${n}`, "load balancer ingress without ip or hostname; ignored");
      else out.push(addr);
    });
  }
  if (out.length === 0) {
    const external = get(obj.raw, "spec", "externalIPs");
    if (Array.isArray(external)) for (const e of external as unknown[]) if (typeof e === "string" && e !== "") out.push(e);
  }
  return [...new Set(out)].sort(compare);
}

// ---- workloads ------------------------------------------------------------------------------------

/** The selector of a workload (its pod template labels when it has none); undefined when it selects nothing. */
export function workloadSelector(r: Reporter, obj: KubeObject): { selector: LabelSelector | undefined; podLabels: Record<string, string> } {
  const template = get(obj.raw, "spec", "template");
  const podLabels = readLabels(r, obj, get(template, "metadata", "labels"), "/spec/template/metadata/labels");
  const selector = readSelector(r, obj, get(obj.raw, "spec", "selector"), "/spec/selector") ?? { matchLabels: podLabels };
  const hasSelector = Object.keys(selector.matchLabels ?? {}).length > 0 || (selector.matchExpressions ?? []).length > 0;
  return { selector: hasSelector ? selector : undefined, podLabels };
}

export function isWorkloadKind(obj: KubeObject): obj is KubeObject & { kind: WorkloadKind } {
  return obj.apiVersion === "apps/v1" && (WORKLOAD_KINDS as readonly string[]).includes(obj.kind);
}

export function readWorkload(r: Reporter, obj: KubeObject, kind: WorkloadKind, pods: PodIndex, localityOf: LocalityOf): DiscoveredWorkload {
  const template = get(obj.raw, "spec", "template");
  const { selector, podLabels } = workloadSelector(r, obj);
  const mine = selector !== undefined ? pods.matching(selector) : [];
  const saTemplate = nonEmptyString(get(template, "spec", "serviceAccountName")) ?? nonEmptyString(get(template, "spec", "serviceAccount"));
  // pods in name order: the first one with a service account decides, whatever the input order
  const serviceAccount = saTemplate ?? mine.find((p) => p.serviceAccount !== undefined)?.serviceAccount ?? "default";
  let replicas: number | undefined;
  if (kind !== "DaemonSet") {
    const rep = get(obj.raw, "spec", "replicas");
    if (rep === undefined || rep === null) replicas = 1;
    else if (typeof rep === "number" && Number.isInteger(rep) && rep >= 0) replicas = rep;
    else r.field(obj, "/spec/replicas", "replicas must be a non-negative integer; ignored");
  }
  const localities: DiscoveredLocality[] = [];
  for (const p of mine) {
    const l = localityOf(p.nodeName);
    if (l) localities.push(l);
  }
  return {
    kind,
    name: obj.name,
    namespace: obj.namespace,
    podLabels,
    serviceAccount,
    localities: uniqueLocalities(localities),
    ...(replicas !== undefined ? { replicas } : {}),
  };
}

/**
 * The gateway a Service stands for (east-west, ingress or egress), or undefined. `workloads` are the
 * workloads of the Service's namespace; pods and workloads are considered in name order.
 */
export function readGateway(r: Reporter, o: KubeObject, svc: DiscoveredService, pods: PodIndex, workloads: Iterable<DiscoveredWorkload>, localityOf: LocalityOf): DiscoveredGateway | undefined {
  const kind = gatewayKind(svc);
  if (kind === undefined) return undefined;
  const selected = Object.keys(svc.selector).length > 0;
  const gwPods = selected ? pods.matching({ matchLabels: svc.selector }) : [];
  const gwWorkloads: DiscoveredWorkload[] = [];
  if (selected) for (const w of workloads) if (w.namespace === o.namespace && matchesLabels(svc.selector, w.podLabels)) gwWorkloads.push(w);
  gwWorkloads.sort((a, b) => compare(a.kind, b.kind) || compare(a.name, b.name));
  const podLocalities: DiscoveredLocality[] = [];
  for (const p of gwPods) {
    const l = localityOf(p.nodeName);
    if (l) podLocalities.push(l);
  }
  const locality = uniqueLocalities([...podLocalities, ...gwWorkloads.flatMap((w) => w.localities)])[0];
  const revision = [...gwPods.map((p) => p.labels[REV_LABEL]), ...gwWorkloads.map((w) => w.podLabels[REV_LABEL])].find((x) => x !== undefined && x !== "");
  const network = nonEmptyString(svc.labels[NETWORK_LABEL]);
  return {
    kind,
    name: svc.name,
    namespace: svc.namespace,
    podLabels: { ...svc.selector },
    // problems were already reported by readService
    ports: readPorts(new Reporter(undefined), o, true).map(({ appProtocol: _a, ...p }): DiscoveredGatewayPort => p),
    addresses: gatewayAddresses(r, o),
    serviceType: svc.type,
    ...(network !== undefined ? { network } : {}),
    ...(revision !== undefined ? { revision } : {}),
    ...(locality !== undefined ? { locality } : {}),
  };
}

// ---- istio objects ------------------------------------------------------------------------------

function isIstioGroup(group: string): boolean {
  return group.endsWith(".istio.io") && group !== "install.istio.io";
}

export function isIstioObject(obj: KubeObject): boolean {
  return isIstioGroup(apiGroup(obj.apiVersion));
}

/** The snapshot item of an Istio object, or undefined when it is out of scope and not gitmesh-managed. */
export function istioItem(o: KubeObject, inScope: boolean): DiscoveredIstioObject | undefined {
  const managed = o.labels[MANAGED_LABEL] === "true";
  if (!managed && !inScope) return undefined;
  const hosts = istioHosts(o);
  return {
    apiVersion: o.apiVersion,
    kind: o.kind,
    namespace: o.namespace,
    name: o.name,
    labels: { ...o.labels },
    managed,
    ...(hosts !== undefined ? { hosts } : {}),
  };
}

/**
 * The discovered namespaces: every namespace when there are no selectors (explicit, else the mesh
 * config's), else those matching ANY selector, and always the control planes' namespaces.
 */
export function discoveredNamespaces(nsLabels: ReadonlyMap<string, Labels>, meshes: readonly MeshFound[], options: SnapshotOptions): Set<string> {
  const honorMesh = options.honorMeshDiscoverySelectors ?? true;
  const meshSelectors = honorMesh && meshes.some((m) => m.discoverySelectors !== undefined) ? meshes.flatMap((m) => m.discoverySelectors ?? []) : undefined;
  // As in Istio, an empty list selects every namespace.
  const chosen = options.discoverySelectors ?? meshSelectors;
  const selectors = chosen !== undefined && chosen.length > 0 ? chosen : undefined;
  const controlPlaneNs = new Set(meshes.map((m) => m.mesh.namespace));
  const discovered = new Set<string>();
  for (const [name, labels] of nsLabels) {
    if (selectors === undefined || controlPlaneNs.has(name) || selectors.some((s) => matchesSelector(s, labels))) discovered.add(name);
  }
  return discovered;
}

/** Reports an invalid cluster name (not a DNS-1123 label). */
export function checkClusterName(r: Reporter, cluster: string): void {
  if (!CLUSTER_NAME.test(cluster) || cluster.length > 63) {
    r.report(DiscoveryCode.InvalidClusterName, Severity.Error, { index: -1, path: "" }, `cluster name ${JSON.stringify(cluster)} is not a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters); rename the cluster`);
  }
}

function istioHosts(obj: KubeObject): string[] | undefined {
  if (obj.kind === "VirtualService" || obj.kind === "ServiceEntry") {
    const hosts = get(obj.raw, "spec", "hosts");
    return Array.isArray(hosts) ? (hosts as unknown[]).filter((h): h is string => typeof h === "string") : [];
  }
  if (obj.kind === "DestinationRule") {
    const host = nonEmptyString(get(obj.raw, "spec", "host"));
    return host === undefined ? [] : [host];
  }
  return undefined;
}

// ---- the conversion --------------------------------------------------------------------------------

/**
 * Builds the discovery snapshot of `cluster` from plain Kubernetes objects (v1 Lists and other
 * `*List` objects are expanded). Pure and deterministic: the same objects in any order give the
 * same snapshot.
 */
export function snapshotFromKubernetesObjects(cluster: string, objects: readonly unknown[], options: SnapshotOptions = {}): SnapshotResult {
  const r = new Reporter(options.locate);
  checkClusterName(r, cluster);
  const objs = collectObjects(objects, r);

  // Nodes → localities.
  const nodes = new Map<string, DiscoveredLocality | undefined>();
  for (const o of objs) if (is(o, "v1", "Node")) nodes.set(o.name, nodeLocality(o));
  const localityOf: LocalityOf = (name) => (name === undefined ? undefined : nodes.get(name));

  // Namespaces (explicit, then implied by namespaced objects).
  const nsLabels = new Map<string, Labels>();
  for (const o of objs) if (is(o, "v1", "Namespace")) nsLabels.set(o.name, o.labels);
  for (const o of objs) if (o.namespace !== "" && !nsLabels.has(o.namespace)) nsLabels.set(o.namespace, {});

  // Control plane, then the discovery selectors (explicit, else the mesh config's).
  const configMaps = new Map<string, KubeObject>();
  for (const o of objs) if (is(o, "v1", "ConfigMap")) configMaps.set(`${o.namespace}/${o.name}`, o);
  const meshes = findMeshes(r, objs.filter(isIstiodCandidate), configMaps, nsLabels);
  const discovered = discoveredNamespaces(nsLabels, meshes, options);
  const inScope = (o: KubeObject): boolean => discovered.has(o.namespace);

  const pods = activePods(objs.filter(inScope));

  const namespaces: DiscoveredNamespace[] = [...discovered].map((name) => ({ name, labels: { ...nsLabels.get(name) } }));
  const services: DiscoveredService[] = [];
  const gateways: DiscoveredGateway[] = [];
  const workloads: DiscoveredWorkload[] = [];
  const istioObjects: DiscoveredIstioObject[] = [];

  const workloadsByNs = new Map<string, DiscoveredWorkload[]>();
  for (const o of objs) {
    if (isWorkloadKind(o) && inScope(o)) {
      const w = readWorkload(r, o, o.kind, pods.get(o.namespace) ?? NO_PODS, localityOf);
      workloads.push(w);
      const list = workloadsByNs.get(o.namespace);
      if (list) list.push(w);
      else workloadsByNs.set(o.namespace, [w]);
    }
  }

  for (const o of objs) {
    if (!is(o, "v1", "Service") || !inScope(o)) continue;
    const svc = readService(r, o);
    services.push(svc);
    const gw = readGateway(r, o, svc, pods.get(o.namespace) ?? NO_PODS, workloadsByNs.get(o.namespace) ?? [], localityOf);
    if (gw) gateways.push(gw);
  }

  for (const o of objs) {
    if (!isIstioObject(o)) continue;
    const item = istioItem(o, inScope(o));
    if (item) istioObjects.push(item);
  }

  const localities = uniqueLocalities([...nodes.values()].filter((l): l is DiscoveredLocality => l !== undefined));
  const snapshot = normalizeSnapshot({
    apiVersion: DISCOVERY_API_VERSION,
    kind: DISCOVERY_KIND,
    cluster,
    namespaces,
    services,
    workloads,
    localities,
    meshes: meshes.map((m) => m.mesh),
    gateways,
    istioObjects,
  });
  return { snapshot, diagnostics: r.diagnostics };
}
