/**
 * Provenance both ways: a rendered Istio object → the Gloo resource it came from (file:line in Git,
 * workspace), and a Gloo resource → every Istio object it produced in every cluster. The rendered
 * objects carry their parent in labels (gitmesh.io/parent-kind, -name, -namespace); /api/resources
 * gives each Gloo resource's file and line.
 */
import { useEffect, useState } from "preact/hooks";
import { getJson } from "../api.js";
import { gitHost, matches, short } from "../format.js";
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

interface GlooRef {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}
interface Contribution {
  readonly from: GlooRef;
  readonly role: "parent" | "delegated-child" | "route-policy" | "destination-policy" | "gateway-policy";
  readonly fields: readonly string[];
  readonly routes?: readonly string[];
  readonly destinations?: readonly string[];
}
/** GET /api/provenance (src/server/provenance-view.ts). */
interface ProvenanceAnswer {
  readonly commit: string | null;
  readonly parents: readonly { readonly parent: GlooRef; readonly contributions: readonly Contribution[]; readonly clusters: readonly string[] }[];
  readonly policies: readonly { readonly policy: GlooRef; readonly routes: readonly { readonly table: GlooRef; readonly route: string }[]; readonly destinations: readonly string[]; readonly parents: readonly GlooRef[]; readonly clusters: readonly string[] }[];
}

const ROLE: Record<Contribution["role"], string> = {
  parent: "rendered from",
  "delegated-child": "delegated child route table",
  "route-policy": "route policy",
  "destination-policy": "destination policy",
  "gateway-policy": "enforced on the gateway",
};

const sameRef = (a: GlooRef, b: { kind?: string | undefined; namespace?: string | undefined; name?: string | undefined }) => a.kind === b.kind && a.name === b.name && a.namespace === (b.namespace ?? "");
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** "applied to 3 routes in 2 clusters" (routes and destinations, as the policy reaches them). */
export function reachText(p: ProvenanceAnswer["policies"][number]): string {
  const what = [...(p.routes.length > 0 || p.destinations.length === 0 ? [plural(p.routes.length, "route")] : []), ...(p.destinations.length > 0 ? [plural(p.destinations.length, "destination")] : [])].join(" and ");
  return `applied to ${what} in ${plural(p.clusters.length, "cluster")}`;
}

function Contributions({ list }: { list: readonly Contribution[] }) {
  return (
    <ul data-testid="contributions">
      {list.map((c) => (
        <li key={`${c.from.kind}/${c.from.namespace}/${c.from.name}`} data-role={c.role} data-from={`${c.from.kind}/${c.from.namespace}/${c.from.name}`}>
          <small>{ROLE[c.role]}</small>{" "}
          <a href={provenanceHref({ kind: c.from.kind, namespace: c.from.namespace, name: c.from.name, gloo: true })}>
            {c.from.kind} {c.from.namespace}/{c.from.name}
          </a>
          {c.fields.length > 0 && (
            <>
              {" "}
              wrote <code>{c.fields.join(", ")}</code>
            </>
          )}
          {c.routes && c.routes.length > 0 && <> on {c.routes.length === 1 ? "route" : "routes"} <code>{c.routes.join(", ")}</code></>}
          {c.destinations && c.destinations.length > 0 && <> for <code>{c.destinations.join(", ")}</code></>}
        </li>
      ))}
    </ul>
  );
}

export function provenanceHref(p: { cluster?: string; kind: string; namespace: string; name: string; gloo?: boolean }): string {
  const q = new URLSearchParams({ ...(p.cluster ? { cluster: p.cluster } : {}), kind: p.kind, namespace: p.namespace, name: p.name, ...(p.gloo ? { gloo: "1" } : {}) });
  return `#/provenance?${q.toString()}`;
}

const parentOf = (o: KubeObject) => ({ kind: o.metadata.labels?.["gitmesh.io/parent-kind"], name: o.metadata.labels?.["gitmesh.io/parent-name"], namespace: o.metadata.labels?.["gitmesh.io/parent-namespace"] ?? "" });

export function ProvenancePage({ params }: { params: URLSearchParams }) {
  const { data: res } = useApi<{ commit: string | null; resources: GlooResource[] }>("/api/resources");
  const { data: st } = useApi<Status>("/api/status");
  const { data: prov } = useApi<ProvenanceAnswer>("/api/provenance");
  const [query, setQuery] = useState("");
  const [kindFilter, setKindFilter] = useState("");
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
        <h3>Every Gloo resource that contributed</h3>
        {prov ? <Contributions list={prov.parents.find((x) => sameRef(x.parent, p))?.contributions ?? []} /> : <p>Loading…</p>}
      </section>
    );
  }
  if (kind && name) {
    const r = res.resources.find((x) => x.kind === kind && x.name === name && (x.namespace ?? "") === namespace);
    if (!r) return <p>No {kind} {namespace}/{name} in the commit in force.</p>;
    const objs = produced(r);
    const ref = { kind: r.kind, namespace: r.namespace ?? "", name: r.name };
    const reach = prov?.policies.find((x) => sameRef(x.policy, ref));
    // What it merged into: the parents whose Istio objects carry its routes or fields.
    const into = (prov?.parents ?? []).filter((x) => !sameRef(x.parent, ref) && x.contributions.some((c) => sameRef(c.from, ref)));
    return (
      <section data-testid="provenance">
        <h2>
          {r.kind} {r.namespace}/{r.name}
        </h2>
        {reach && (
          <p data-testid="policy-reach">
            <strong>{reachText(reach)}</strong>
            {reach.routes.length > 0 && <> — {reach.routes.map((x) => `${x.table.namespace}/${x.table.name}#${x.route}`).join(", ")}</>}
          </p>
        )}
        {into.length > 0 && (
          <div data-testid="merged-into">
            <p>Its fields merge into the Istio objects of:</p>
            <ul>
              {into.map((x) => {
                const c = x.contributions.find((y) => sameRef(y.from, ref))!;
                return (
                  <li key={`${x.parent.kind}/${x.parent.namespace}/${x.parent.name}`}>
                    <a href={provenanceHref({ ...x.parent, gloo: true })}>
                      {x.parent.kind} {x.parent.namespace}/{x.parent.name}
                    </a>{" "}
                    in {plural(x.clusters.length, "cluster")}: <code>{c.fields.join(", ")}</code>
                    {c.routes && <> on <code>{c.routes.join(", ")}</code></>}
                  </li>
                );
              })}
            </ul>
          </div>
        )}
        <p>
          {fileLink(r)}, workspace <code>{r.workspace ?? "–"}</code>. {objs.length} Istio object{objs.length === 1 ? "" : "s"} of its own{objs.length > 0 ? ":" : "."}
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
  const kinds = [...new Set(res.resources.map((r) => r.kind))].sort();
  const shown = res.resources.filter((r) => (kindFilter === "" || r.kind === kindFilter) && matches(query, r.kind, r.namespace, r.name, r.workspace, r.file));
  /** What a resource did: its own Istio objects, or where it merged (a policy, a delegated child). */
  const effect = (r: GlooResource): string => {
    const own = produced(r).length;
    const ref = { kind: r.kind, namespace: r.namespace ?? "", name: r.name };
    const reach = prov?.policies.find((x) => sameRef(x.policy, ref));
    if (reach) return reachText(reach);
    const into = (prov?.parents ?? []).filter((x) => !sameRef(x.parent, ref) && x.contributions.some((c) => sameRef(c.from, ref)));
    if (own === 0 && into.length > 0) return `routes in ${into.map((x) => `${x.parent.kind} ${x.parent.namespace}/${x.parent.name}`).join(", ")}`;
    return String(own);
  };
  return (
    <section>
      <h2>Gloo resources in force</h2>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <input type="search" aria-label="Filter resources" placeholder="Filter by name, namespace, workspace, file…" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        <select aria-label="Resource kind" value={kindFilter} onChange={(e) => setKindFilter(e.currentTarget.value)}>
          <option value="">every kind</option>
          {kinds.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
        <small data-testid="resources-shown">
          {shown.length} of {res.resources.length} shown
        </small>
      </form>
      <table data-testid="resources">
        <thead>
          <tr>
            <th scope="col">Resource</th>
            <th scope="col">Workspace</th>
            <th scope="col">Source</th>
            <th scope="col">Istio objects / applied to</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((r) => (
            <tr key={`${r.kind}/${r.namespace ?? ""}/${r.name}`} data-resource={`${r.kind}/${r.namespace ?? ""}/${r.name}`}>
              <th scope="row">
                <a href={provenanceHref({ kind: r.kind, namespace: r.namespace ?? "", name: r.name, gloo: true })}>
                  {r.kind} {r.namespace}/{r.name}
                </a>
              </th>
              <td>{r.workspace ?? "–"}</td>
              <td>{fileLink(r)}</td>
              <td data-testid="effect">{effect(r)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
