/** Fleet overview: the commit in force, a rejected commit, the pipeline, and every cluster's state. */
import { ago, gitHost, short, syncClass } from "../format.js";
import { useApi } from "../live.js";
import type { ClusterView, Status } from "../types.js";
import { SuspendControls } from "./suspend.js";

/** A cluster's state with the commit in force, as the server decided it (src/server/cluster-sync.ts). */
export function SyncState({ c }: { c: ClusterView }) {
  const label = c.sync.state === "in-sync" ? "in sync" : c.sync.summary;
  return (
    <span class={syncClass(c.sync.state)} data-sync={c.sync.state} title={c.sync.summary}>
      {label}
    </span>
  );
}

export function OverviewPage() {
  const { data: st, error } = useApi<Status>("/api/status");
  if (!st) return <p>{error ? `Cannot read the server's status: ${error}` : "Loading…"}</p>;
  const host = gitHost(st.source.repository);
  const inSync = st.clusters.filter((c) => c.inSync).length;
  return (
    <>
      <section class="summary" aria-label="Summary">
        <div>
          <h2>Commit in force</h2>
          <p data-testid="commit-in-force">
            {st.commit ? host ? <a href={host.commit(st.commit.sha)}>{short(st.commit.sha)}</a> : <code>{short(st.commit.sha)}</code> : "none yet"}
            {st.commit && <small> committed {ago(st.commit.committedAt)}</small>}
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
            {st.clusters.map((c) => {
              return (
                <tr key={c.name} data-cluster={c.name} data-in-sync={String(c.inSync)} data-sync={c.sync.state}>
                  <th scope="row">
                    <a href={`#/clusters/${encodeURIComponent(c.name)}`}>{c.name}</a>
                  </th>
                  <td>{c.connected ? `connected to ${c.replica ?? "this replica"}` : c.replica ? `on ${c.replica}` : c.waitingForAgent ? "never connected" : "not connected"}</td>
                  <td>
                    <code>{short(c.commit)}</code>
                    {c.applied && <small> v{c.applied.version}, {ago(c.applied.at)}</small>}
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
