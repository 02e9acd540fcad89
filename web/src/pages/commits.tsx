/** Commits: each accepted commit, when each cluster applied it (or refused it), and its audit commit. */
import { duration, gitHost, short } from "../format.js";
import { useApi } from "../live.js";
import type { CommitProgress, Commits, Status } from "../types.js";
import { diffHref } from "./diff.js";

export function nackText(p: CommitProgress): string | undefined {
  const n = p.nack;
  if (n === undefined) return undefined;
  if (typeof n === "string") return n;
  return n.message ?? n.errors?.map((e) => `${e.key}: ${e.message}`).join("; ");
}

export function CommitsPage() {
  const { data, error } = useApi<Commits>("/api/commits");
  const { data: st } = useApi<Status>("/api/status");
  if (!data) return <p>{error ? `Cannot read the commits: ${error}` : "Loading…"}</p>;
  const host = gitHost(st?.source.repository);
  const clusters = [...new Set(data.commits.flatMap((c) => Object.keys(c.clusters)))].sort();
  return (
    <section>
      <h2>Commits</h2>
      {data.commits.length === 0 && <p>No commit accepted yet.</p>}
      <table class="matrix" data-testid="commits">
        <thead>
          <tr>
            <th scope="col">Commit</th>
            <th scope="col">Accepted</th>
            {clusters.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
            <th scope="col">Audit</th>
            <th scope="col">
              <span class="sr">Diff</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {data.commits.map((c, i) => {
            const previous = data.commits[i + 1]?.commit;
            const accepted = c.acceptedAt ? Date.parse(c.acceptedAt) : undefined;
            return (
              <tr key={c.commit} data-commit={c.commit} class={c.inForce ? "in-force" : undefined}>
                <th scope="row">
                  {host ? <a href={host.commit(c.commit)}>{short(c.commit)}</a> : <code>{short(c.commit)}</code>}
                  {c.inForce && <small> in force</small>}
                </th>
                <td>{c.acceptedAt ? new Date(c.acceptedAt).toLocaleTimeString() : "–"}</td>
                {clusters.map((name) => {
                  const p = c.clusters[name];
                  const nack = p && nackText(p);
                  if (!p) return <td key={name} data-cluster={name} data-state="none" />;
                  if (nack) return <td key={name} data-cluster={name} data-state="nack" class="error" title={nack}>refused: {nack.slice(0, 80)}</td>;
                  if (p.appliedAtMs !== undefined)
                    return (
                      <td key={name} data-cluster={name} data-state="applied" class="ok" title={new Date(p.appliedAtMs).toISOString()}>
                        applied{accepted !== undefined && p.appliedAtMs >= accepted ? ` +${duration(p.appliedAtMs - accepted)}` : ""}
                        {p.unchanged && <small> (unchanged)</small>}
                      </td>
                    );
                  return <td key={name} data-cluster={name} data-state="pending" class="warn">pending</td>;
                })}
                <td>{c.audit ? <code>{short(c.audit)}</code> : "–"}</td>
                <td>{previous && <a href={diffHref(previous, c.commit)}>rendered diff</a>}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
