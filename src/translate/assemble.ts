/**
 * Merging and ordering of outputs.
 *
 * Inside one workspace, several translators may contribute to one object (e.g. route subsets and
 * destination policies to the same DestinationRule): `mergeResources` deep-merges them — maps
 * merge key by key, arrays of objects with a `name` (subsets, servers) or a `port.number`
 * (portLevelSettings) merge item by item, arrays of scalars are unioned, and two different
 * scalars at one path are a conflict.
 *
 * `assembleCluster` is the cluster stage: it takes every workspace's fragment for one cluster,
 * drops exact duplicates, reports two different objects with one (kind, namespace, name) as an
 * OUTPUT_CONFLICT (the fragment of the workspace that sorts first is kept), and returns the
 * resources sorted by (kind, namespace, name). Fragments must be canonical (key order), as
 * translateWorkspace produces them.
 */
import { canonicalJson, Severity, sortDiagnostics, type Diagnostic } from "../core/index.js";
import { contentHash } from "./canonical.js";
import { isRecord } from "./selectors.js";
import { TranslateCode, type ClusterOutput, type IstioResource, type WorkspaceFragment } from "./types.js";

export type MergeResult = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly path: string };

export function resourceKey(r: IstioResource): string {
  return `${r.kind}/${r.metadata.namespace}/${r.metadata.name}`;
}

export function compareResources(a: IstioResource, b: IstioResource): number {
  return cmp(a.kind, b.kind) || cmp(a.metadata.namespace, b.metadata.namespace) || cmp(a.metadata.name, b.metadata.name);
}

/** Deep merge of two contributions to one object's spec; labels (and clashing annotations) of the first contribution win. */
export function mergeResources(a: IstioResource, b: IstioResource): MergeResult {
  const spec = mergeValues(a.spec, b.spec, "/spec");
  if (!spec.ok) return spec;
  // Metadata: the first contribution's labels; annotations unioned, the first contribution winning a key.
  const ann: Record<string, string> = { ...b.metadata.annotations, ...a.metadata.annotations };
  return {
    ok: true,
    value: {
      ...a,
      metadata: { ...a.metadata, ...(Object.keys(ann).length > 0 ? { annotations: ann } : {}) },
      spec: spec.value,
    },
  };
}

export function mergeValues(a: unknown, b: unknown, path: string): MergeResult {
  if (a === undefined) return { ok: true, value: b };
  if (b === undefined) return { ok: true, value: a };
  if (isRecord(a) && isRecord(b)) {
    const out: Record<string, unknown> = { ...a };
    for (const [k, v] of Object.entries(b)) {
      const m = mergeValues(a[k], v, `${path}/${k}`);
      if (!m.ok) return m;
      out[k] = m.value;
    }
    return { ok: true, value: out };
  }
  if (Array.isArray(a) && Array.isArray(b)) return mergeArrays(a, b, path);
  return canonicalJson(a) === canonicalJson(b) ? { ok: true, value: a } : { ok: false, path };
}

function itemKey(v: unknown): string | undefined {
  if (!isRecord(v)) return undefined;
  if (typeof v.name === "string") return `name:${v.name}`;
  const port = v.port;
  if (isRecord(port) && typeof port.number === "number") return `port:${port.number}`;
  return undefined;
}

function mergeArrays(a: readonly unknown[], b: readonly unknown[], path: string): MergeResult {
  const keyed = a.every((x) => itemKey(x) !== undefined) && b.every((x) => itemKey(x) !== undefined);
  const scalars = [...a, ...b].every((x) => x === null || typeof x !== "object");
  if (keyed) {
    const out = [...a];
    for (const item of b) {
      const idx = out.findIndex((x) => itemKey(x) === itemKey(item));
      if (idx === -1) {
        out.push(item);
        continue;
      }
      const m = mergeValues(out[idx], item, `${path}/${idx}`);
      if (!m.ok) return m;
      out[idx] = m.value;
    }
    return { ok: true, value: out };
  }
  if (scalars) {
    const out = [...a];
    for (const x of b) if (!out.includes(x)) out.push(x);
    return { ok: true, value: out };
  }
  return canonicalJson(a) === canonicalJson(b) ? { ok: true, value: a } : { ok: false, path };
}

/** Cluster stage: merge every workspace's fragment for `cluster` into its sorted, canonical output. */
export function assembleCluster(cluster: string, fragments: readonly WorkspaceFragment[]): ClusterOutput {
  const diagnostics: Diagnostic[] = [];
  const chosen = new Map<string, { workspace: string; resource: IstioResource }>();
  const ordered = [...fragments].sort((x, y) => cmp(x.workspace, y.workspace));
  for (const frag of ordered) {
    for (const r of frag.resources) {
      const key = resourceKey(r);
      const prev = chosen.get(key);
      if (prev === undefined) {
        chosen.set(key, { workspace: frag.workspace, resource: r });
        continue;
      }
      if (prev.resource === r || contentHash(prev.resource) === contentHash(r)) continue;
      diagnostics.push({
        code: TranslateCode.OutputConflict,
        severity: Severity.Error,
        message:
          `workspaces "${prev.workspace}" and "${frag.workspace}" both produce ${r.kind} ${r.metadata.namespace}/${r.metadata.name} ` +
          `for cluster "${cluster}" with different content; the one from "${prev.workspace}" is kept. ` +
          `Rename one of the parent objects or move it so that only one workspace renders this object.`,
        object: { kind: r.kind, name: r.metadata.name, namespace: r.metadata.namespace, cluster },
      });
    }
  }
  // Fragments from translateWorkspace are already canonical (sorted keys): no second deep copy.
  const resources = [...chosen.values()].map((c) => c.resource).sort(compareResources);
  return { cluster, resources, diagnostics: sortDiagnostics(diagnostics) };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Path of a rendered object in the audit layout: `clusters/<cluster>/<namespace>/<kind>/<name>.yaml` (kind lower-cased). */
export function renderedPath(cluster: string, r: Pick<IstioResource, "kind" | "metadata">): string {
  return `clusters/${cluster}/${r.metadata.namespace}/${r.kind.toLowerCase()}/${r.metadata.name}.yaml`;
}
