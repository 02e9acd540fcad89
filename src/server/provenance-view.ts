/**
 * `GET /api/provenance`: translate's contributions (src/translate/provenance.ts) of the commit in
 * force, joined with the outputs the server holds — each rendering parent with the clusters its Istio
 * objects are in, and each policy with "applied to N routes / destinations in M clusters".
 */
import { contributions, labelValue, LABEL_PARENT_KIND, LABEL_PARENT_NAME, LABEL_PARENT_NAMESPACE, refKey, type Desired, type DiscoveryInput, type GlooRef } from "../translate/index.js";

export interface ProvenanceInputs {
  readonly commit: string;
  readonly desired: Desired;
  readonly discovery: readonly { readonly cluster: string; readonly snapshot: unknown }[];
  readonly outputs: readonly { readonly cluster: string; readonly resources: readonly { readonly metadata: { readonly labels?: Readonly<Record<string, string>> } }[] }[];
}

/** The label form of a parent (labels are shortened the way the renderer writes them). */
const labelKey = (r: GlooRef) => `${labelValue(r.kind)}/${labelValue(r.namespace)}/${labelValue(r.name)}`;

export function provenanceView(inputs: ProvenanceInputs) {
  const discovery = new Map(inputs.discovery.map((d) => [d.cluster, d.snapshot as DiscoveryInput]));
  const prov = contributions(inputs.desired, discovery);
  // Rendering parent (label form) → clusters whose output holds one of its objects.
  const clustersOf = new Map<string, Set<string>>();
  for (const o of inputs.outputs) {
    for (const r of o.resources) {
      const l = r.metadata.labels ?? {};
      const kind = l[LABEL_PARENT_KIND];
      if (kind === undefined) continue;
      const key = `${kind}/${l[LABEL_PARENT_NAMESPACE] ?? ""}/${l[LABEL_PARENT_NAME] ?? ""}`;
      let s = clustersOf.get(key);
      if (s === undefined) clustersOf.set(key, (s = new Set()));
      s.add(o.cluster);
    }
  }
  const clusters = (r: GlooRef) => clustersOf.get(labelKey(r)) ?? new Set<string>();
  return {
    commit: inputs.commit,
    parents: prov.parents.map((p) => ({ ...p, clusters: [...clusters(p.parent)].sort() })),
    policies: prov.policies.map((p) => {
      const at = new Set<string>();
      for (const parent of p.parents) if (parent.kind === "RouteTable") for (const c of clusters(parent)) at.add(c);
      for (const d of p.destinations) {
        // A Service destination names its cluster; a VirtualDestination or ExternalService is wherever its objects are.
        const svc = /^service\/([^/]+)\//.exec(d);
        if (svc) at.add(svc[1]!);
        else {
          const [kind, , namespace, name] = d.split("/");
          if (kind !== undefined && namespace !== undefined && name !== undefined) for (const c of clusters({ kind, namespace, name })) at.add(c);
        }
      }
      return { ...p, key: refKey(p.policy), clusters: [...at].sort() };
    }),
  };
}
