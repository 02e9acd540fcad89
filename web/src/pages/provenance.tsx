/**
 * Provenance both ways: a rendered Istio object → the Gloo resource it came from (file:line in Git,
 * workspace), and a Gloo resource → every Istio object it produced in every cluster. The rendered
 * objects carry their parent in labels (gitmesh.io/parent-kind, -name, -namespace); /api/resources
 * gives each Gloo resource's file and line.
 */
import { useEffect, useState } from "preact/hooks";
import { getJson } from "../api.js";
import { gitHost, short } from "../format.js";
import { useApi } from "../live.js";
import type { ClusterOutput, KubeObject, Status } from "../types.js";

interface GlooResource {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string | null;
  readonly workspace: string | null;
  readonly file: string;
  readonly line: number;
}

export function provenanceHref(p: { cluster?: string; kind: string; namespace: string; name: string; gloo?: boolean }): string {
  const q = new URLSearchParams({ ...(p.cluster ? { cluster: p.cluster } : {}), kind: p.kind, namespace: p.namespace, name: p.name, ...(p.gloo ? { gloo: "1" } : {}) });
  return `#/provenance?${q.toString()}`;
}

const parentOf = (o: KubeObject) => ({ kind: o.metadata.labels?.["gitmesh.io/parent-kind"], name: o.metadata.labels?.["gitmesh.io/parent-name"], namespace: o.metadata.labels?.["gitmesh.io/parent-namespace"] ?? "" });

export function ProvenancePage({ params }: { params: URLSearchParams }) {
  const { data: res } = useApi<{ commit: string | null; resources: GlooResource[] }>("/api/resources");
  const { data: st } = useApi<Status>("/api/status");
  const [outputs, setOutputs] = useState<ClusterOutput[] | undefined>();
  const clusters = st?.clusters.map((c) => c.name).join(",");
  useEffect(() => {
    if (clusters === undefined) return;
    Promise.all(clusters.split(",").filter(Boolean).map((c) => getJson<ClusterOutput>(`/api/clusters/${encodeURIComponent(c)}/output`).catch(() => undefined)))
      .then((all) => setOutputs(all.filter((o): o is ClusterOutput => o !== undefined)))
      .catch(() => setOutputs([]));
  }, [clusters, res?.commit]);
  if (!res || !st || !outputs) return <p>Loading…</p>;
  const host = gitHost(st.source.repository);
  const prefix = st.source.path ? `${st.source.path.replace(/\/$/, "")}/` : "";
  const fileLink = (r: GlooResource) => {
    const text = `${r.file}:${r.line}`;
    return host && res.commit ? <a href={host.file(res.commit, prefix + r.file, r.line)}>{text}</a> : <code>{text}</code>;
  };
  const kind = params.get("kind");
  const name = params.get("name");
  const namespace = params.get("namespace") ?? "";
  const produced = (r: GlooResource) => outputs.flatMap((o) => o.resources.filter((x) => { const p = parentOf(x); return p.kind === r.kind && p.name === r.name && p.namespace === (r.namespace ?? ""); }).map((x) => ({ cluster: o.cluster, obj: x })));

  if (kind && name && params.get("gloo") !== "1") {
    const cluster = params.get("cluster");
    const obj = outputs.find((o) => o.cluster === cluster)?.resources.find((r) => r.kind === kind && r.metadata.name === name && (r.metadata.namespace ?? "") === namespace);
    if (!obj) return <p>No {kind} {namespace}/{name} in the output of cluster {cluster}.</p>;
    const p = parentOf(obj);
    const source = res.resources.find((r) => r.kind === p.kind && r.name === p.name && (r.namespace ?? "") === p.namespace);
    return (
      <section data-testid="provenance">
        <h2>
          {kind} {namespace}/{name} <small>in {cluster}</small>
        </h2>
        <p>
          Rendered from {p.kind ?? "?"} <code>{p.namespace}/{p.name}</code>
          {source ? <> in {fileLink(source)}, workspace <code>{source.workspace ?? obj.metadata.labels?.["gitmesh.io/workspace"] ?? "–"}</code></> : <> (source file {obj.metadata.annotations?.["gitmesh.io/source-file"] ?? "unknown"})</>}, commit <code>{short(res.commit)}</code>.
        </p>
        {source && <p><a href={provenanceHref({ kind: source.kind, namespace: source.namespace ?? "", name: source.name, gloo: true })}>Everything {source.kind} {source.name} produced</a></p>}
      </section>
    );
  }
  if (kind && name) {
    const r = res.resources.find((x) => x.kind === kind && x.name === name && (x.namespace ?? "") === namespace);
    if (!r) return <p>No {kind} {namespace}/{name} in the commit in force.</p>;
    const objs = produced(r);
    return (
      <section data-testid="provenance">
        <h2>
          {r.kind} {r.namespace}/{r.name}
        </h2>
        <p>
          {fileLink(r)}, workspace <code>{r.workspace ?? "–"}</code>. {objs.length} Istio object{objs.length === 1 ? "" : "s"}:
        </p>
        <ul>
          {objs.map(({ cluster, obj }) => (
            <li key={`${cluster}/${obj.kind}/${obj.metadata.namespace ?? ""}/${obj.metadata.name}`}>
              <a href={provenanceHref({ cluster, kind: obj.kind, namespace: obj.metadata.namespace ?? "", name: obj.metadata.name })}>
                {cluster}: {obj.kind} {obj.metadata.namespace}/{obj.metadata.name}
              </a>
            </li>
          ))}
        </ul>
      </section>
    );
  }
  return (
    <section>
      <h2>Gloo resources in force</h2>
      <table data-testid="resources">
        <thead>
          <tr>
            <th scope="col">Resource</th>
            <th scope="col">Workspace</th>
            <th scope="col">Source</th>
            <th scope="col">Istio objects</th>
          </tr>
        </thead>
        <tbody>
          {res.resources.map((r) => (
            <tr key={`${r.kind}/${r.namespace ?? ""}/${r.name}`}>
              <th scope="row">
                <a href={provenanceHref({ kind: r.kind, namespace: r.namespace ?? "", name: r.name, gloo: true })}>
                  {r.kind} {r.namespace}/{r.name}
                </a>
              </th>
              <td>{r.workspace ?? "–"}</td>
              <td>{fileLink(r)}</td>
              <td>{produced(r).length}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
