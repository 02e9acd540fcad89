/** Every diagnostic the server holds (rejected commit, translation, workspaces), grouped by file, with file:line and a link into the Git host. */
import { gitHost, short } from "../format.js";
import { useApi } from "../live.js";
import type { Diagnostics, Status, StructuredDiagnostic } from "../types.js";

export function DiagnosticsPage() {
  const { data, error } = useApi<Diagnostics>("/api/diagnostics");
  const { data: st } = useApi<Status>("/api/status");
  if (!data) return <p>{error ? `Cannot read the diagnostics: ${error}` : "Loading…"}</p>;
  const host = gitHost(st?.source.repository);
  const prefix = st?.source.path ? `${st.source.path.replace(/\/$/, "")}/` : "";
  const byFile = new Map<string, StructuredDiagnostic[]>();
  for (const d of data.entries) byFile.set(d.file ?? "(no file)", [...(byFile.get(d.file ?? "(no file)") ?? []), d]);
  const files = [...byFile.keys()].sort();
  return (
    <section>
      <h2>Diagnostics</h2>
      <p>
        Commit in force <code>{short(data.commit)}</code>
        {data.rejected && (
          <>
            ; commit <code>{short(data.rejected)}</code> rejected
          </>
        )}
        . {data.errorCount} error{data.errorCount === 1 ? "" : "s"}.
      </p>
      {files.length === 0 && <p class="ok">Nothing to report.</p>}
      {files.map((file) => {
        const ds = [...byFile.get(file)!].sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
        return (
          <section key={file} class="file" data-file={file}>
            <h3>
              <code>{file}</code>
            </h3>
            <ul>
              {ds.map((d, i) => {
                const sha = d.origin.startsWith("rejected") ? data.rejected : data.commit;
                const where = `${file}${d.line === undefined ? "" : `:${d.line}${d.column === undefined ? "" : `:${d.column}`}`}`;
                return (
                  <li key={i} class={d.severity}>
                    <span class="sev">{d.severity}</span> <code>{d.code}</code>{" "}
                    {host && sha && d.file ? <a href={host.file(sha, prefix + d.file, d.line)}>{where}</a> : <span class="where">{where}</span>} {d.message}
                    {d.path && <small> (at {d.path})</small>} <small class="origin">{d.origin}</small>
                  </li>
                );
              })}
            </ul>
          </section>
        );
      })}
    </section>
  );
}
