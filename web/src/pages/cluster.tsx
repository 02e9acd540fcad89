/** One cluster: its agent, what discovery saw, and the applied output grouped by namespace and kind. */
import { useEffect, useState } from "preact/hooks";
import { ago, clock, short } from "../format.js";
import { useApi } from "../live.js";
import type { ClusterInput, ClusterOutput, ClusterView, Commits, KubeObject } from "../types.js";
import { nackText } from "./commits.js";
import { nackErrors, SyncState } from "./overview.js";
import { SuspendControls } from "./suspend.js";
import { provenanceHref } from "./provenance.js";

function groupBy<T>(items: readonly T[], key: (t: T) => string): [string, T[]][] {
  const m = new Map<string, T[]>();
  for (const i of items) {
    const k = key(i);
    m.set(k, [...(m.get(k) ?? []), i]);
  }
  return [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

export function ClusterPage({ name }: { name: string }) {
  const enc = encodeURIComponent(name);
  const { data: c, error } = useApi<ClusterView>(`/api/clusters/${enc}`);
  const { data: input } = useApi<ClusterInput>(`/api/clusters/${enc}/input`);
  const { data: output } = useApi<ClusterOutput>(`/api/clusters/${enc}/output`);
  const { data: commits } = useApi<Commits>("/api/commits");
  const refusals = (commits?.commits ?? []).flatMap((cm) => {
    const p = cm.clusters[name];
    const text = p?.state === "refused" ? nackText(p) : undefined;
    return text ? [{ commit: cm.commit, text, errors: nackErrors(p?.nack) }] : [];
  });
  if (!c) return <p>{error ? `Cannot read cluster ${name}: ${error}` : "Loading…"}</p>;
  const byNamespace = output ? groupBy(output.resources, (r) => r.metadata.namespace || "(cluster-scoped)") : [];
  const regions = input ? [...new Set(input.snapshot.workloads.flatMap((w) => (w.localities ?? []).map((l) => [l.region, l.zone].filter(Boolean).join("/"))))].filter(Boolean) : [];
  return (
    <>
      <h2>Cluster {name}</h2>
      <section class="summary">
        <div>
          <h3>Agent</h3>
          <p>{c.connected ? `connected to ${c.replica ?? "this replica"}` : c.waitingForAgent ? "never connected" : `not connected, last seen ${ago(c.lastSeen)}`}</p>
        </div>
        <div>
          <h3>Applied</h3>
          <p>
            {c.applied ? (
              <>
                v{c.applied.version} from <code>{short(c.applied.sourceCommit)}</code>, <span title={clock(c.applied.at)}>{ago(c.applied.at)}</span>
              </>
            ) : (
              "nothing yet"
            )}
          </p>
        </div>
        <div>
          <h3>Status</h3>
          <p data-testid="cluster-status">
            <SyncState c={c} />
          </p>
          <SuspendControls cluster={name} suspended={c.suspended} />
          {c.frozen.length > 0 && <p class="warn">frozen route tables: {c.frozen.join(", ")}</p>}
        </div>
        <div>
          <h3>Discovery</h3>
          <p>
            {input ? (
              <>
                {input.snapshot.services.length} services, {input.snapshot.workloads.length} workloads, {input.snapshot.gateways?.length ?? 0} gateways
                {regions.length > 0 && <> · {regions.join(", ")}</>} · {ago(input.at)}
              </>
            ) : (
              "none yet"
            )}
          </p>
        </div>
      </section>
      {c.errors.count > 0 && (
        <section class="rejected">
          <h3>Translation errors</h3>
          <ul>
            {c.errors.first.map((d) => (
              <li key={d}>
                <code>{d}</code>
              </li>
            ))}
          </ul>
        </section>
      )}
      {(c.driftRepairs?.length ?? 0) > 0 && (
        <section data-testid="drift">
          <h3>Drift repaired</h3>
          <p>
            <small>Objects gitmesh owns that someone else changed or deleted; the agent put them back.</small>
          </p>
          <ul>
            {c.driftRepairs!.map((d) => (
              <li key={`${d.at}/${d.key}`}>
                <span title={clock(d.at)}>{ago(d.at)}</span>: <span class="warn">{d.why}</span> <code>{d.key}</code>
                {d.managers.length > 0 && <small> by {d.managers.join(", ")}</small>}
              </li>
            ))}
          </ul>
        </section>
      )}
      {refusals.length > 0 && (
        <section class="rejected" data-testid="refusals">
          <h3>Refused by the agent</h3>
          <ul>
            {refusals.map((r) => (
              <li key={r.commit}>
                {r.errors.length > 1 ? (
                  <details class="refusal">
                    <summary>
                      <code>{short(r.commit)}</code>: {r.errors[0]} <small>(+{r.errors.length - 1} more)</small>
                    </summary>
                    <ol class="nack-errors">
                      {r.errors.map((e, i) => (
                        <li key={i}>
                          <code>{e}</code>
                        </li>
                      ))}
                    </ol>
                  </details>
                ) : (
                  <>
                    <code>{short(r.commit)}</code>: {r.text}
                  </>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}
      <section>
        <h3>Output {output ? `v${output.version} (${output.resources.length} objects)` : ""}</h3>
        {byNamespace.map(([ns, objs]) => (
            <details key={ns} open={byNamespace.length <= 4}>
              <summary>
                {ns} <small>({objs.length})</small>
              </summary>
              {groupBy(objs, (r) => r.kind).map(([kind, ofKind]) => (
                <div key={kind} class="kind">
                  <h4>{kind}</h4>
                  <ul class="objects">
                    {ofKind.map((o) => (
                      <ObjectItem key={o.metadata.name} cluster={name} obj={o} />
                    ))}
                  </ul>
                </div>
              ))}
            </details>
          ))}
      </section>
    </>
  );
}

function ObjectItem({ cluster, obj }: { cluster: string; obj: KubeObject }) {
  const [open, setOpen] = useState(false);
  const labels = obj.metadata.labels ?? {};
  const parent = labels["gitmesh.io/parent-kind"] ? `${labels["gitmesh.io/parent-kind"]} ${labels["gitmesh.io/parent-namespace"] ?? ""}/${labels["gitmesh.io/parent-name"] ?? ""}` : undefined;
  return (
    <li>
      <details onToggle={(e) => setOpen(e.currentTarget.open)}>
        <summary>
          <code>{obj.metadata.name}</code>
          {parent && <small> from {parent}</small>} <a href={provenanceHref({ cluster, kind: obj.kind, namespace: obj.metadata.namespace ?? "", name: obj.metadata.name })}>provenance</a>
        </summary>
        {open && <Yaml value={obj} />}
      </details>
    </li>
  );
}

/** An object as YAML; the YAML library is loaded the first time one is opened (it is most of the page weight otherwise). */
function Yaml({ value }: { value: unknown }) {
  const [text, setText] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    import("yaml")
      .then(({ stringify }) => current && setText(stringify(value)))
      .catch(() => current && setText(JSON.stringify(value, null, 2)));
    return () => {
      current = false;
    };
  }, [value]);
  return <pre>{text ?? "…"}</pre>;
}
