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
  const labels: Record<string, string> = {
    [LABEL_MANAGED]: "true",
    [LABEL_CLUSTER]: labelValue(cluster),
    [LABEL_WORKSPACE]: labelValue(workspace),
    [LABEL_PARENT_KIND]: labelValue(parent.kind),
    [LABEL_PARENT_NAME]: labelValue(parent.name),
    [LABEL_PARENT_NAMESPACE]: labelValue(parent.namespace),
  };
  if (parent.cluster !== "") labels[LABEL_PARENT_CLUSTER] = labelValue(parent.cluster);
  return labels;
}

export function outputAnnotations(parent: ParentRef, extra: Readonly<Record<string, string>> = {}): Record<string, string> | undefined {
  const annotations: Record<string, string> = { ...extra };
  if (parent.file !== undefined) annotations[ANNOTATION_SOURCE_FILE] = parent.file;
  return Object.keys(annotations).length === 0 ? undefined : annotations;
}

/** Standard metadata of an output object. */
export function outputMetadata(
  name: string,
  namespace: string,
  cluster: string,
  workspace: string,
  parent: ParentRef,
  extraAnnotations: Readonly<Record<string, string>> = {},
): { name: string; namespace: string; labels: Record<string, string>; annotations?: Record<string, string> } {
  const annotations = outputAnnotations(parent, extraAnnotations);
  return {
    name,
    namespace,
    labels: outputLabels(cluster, workspace, parent),
    ...(annotations === undefined ? {} : { annotations }),
  };
}
