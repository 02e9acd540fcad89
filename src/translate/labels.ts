/**
 * Labels and annotations on every translation output: who manages it (`gitmesh.io/managed`), the
 * cluster it is for, the workspace that produced it, and the parent object that caused it. The
 * agent garbage-collects by these labels; the annotation points a reader at the source file.
 */
import { labelValue } from "./names.js";

export const LABEL_MANAGED = "gitmesh.io/managed";
export const LABEL_CLUSTER = "gitmesh.io/cluster";
export const LABEL_WORKSPACE = "gitmesh.io/workspace";
export const LABEL_PARENT_KIND = "gitmesh.io/parent-kind";
export const LABEL_PARENT_NAME = "gitmesh.io/parent-name";
export const LABEL_PARENT_NAMESPACE = "gitmesh.io/parent-namespace";
export const LABEL_PARENT_CLUSTER = "gitmesh.io/parent-cluster";
export const ANNOTATION_SOURCE_FILE = "gitmesh.io/source-file";

/** The object that caused an output: a Gloo object, or a discovered Kubernetes object (Service, Deployment). */
export interface ParentRef {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  /** Cluster of the parent ('' when the parent is cluster-independent Git config). */
  readonly cluster: string;
  /** Repo-relative source file, when the parent comes from Git. */
  readonly file?: string;
}

export function outputLabels(cluster: string, workspace: string, parent: ParentRef): Record<string, string> {
  // Built in canonical (sorted) key order, so canonicalisation keeps the object as it is.
  const labels: Record<string, string> = {
    [LABEL_CLUSTER]: labelValue(cluster),
    [LABEL_MANAGED]: "true",
  };
  if (parent.cluster !== "") labels[LABEL_PARENT_CLUSTER] = labelValue(parent.cluster);
  labels[LABEL_PARENT_KIND] = labelValue(parent.kind);
  labels[LABEL_PARENT_NAME] = labelValue(parent.name);
  labels[LABEL_PARENT_NAMESPACE] = labelValue(parent.namespace);
  labels[LABEL_WORKSPACE] = labelValue(workspace);
  return labels;
}

export function outputAnnotations(parent: ParentRef, extra: Readonly<Record<string, string>> = {}): Record<string, string> | undefined {
  const annotations: Record<string, string> = { ...extra };
  if (parent.file !== undefined) annotations[ANNOTATION_SOURCE_FILE] = parent.file;
  return Object.keys(annotations).length === 0 ? undefined : annotations;
}

const labelMemo = new WeakMap<ParentRef, Map<string, Map<string, Record<string, string>>>>();
const NO_ANNOTATIONS: Readonly<Record<string, string>> = Object.freeze({});
const annotationMemo = new WeakMap<ParentRef, Record<string, string> | undefined>();

/**
 * Standard metadata of an output object. The labels (and, without extra annotations, the
 * annotations) of one parent, cluster and workspace are one shared object: a parent that renders
 * an object per Service would otherwise hold thousands of identical maps in memory. Output is
 * immutable, so sharing is safe; callers never modify the returned maps.
 */
export function outputMetadata(
  name: string,
  namespace: string,
  cluster: string,
  workspace: string,
  parent: ParentRef,
  extraAnnotations: Readonly<Record<string, string>> = NO_ANNOTATIONS,
): { name: string; namespace: string; labels: Record<string, string>; annotations?: Record<string, string> } {
  let annotations: Record<string, string> | undefined;
  if (extraAnnotations !== NO_ANNOTATIONS && Object.keys(extraAnnotations).length > 0) annotations = outputAnnotations(parent, extraAnnotations);
  else if (annotationMemo.has(parent)) annotations = annotationMemo.get(parent);
  else {
    annotations = outputAnnotations(parent);
    annotationMemo.set(parent, annotations);
  }
  let byCluster = labelMemo.get(parent);
  if (byCluster === undefined) {
    byCluster = new Map();
    labelMemo.set(parent, byCluster);
  }
  let byWorkspace = byCluster.get(cluster);
  if (byWorkspace === undefined) {
    byWorkspace = new Map();
    byCluster.set(cluster, byWorkspace);
  }
  let labels = byWorkspace.get(workspace);
  if (labels === undefined) {
    labels = outputLabels(cluster, workspace, parent);
    byWorkspace.set(workspace, labels);
  }
  // Canonical key order (annotations, labels, name, namespace).
  return annotations === undefined ? { labels, name, namespace } : { annotations, labels, name, namespace };
}
