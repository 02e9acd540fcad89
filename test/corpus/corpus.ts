/**
 * The real-world corpus (../shared/corpus/: distinct Gloo Mesh v2 documents from public repositories,
 * one per file, in one folder per source repository) judged the way a user meets gitmesh:
 *
 * - per document: loaded alone, is it accepted (a translated kind, no loader error of its own),
 *   rejected (a loader error about the document itself: YAML, schema, metadata), or a kind gitmesh
 *   recognises but does not translate (its error code says why)? Errors that depend on other
 *   documents (ownership, references) are judged in the set, not here.
 * - per source repository (a "set"): every document loaded together and translated against a
 *   discovery snapshot synthesised from what the documents name (clusters, namespaces, the Services
 *   their routes and destinations refer to, an ingress and an east-west gateway per cluster).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadDesiredState, type SourceFile } from "../../src/config/index.js";
import type { Diagnostic } from "../../src/core/index.js";
import type { DiscoverySnapshot } from "../../src/model/index.js";
import { translateAll, validateIstioResource, type TranslationResult } from "../../src/translate/index.js";

export const CORPUS_DIR = resolve(import.meta.dirname, "../../../shared/corpus");

export type Outcome = "accepted" | "rejected" | "untranslated";

export interface DocumentVerdict {
  readonly path: string;
  readonly kind: string;
  readonly outcome: Outcome;
  /** For rejected and untranslated documents: the first error, `CODE at /pointer`. */
  readonly reason?: string;
}

/** Loader codes that judge a document by other documents (ownership, references): not the document's own fault. */
const SET_CODES: ReadonlySet<string> = new Set(["NOT_OWNED", "AMBIGUOUS_OWNER", "UNRESOLVED_REFERENCE", "ADMIN_NAMESPACE_REQUIRED", "OVERLAPPING_WORKSPACES", "DUPLICATE_WORKSPACE_SETTINGS"]);
const UNTRANSLATED_CODES: ReadonlySet<string> = new Set(["UNTRANSLATED_GLOO_KIND", "NEEDS_GLOO_DATA_PLANE"]);

/**
 * Whether the corpus is beside the repository. A fresh clone without ../shared skips the corpus tier,
 * each skipped block naming why (`CORPUS_ABSENT`); CI, which has ../shared, must run it, so under `CI` an
 * absent corpus fails every file that imports this one.
 */
export const CORPUS_PRESENT = existsSync(CORPUS_DIR);
export const CORPUS_ABSENT = `the real-world corpus is not at ${CORPUS_DIR}: the corpus tier is skipped. To run it, check out ../shared beside the repository (CI does).`;
if (!CORPUS_PRESENT) {
  if (process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false") throw new Error(`CI must run the corpus tier, but ${CORPUS_ABSENT}`);
  console.warn(`note: ${CORPUS_ABSENT}`);
}

/** The corpus's sets, or none when it is absent (tests that also read other inputs). */
export function corpusSetsIfPresent(): { name: string; files: SourceFile[] }[] {
  return CORPUS_PRESENT ? corpusSets() : [];
}

export function corpusSets(dir = CORPUS_DIR): { name: string; files: SourceFile[] }[] {
  if (!existsSync(dir)) throw new Error(`the corpus is missing at ${dir}: check out ../shared beside the repository (see README, "Tests")`);
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort()
    .map((name) => ({
      name,
      files: readdirSync(join(dir, name))
        .filter((f) => f.endsWith(".yaml"))
        .sort()
        .map((f) => ({ path: `${name}/${f}`, content: readFileSync(join(dir, name, f)) })),
    }));
}

export function judgeDocument(file: SourceFile): DocumentVerdict {
  const { state, diagnostics } = loadDesiredState([file]);
  const record = state.files[file.path];
  const kind = record?.objects[0]?.kind ?? record?.unsupported[0]?.kind ?? kindFromName(file.path);
  const own = diagnostics.filter((d) => d.severity === "error" && !SET_CODES.has(d.code));
  const first = own[0];
  const reason = first ? `${first.code} at ${first.path ?? ""}` : undefined;
  // A recognised kind gitmesh does not translate is judged on its own fields too (a typo there is rejected).
  const invalid = own.find((d) => !UNTRANSLATED_CODES.has(d.code));
  if (first && UNTRANSLATED_CODES.has(first.code) && invalid === undefined) return { path: file.path, kind, outcome: "untranslated", ...(reason ? { reason } : {}) };
  if (invalid !== undefined) return { path: file.path, kind, outcome: "rejected", reason: `${invalid.code} at ${invalid.path ?? ""}` };
  if (first) return { path: file.path, kind, outcome: "rejected", ...(reason ? { reason } : {}) };
  return { path: file.path, kind, outcome: "accepted" };
}

/** `0042-RouteTable-frontend.yaml` → `RouteTable` (for a document that does not even parse). */
function kindFromName(path: string): string {
  return /^\d+-([A-Za-z]+)-/.exec(path.split("/").pop() ?? "")?.[1] ?? "?";
}

export interface SetResult {
  readonly diagnostics: readonly Diagnostic[];
  /** Rendered objects that fail their schemas, each as the INVALID_OUTPUT message names it: `Kind ns/name for cluster "c"`. */
  readonly invalid: string[];
}

/** A document's verdict after its whole set is translated (the three numbers of issue #36). */
export interface TranslationVerdict {
  readonly path: string;
  readonly kind: string;
  /** Accepted when loaded alone (DocumentVerdict outcome `accepted`). */
  readonly accepted: boolean;
  /** Accepted, and its set's load and translation report no error and nothing needing Gloo's data plane about it. */
  readonly translated: boolean;
  /** A kind only Gloo's data plane implements, or a NEEDS_GLOO_DATA_PLANE diagnostic about the document. */
  readonly needsGlooDataPlane: boolean;
  /** For an accepted document that is not translated: the first error, `CODE at /pointer`. */
  readonly reason?: string;
}

/** Translates a set and judges each of its documents by the diagnostics about it (`alone`: the documents' own verdicts). */
export function judgeTranslation(files: readonly SourceFile[], alone: readonly DocumentVerdict[]): TranslationVerdict[] {
  const { loadDiagnostics, result } = renderSet(files);
  const byFile = new Map<string, Diagnostic[]>();
  for (const d of [...loadDiagnostics, ...result.diagnostics]) {
    if (d.file === undefined) continue;
    const list = byFile.get(d.file) ?? [];
    list.push(d);
    byFile.set(d.file, list);
  }
  const own = new Map(alone.map((v) => [v.path, v]));
  return files.map((f) => {
    const v = own.get(f.path);
    const kind = v?.kind ?? kindFromName(f.path);
    const diags = byFile.get(f.path) ?? [];
    const accepted = v?.outcome === "accepted";
    const needsGlooDataPlane = v?.outcome === "untranslated" || diags.some((d) => d.code === "NEEDS_GLOO_DATA_PLANE");
    const firstError = diags.find((d) => d.severity === "error" || d.code === "NEEDS_GLOO_DATA_PLANE");
    const translated = accepted && firstError === undefined;
    return { path: f.path, kind, accepted, translated, needsGlooDataPlane, ...(accepted && firstError ? { reason: `${firstError.code} at ${firstError.path ?? ""}` } : {}) };
  });
}

/** Loads a whole set, synthesises discovery for it and translates it (loader diagnostics apart from the result's). */
export function renderSet(files: readonly SourceFile[]): { readonly loadDiagnostics: readonly Diagnostic[]; readonly result: TranslationResult } {
  const { state, diagnostics } = loadDesiredState(files);
  const objects = Object.values(state.files).flatMap((f) => f.objects);
  return { loadDiagnostics: diagnostics, result: translateAll(state, synthesiseDiscovery(objects)) };
}

/** Loads a whole set, synthesises discovery for it, translates it and validates every rendered object. */
export function translateSet(files: readonly SourceFile[]): SetResult {
  const { loadDiagnostics: diagnostics, result } = renderSet(files);
  const invalid: string[] = [];
  for (const [cluster, out] of result.clusters) {
    for (const r of out.resources) {
      if (validateIstioResource(r).length > 0) invalid.push(`${r.kind} ${r.metadata.namespace === "" ? "" : `${r.metadata.namespace}/`}${r.metadata.name} for cluster "${cluster}"`);
    }
  }
  return { diagnostics: [...diagnostics, ...result.diagnostics], invalid };
}

interface Loaded {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly spec?: unknown;
}

function synthesiseDiscovery(objects: readonly Loaded[]): Map<string, DiscoverySnapshot> {
  const clusters = new Set<string>();
  const namespaces = new Set<string>(["istio-system", "istio-gateways", "istio-eastwest"]);
  const services = new Map<string, { name: string; namespace: string; ports: Set<number> }>();
  for (const o of objects) {
    namespaces.add(o.metadata.namespace);
    if (o.kind === "KubernetesCluster") clusters.add(o.metadata.name);
    walk(o.spec, (node) => {
      const cluster = node.cluster ?? (o.kind === "Workspace" ? node.name : undefined);
      if (typeof cluster === "string" && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(cluster)) clusters.add(cluster);
      if (typeof node.namespace === "string" && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(node.namespace)) namespaces.add(node.namespace);
      const ref = node.ref;
      if (isRecord(ref) && typeof ref.name === "string" && (node.kind === undefined || node.kind === "SERVICE")) {
        const ns = typeof ref.namespace === "string" ? ref.namespace : o.metadata.namespace;
        const key = `${ns}/${ref.name}`;
        const svc = services.get(key) ?? { name: ref.name, namespace: ns, ports: new Set<number>() };
        const port = isRecord(node.port) ? node.port.number : undefined;
        svc.ports.add(typeof port === "number" ? port : 8080);
        services.set(key, svc);
      }
    });
  }
  if (clusters.size === 0) clusters.add("cluster1");
  const snapshots = new Map<string, DiscoverySnapshot>();
  for (const cluster of [...clusters].sort()) {
    const svcs = [...services.values()].filter((s) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s.name) && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s.namespace));
    for (const s of svcs) namespaces.add(s.namespace);
    snapshots.set(cluster, {
      cluster,
      namespaces: [...namespaces].filter((n) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(n)).sort().map((name) => ({ name, labels: {} })),
      services: svcs
        .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`))
        .map((s) => ({
          name: s.name,
          namespace: s.namespace,
          labels: { app: s.name },
          selector: { app: s.name },
          type: "ClusterIP" as const,
          ports: [...s.ports].sort((a, b) => a - b).map((port) => ({ name: `http-${String(port)}`, port, targetPort: port, protocol: "TCP" as const })),
        })),
      workloads: svcs.map((s) => ({ kind: "Deployment" as const, name: `${s.name}-v1`, namespace: s.namespace, podLabels: { app: s.name, version: "v1" }, serviceAccount: s.name, localities: [] })),
      localities: [{ region: "us-east-1", zone: "us-east-1a" }],
      meshes: [{ revision: "default", namespace: "istio-system", trustDomain: `${cluster}.local`, istiodServiceAccount: "istiod" }],
      gateways: [
        { kind: "ingress", name: "istio-ingressgateway", namespace: "istio-gateways", podLabels: { app: "istio-ingressgateway", istio: "ingressgateway" }, addresses: ["203.0.113.10"], ports: [{ name: "http2", port: 80, targetPort: 8080, protocol: "TCP" }, { name: "https", port: 443, targetPort: 8443, protocol: "TCP" }] },
        { kind: "east-west", name: "istio-eastwestgateway", namespace: "istio-eastwest", podLabels: { app: "istio-eastwestgateway", istio: "eastwestgateway" }, addresses: ["203.0.113.20"], ports: [{ name: "tls", port: 15443, targetPort: 15443, protocol: "TCP" }] },
      ],
      istioObjects: [],
    });
  }
  return snapshots;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function walk(v: unknown, visit: (node: Record<string, unknown>) => void): void {
  if (Array.isArray(v)) for (const x of v) walk(x, visit);
  else if (isRecord(v)) {
    visit(v);
    for (const k in v) walk(v[k], visit);
  }
}
