/**
 * Commits: each commit read from Git with its message and author — accepted ones with each cluster's
 * state (the commit in force: the server's sync answer, src/server/cluster-sync.ts; older ones:
 * applied, refused or superseded) and their audit commit, rejected ones with their errors.
 */
import { duration, gitHost, short, syncClass } from "../format.js";
import { useApi } from "../live.js";
import type { CommitProgress, Commits, CommitView, Status } from "../types.js";
import { diffHref } from "./diff.js";

export function nackText(p: CommitProgress): string | undefined {
  const n = p.nack;
  if (n === undefined) return undefined;
  if (typeof n === "string") return n;
  return n.message ?? n.errors?.map((e) => `${e.key}: ${e.message}`).join("; ");
}

/** One cluster's part in one commit, in the server's words. */
function ClusterCell({ name, c, p }: { name: string; c: CommitView; p: CommitProgress | undefined }) {
  if (!p) return <td data-cluster={name} data-state="none" />;
  const accepted = c.acceptedAt ? Date.parse(c.acceptedAt) : undefined;
  const nack = nackText(p);
  const title = p.summary ?? (p.state === "refused" ? nack : p.appliedAtMs !== undefined ? new Date(p.appliedAtMs).toISOString() : undefined);
  let text: string;
  if (p.state === "in-sync" || p.state === "applied") text = `applied${p.appliedAtMs !== undefined && accepted !== undefined && p.appliedAtMs >= accepted ? ` +${duration(p.appliedAtMs - accepted)}` : ""}`;
  else if (p.state === "refused") text = `refused: ${nack ?? ""}`;
  else if (p.summary !== undefined) text = p.summary.replace(/^not applied yet — /, "");
  else text = p.state;
  return (
    <td data-cluster={name} data-state={p.state} class={syncClass(p.state)} title={title}>
      {text.length > 80 ? `${text.slice(0, 79)}…` : text}
      {p.unchanged && <small> (unchanged)</small>}
    </td>
  );
}

export function CommitsPage() {
  const { data, error } = useApi<Commits>("/api/commits");
  const { data: st } = useApi<Status>("/api/status");
  if (!data) return <p>{error ? `Cannot read the commits: ${error}` : "Loading…"}</p>;
  const host = gitHost(st?.source.repository);
  const clusters = [...new Set(data.commits.flatMap((c) => Object.keys(c.clusters)))].sort();
  const accepted = data.commits.filter((c) => c.rejected === null);
  return (
    <section>
      <h2>Commits</h2>
      {data.commits.length === 0 && <p>No commit read yet.</p>}
      <table class="matrix" data-testid="commits">
        <thead>
          <tr>
            <th scope="col">Commit</th>
            <th scope="col">Message</th>
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
          {data.commits.map((c) => {
            const previous = accepted[accepted.indexOf(c) + 1]?.commit;
            const sha = host ? <a href={host.commit(c.commit)}>{short(c.commit)}</a> : <code>{short(c.commit)}</code>;
            const message = (
              <td title={c.message ?? undefined}>
                {c.subject ?? "–"}
                {c.author && <small> · {c.author}</small>}
              </td>
            );
            if (c.rejected)
              return (
                <tr key={c.commit} data-commit={c.commit} data-rejected="true">
                  <th scope="row">
                    {sha} <small class="error">rejected</small>
                  </th>
                  {message}
                  <td colSpan={clusters.length + 3} class="error" data-testid="rejected-errors">
                    {c.rejected.errorCount} error{c.rejected.errorCount === 1 ? "" : "s"}: {c.rejected.errors.slice(0, 3).join("; ")}
                    {c.rejected.errors.length > 3 && " …"}
                  </td>
                </tr>
              );
            return (
              <tr key={c.commit} data-commit={c.commit} class={c.inForce ? "in-force" : undefined}>
                <th scope="row">
                  {sha}
                  {c.inForce && <small> in force</small>}
                </th>
                {message}
                <td>{c.acceptedAt ? new Date(c.acceptedAt).toLocaleTimeString() : "–"}</td>
                {clusters.map((name) => (
                  <ClusterCell key={name} name={name} c={c} p={c.clusters[name]} />
                ))}
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
