/**
 * Fleet insights (GET /api/insights): each finding with its code, severity, cluster, workspace, where
 * (file:line linked into the Git host when it comes from Git), what was found and the fix; filterable by
 * severity, cluster and code (initial values from the hash: #/insights?severity=error&cluster=c1&code=X).
 */
import { useState } from "preact/hooks";
import { gitHost, short } from "../format.js";
import { useApi } from "../live.js";
import type { Status } from "../types.js";

interface Insight {
  readonly code: string;
  readonly severity: "error" | "warning" | "info";
  readonly cluster?: string;
  readonly workspace?: string;
  readonly object?: { readonly kind: string; readonly name: string; readonly namespace?: string };
  readonly file?: string;
  readonly line?: number;
  readonly message: string;
  readonly fix: string;
}

interface Insights {
  readonly commit: string | null;
  readonly today: string;
  readonly counts: { readonly error: number; readonly warning: number; readonly info: number };
  readonly insights: readonly Insight[];
}

const ALL = "";

export function InsightsPage({ params }: { params: URLSearchParams }) {
  const { data, error } = useApi<Insights>("/api/insights");
  const { data: st } = useApi<Status>("/api/status");
  const [severity, setSeverity] = useState(params.get("severity") ?? ALL);
  const [cluster, setCluster] = useState(params.get("cluster") ?? ALL);
  const [code, setCode] = useState(params.get("code") ?? ALL);
  if (!data) return <p>{error ? `Cannot read the insights: ${error}` : "Loading…"}</p>;
  const host = gitHost(st?.source.repository);
  const prefix = st?.source.path ? `${st.source.path.replace(/\/$/, "")}/` : "";
  const clusters = [...new Set(data.insights.flatMap((i) => (i.cluster === undefined ? [] : [i.cluster])))].sort();
  const codes = [...new Set(data.insights.map((i) => i.code))].sort();
  const shown = data.insights.filter((i) => (severity === ALL || i.severity === severity) && (cluster === ALL || i.cluster === cluster) && (code === ALL || i.code === code));
  const select = (label: string, value: string, set: (v: string) => void, options: readonly string[], testId: string) => (
    <label>
      {label}{" "}
      <select value={value} data-testid={testId} onChange={(e) => set(e.currentTarget.value)}>
        <option value={ALL}>all</option>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <section>
      <h2>Insights</h2>
      <p>
        Commit in force <code>{short(data.commit)}</code>, analysed {data.today.slice(0, 10)}: {data.counts.error} error{data.counts.error === 1 ? "" : "s"}, {data.counts.warning} warning
        {data.counts.warning === 1 ? "" : "s"}, {data.counts.info} info. What each code means and how to fix it: docs/insights.md.
      </p>
      <p class="filters">
        {select("Severity", severity, setSeverity, ["error", "warning", "info"], "filter-severity")} {select("Cluster", cluster, setCluster, clusters, "filter-cluster")}{" "}
        {select("Code", code, setCode, codes, "filter-code")}
      </p>
      {shown.length === 0 ? (
        <p class="ok" data-testid="insights-empty">
          {data.insights.length === 0 ? "Nothing to report." : "No insight matches the filters."}
        </p>
      ) : (
        <table data-testid="insights">
          <thead>
            <tr>
              <th>Severity</th>
              <th>Code</th>
              <th>Cluster</th>
              <th>Workspace</th>
              <th>Where</th>
              <th>Finding and fix</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((i, n) => {
              const where = i.file !== undefined ? `${i.file}:${i.line ?? 1}` : i.object !== undefined ? `${i.object.kind} ${i.object.namespace === undefined ? "" : `${i.object.namespace}/`}${i.object.name}` : "";
              return (
                <tr key={n} class={i.severity} data-code={i.code} data-severity={i.severity} data-cluster={i.cluster ?? ""}>
                  <td class="sev">{i.severity}</td>
                  <td>
                    <code>{i.code}</code>
                  </td>
                  <td>{i.cluster ?? "—"}</td>
                  <td>{i.workspace ?? "—"}</td>
                  <td>{host && data.commit && i.file !== undefined ? <a href={host.file(data.commit, prefix + i.file, i.line)}>{where}</a> : <span class="where">{where}</span>}</td>
                  <td>
                    {i.message}
                    <br />
                    <small class="fix">Fix: {i.fix}</small>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}
