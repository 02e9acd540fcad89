/**
 * Commits: each commit read from Git with its message and author — accepted ones with each cluster's
 * state (the commit in force: the server's sync answer, src/server/cluster-sync.ts; older ones:
 * applied, refused or superseded) and their audit commit, rejected ones with their errors.
 */
import { useState } from "preact/hooks";
import { clock, duration, gitHost, matches, short, syncClass } from "../format.js";
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
  const title = p.summary ?? (p.state === "refused" ? nack : p.appliedAtMs !== undefined ? clock(p.appliedAtMs) : undefined);
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
  const [query, setQuery] = useState("");
  const [clusterQuery, setClusterQuery] = useState("");
  if (!data) return <p>{error ? `Cannot read the commits: ${error}` : "Loading…"}</p>;
  const host = gitHost(st?.source.repository);
  const allClusters = [...new Set(data.commits.flatMap((c) => Object.keys(c.clusters)))].sort();
  // A hundred clusters are a hundred columns: the cluster filter narrows them.
  const clusters = allClusters.filter((c) => matches(clusterQuery, c));
  const accepted = data.commits.filter((c) => c.rejected === null);
  const shown = data.commits.filter((c) => matches(query, c.commit, c.subject, c.message, c.author, c.rejected ? "rejected" : "accepted", c.inForce ? "in force" : ""));
  return (
    <section>
      <h2>Commits</h2>
      {data.commits.length === 0 && <p>No commit read yet.</p>}
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <input type="search" aria-label="Filter commits" placeholder="Filter commits by SHA, message, author…" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        <input type="search" aria-label="Filter cluster columns" placeholder="Clusters (columns)…" value={clusterQuery} onInput={(e) => setClusterQuery(e.currentTarget.value)} />
        <small data-testid="commits-shown">
          {shown.length} of {data.commits.length} commits, {clusters.length} of {allClusters.length} clusters
        </small>
      </form>
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
          {shown.map((c) => {
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
                <td data-testid="accepted-at">{clock(c.acceptedAt)}</td>
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
