/** Test helpers: YAML text → translation inputs (objects with source positions, discovery snapshots). */
import { LineCounter, parseAllDocuments } from "yaml";
import type { DesiredInput, DiscoveryInput, InputObject } from "../../src/translate/index.js";

/** Parses multi-document YAML into input objects (key, source line) the way the loader does. */
export function objectsFromYaml(text: string, file = "input.yaml"): InputObject[] {
  const lc = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter: lc });
  const out: InputObject[] = [];
  docs.forEach((doc, docIndex) => {
    const value = doc.toJS() as Record<string, any> | null; // eslint-disable-line @typescript-eslint/no-explicit-any
    if (value === null) return;
    const pos = lc.linePos(doc.contents?.range[0] ?? 0);
    const md = value.metadata ?? {};
    const cluster = md.annotations?.["cluster.solo.io/cluster"] as string | undefined;
    const ns = (md.namespace as string | undefined) ?? "gloo-mesh";
    out.push({
      key: `${value.kind}/${cluster ?? ""}/${ns}/${md.name}`,
      apiVersion: value.apiVersion,
      kind: value.kind,
      metadata: { name: md.name, namespace: ns, labels: md.labels ?? {}, annotations: md.annotations ?? {}, ...(md.creationTimestamp ? { creationTimestamp: String(md.creationTimestamp) } : {}) },
      spec: value.spec ?? {},
      ...(cluster === undefined ? {} : { cluster }),
      source: { file, line: pos.line, column: pos.col, docIndex },
    });
  });
  return out;
}

export function desiredFromYaml(text: string, file = "input.yaml"): DesiredInput {
  return { objects: objectsFromYaml(text, file) };
}

/** Discovery snapshots from YAML documents (one DiscoverySnapshot per document). */
export function discoveryFromYaml(text: string): Map<string, DiscoveryInput> {
  const m = new Map<string, DiscoveryInput>();
  for (const doc of parseAllDocuments(text)) {
    const s = doc.toJS() as Partial<DiscoveryInput> & { cluster: string };
    m.set(s.cluster, { namespaces: [], services: [], workloads: [], gateways: [], ...s });
  }
  return m;
}
