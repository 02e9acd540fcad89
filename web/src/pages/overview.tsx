/** Fleet overview: the commit in force, a rejected commit, the pipeline, and every cluster's state. */
import { useState } from "preact/hooks";
import { ago, clock, gitHost, matches, short, syncClass } from "../format.js";
import { useApi } from "../live.js";
import type { ClusterView, CommitView, Status } from "../types.js";
import { SuspendControls } from "./suspend.js";

/** The errors of a NACK, one per line (the tracker keeps them as a list, the store as one message). */
export function nackErrors(nack: CommitView["clusters"][string]["nack"]): string[] {
  if (nack === undefined) return [];
  if (typeof nack === "string") return nack.split(/;\s+(?=\S+: )/).filter((m) => m.trim() !== "");
  if (nack.errors && nack.errors.length > 0) return nack.errors.map((e) => `${e.key}: ${e.message}`);
  return nack.message ? [nack.message] : [];
}

/** Every error of a cluster's NACK of a commit, read when the disclosure opens. */
function NackErrors({ cluster, commit }: { cluster: string; commit: string }) {
  const { data, error } = useApi<CommitView>(`/api/commits/${commit}`);
  if (!data) return <p>{error ?? "Loading…"}</p>;
  const errors = nackErrors(data.clusters[cluster]?.nack);
  return (
    <ol class="nack-errors" data-testid="nack-errors">
      {errors.map((e, i) => (
        <li key={i}>
          <code>{e}</code>
        </li>
      ))}
    </ol>
  );
}

/**
 * A refusal as one line (the first error, and how many more) with a disclosure that lists them all:
 * a NACK of 40 objects must not fill the table.
 */
function Refusal({ c }: { c: ClusterView }) {
  const [open, setOpen] = useState(false);
  const line = c.sync.summary.split("\n")[0]!;
  // "first error (+39 more)": the count stays in sight however long the first error is.
  const more = / \(\+\d+ more\)$/.exec(line)?.[0] ?? "";
  const first = line.slice(0, line.length - more.length);
  const commit = c.sync.commit;
  return (
    <details class="refusal" data-testid="refusal" onToggle={(e) => setOpen(e.currentTarget.open)}>
      <summary class="error" title={line}>
        {first.length > 120 ? `${first.slice(0, 119)}…` : first}
        {more && <small>{more}</small>}
      </summary>
      {open && commit !== null && <NackErrors cluster={c.name} commit={commit} />}
    </details>
  );
}

/** A cluster's state with the commit in force, as the server decided it (src/server/cluster-sync.ts). */
export function SyncState({ c }: { c: ClusterView }) {
  if (c.sync.state === "refused") {
    return (
      <span class={syncClass(c.sync.state)} data-sync={c.sync.state}>
        <Refusal c={c} />
      </span>
    );
  }
  const label = c.sync.state === "in-sync" ? "in sync" : c.sync.summary;
  return (
    <span class={syncClass(c.sync.state)} data-sync={c.sync.state} title={c.sync.summary}>
      {label}
    </span>
  );
}

const STATE_FILTERS = [
  ["", "every state"],
  ["in-sync", "in sync"],
  ["not-applied", "not applied yet"],
  ["refused", "refused"],
  ["held", "deletions held"],
  ["cut-off", "cut off"],
  ["suspended", "suspended"],
] as const;

export function OverviewPage() {
  const { data: st, error } = useApi<Status>("/api/status");
  const [query, setQuery] = useState("");
  const [state, setState] = useState("");
  if (!st) return <p>{error ? `Cannot read the server's status: ${error}` : "Loading…"}</p>;
  const host = gitHost(st.source.repository);
  const inSync = st.clusters.filter((c) => c.inSync).length;
  const shown = st.clusters.filter((c) => (state === "" || c.sync.state === state) && matches(query, c.name, c.replica, c.sync.summary));
  return (
    <>
      <section class="summary" aria-label="Summary">
        <div>
          <h2>Commit in force</h2>
          <p data-testid="commit-in-force">
            {st.commit ? host ? <a href={host.commit(st.commit.sha)}>{short(st.commit.sha)}</a> : <code>{short(st.commit.sha)}</code> : "none yet"}
            {st.commit && <small title={clock(st.commit.committedAt)}> committed {ago(st.commit.committedAt)}</small>}
          </p>
        </div>
        <div>
          <h2>Clusters in sync</h2>
          <p>
            <strong data-testid="in-sync-count">{inSync}</strong> of {st.clusters.length}
          </p>
        </div>
        <div>
          <h2>Server</h2>
          <p>
            {st.ready ? "ready" : "not ready"} · {st.pipeline.mode ?? st.store} · {st.leader ? "leader" : "follower"} <small>({st.replica})</small>
          </p>
          {st.warming?.warming && <p class="warn">warming: waiting for {st.warming.waitingFor.join(", ") || "discovery"}</p>}
          {st.audit.heldBack && (
            <p class="warn" data-testid="audit-held">
              audit branch {st.audit.branch} held back{st.audit.heldBack.clusters.length > 0 ? ` by ${st.audit.heldBack.clusters.join(", ")}` : ""}: {st.audit.heldBack.reason}
            </p>
          )}
        </div>
        <div>
          <h2>Source</h2>
          <p>
            <code>{st.source.repository}</code> <small>{st.source.ref}</small>
          </p>
          {st.source.lastError && <p class="error">{st.source.lastError.message}</p>}
        </div>
      </section>
      {st.rejected && (
        <section class="rejected" role="alert" data-testid="rejected">
          <h2>
            Commit {host ? <a href={host.commit(st.rejected.commit)}>{short(st.rejected.commit)}</a> : <code>{short(st.rejected.commit)}</code>} was rejected ({st.rejected.errors} error{st.rejected.errors === 1 ? "" : "s"}); the previous commit stays in force
          </h2>
          <ul>
            {st.rejected.diagnostics.map((d) => (
              <li key={d}>
                <code>{d}</code>
              </li>
            ))}
          </ul>
        </section>
      )}
      <section>
        <h2>Clusters</h2>
        <SuspendControls suspended={st.clusters.find((c) => c.suspended?.scope === "fleet")?.suspended} />
        <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
          <input type="search" aria-label="Filter clusters" placeholder="Filter clusters by name, replica, status…" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
          <select aria-label="Cluster state" value={state} onChange={(e) => setState(e.currentTarget.value)}>
            {STATE_FILTERS.map(([v, label]) => (
              <option key={v} value={v}>
                {label} ({v === "" ? st.clusters.length : st.clusters.filter((c) => c.sync.state === v).length})
              </option>
            ))}
          </select>
          <small data-testid="clusters-shown">
            {shown.length} of {st.clusters.length} shown
          </small>
        </form>
        <table data-testid="clusters">
          <thead>
            <tr>
              <th scope="col">Cluster</th>
              <th scope="col">Agent</th>
              <th scope="col">Commit applied</th>
              <th scope="col">Status</th>
              <th scope="col">Discovery</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((c) => {
              return (
                <tr key={c.name} data-cluster={c.name} data-in-sync={String(c.inSync)} data-sync={c.sync.state}>
                  <th scope="row">
                    <a href={`#/clusters/${encodeURIComponent(c.name)}`}>{c.name}</a>
                  </th>
                  <td>{c.connected ? `connected to ${c.replica ?? "this replica"}` : c.replica ? `on ${c.replica}` : c.waitingForAgent ? "never connected" : "not connected"}</td>
                  <td>
                    <code>{short(c.commit)}</code>
                    {c.applied && <small title={clock(c.applied.at)}> v{c.applied.version}, {ago(c.applied.at)}</small>}
                  </td>
                  <td>
                    <SyncState c={c} />
                    {c.errors.count > 0 && <small class="error"> · {c.errors.count} translation error{c.errors.count === 1 ? "" : "s"}</small>}
                  </td>
                  <td>{c.discovery ? `${c.discovery.services} services, ${c.discovery.workloads} workloads · ${ago(c.discovery.at)}` : "none"}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>
    </>
  );
}
