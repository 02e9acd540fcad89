/** Fleet overview: the commit in force, a rejected commit, the pipeline, and every cluster's state. */
import { ago, gitHost, short } from "../format.js";
import { useApi } from "../live.js";
import type { ClusterView, Commits, Status } from "../types.js";
import { nackText } from "./commits.js";

/** Why a cluster is not in sync, in words (empty when it is). */
export function notInSyncReasons(c: ClusterView, refused?: string): string[] {
  const why: string[] = [];
  if (c.cutOff) why.push(c.cutOff);
  if (refused) why.push(`the agent refused the commit in force: ${refused}`);
  if (c.waitingForAgent) why.push("waiting for its agent to connect for the first time");
  else if (c.stale) why.push(`agent not connected (last seen ${ago(c.lastSeen)})`);
  if (!c.warmed) why.push("no discovery yet");
  if (c.output && (!c.applied || c.applied.version < c.output.version)) why.push(`output v${c.output.version} not applied yet (agent runs ${c.applied ? `v${c.applied.version}` : "nothing"})`);
  if (c.pruneHeld) why.push(`deletions held back${c.pruneHeld.reason ? `: ${c.pruneHeld.reason}` : ""}`);
  if (c.frozen.length > 0) why.push(`frozen route tables: ${c.frozen.join(", ")}`);
  if (c.errors.count > 0) why.push(`${c.errors.count} translation error${c.errors.count === 1 ? "" : "s"}`);
  return why;
}

export function OverviewPage() {
  const { data: st, error } = useApi<Status>("/api/status");
  const { data: commits } = useApi<Commits>("/api/commits");
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
              const inForce = commits?.commits.find((x) => x.inForce)?.clusters[c.name];
              const why = notInSyncReasons(c, inForce && inForce.appliedAtMs === undefined ? nackText(inForce) : undefined);
              return (
                <tr key={c.name} data-cluster={c.name} data-in-sync={String(c.inSync)}>
                  <th scope="row">
                    <a href={`#/clusters/${encodeURIComponent(c.name)}`}>{c.name}</a>
                  </th>
                  <td>{c.connected ? `connected to ${c.replica ?? "this replica"}` : c.replica ? `on ${c.replica}` : c.waitingForAgent ? "never connected" : "not connected"}</td>
                  <td>
                    <code>{short(c.commit)}</code>
                    {c.applied && <small> v{c.applied.version}, {ago(c.applied.at)}</small>}
                  </td>
                  <td>{c.inSync ? <span class="ok">in sync</span> : <span class="warn" title={why.join("; ")}>{why[0] ?? "not in sync"}</span>}</td>
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
