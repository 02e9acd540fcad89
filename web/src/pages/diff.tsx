/** The rendered change between two commits, per cluster: the same report as `gitmesh diff`, computed by the server. */
import { short } from "../format.js";
import { useApi } from "../live.js";
import type { Commits } from "../types.js";

interface Change {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly text: string;
}
interface DiffReport {
  readonly base: { readonly commit: string };
  readonly head: { readonly commit: string };
  readonly clusters: readonly { readonly cluster: string; readonly added: readonly Change[]; readonly changed: readonly Change[]; readonly removed: readonly Change[] }[];
  readonly introduced: readonly Diag[];
  readonly headErrors: number;
  /** Present when the server would reject head: the clusters keep base (src/git-sync/diff-report.ts). */
  readonly rejected?: { readonly keeps: string; readonly errors: readonly Diag[] };
  readonly risks?: readonly { readonly kind: string; readonly cluster: string; readonly message: string; readonly blocking: boolean }[];
}
interface Diag {
  readonly file?: string;
  readonly line?: number;
  readonly code: string;
  readonly message: string;
}

function DiagList({ list }: { list: readonly Diag[] }) {
  return (
    <ul>
      {list.map((d, i) => (
        <li key={i}>
          <code>
            {d.file ?? ""}
            {d.line === undefined ? "" : `:${d.line}`}
          </code>{" "}
          {d.code}: {d.message}
        </li>
      ))}
    </ul>
  );
}

export function diffHref(base: string, head: string): string {
  return `#/diff?${new URLSearchParams({ base, head }).toString()}`;
}

export function DiffPage({ params }: { params: URLSearchParams }) {
  const { data: commits } = useApi<Commits>("/api/commits");
  const list = commits?.commits ?? [];
  const head = params.get("head") ?? list[0]?.commit ?? "";
  const base = params.get("base") ?? list[1]?.commit ?? "";
  const ready = head !== "" && base !== "";
  const { data: report, error } = useApi<DiffReport>(ready ? `/api/diff?base=${base}&head=${head}` : null);
  const pick = (which: "base" | "head", value: string) => {
    location.hash = diffHref(which === "base" ? value : base, which === "head" ? value : head);
  };
  const select = (which: "base" | "head", value: string) => (
    <select aria-label={which} value={value} onChange={(e) => pick(which, e.currentTarget.value)}>
      {list.map((c) => (
        <option key={c.commit} value={c.commit}>
          {short(c.commit)}
          {c.inForce ? " (in force)" : ""}
        </option>
      ))}
    </select>
  );
  return (
    <section>
      <h2>Rendered diff</h2>
      {!ready ? (
        <p>Two accepted commits are needed to compare.</p>
      ) : (
        <p>
          From {select("base", base)} to {select("head", head)} <small>(both translated against the discovery the server holds now)</small>
        </p>
      )}
      {error && <p class="error">{error}</p>}
      {ready && !report && !error && <p>Translating both commits…</p>}
      {report && (
        <div data-testid="diff">
          {report.rejected && (
            <section class="rejected" data-testid="would-be-rejected">
              <h3 class="error">
                {short(report.head.commit)} would be rejected: the clusters keep {short(report.rejected.keeps)}; nothing would change
              </h3>
              <DiagList list={report.rejected.errors} />
            </section>
          )}
          {(report.risks ?? []).length > 0 && (
            <section data-testid="risks">
              <h3>Risks</h3>
              <ul>
                {(report.risks ?? []).map((r, i) => (
                  <li key={i} class={r.blocking ? "error" : "warn"}>
                    {r.blocking ? "needs consent — " : ""}
                    {r.cluster}: {r.message}
                  </li>
                ))}
              </ul>
            </section>
          )}
          {report.clusters.length === 0 && !report.rejected && <p>No rendered change.</p>}
          {report.clusters.map((c) => (
            <section key={c.cluster} data-cluster={c.cluster}>
              <h3>
                {c.cluster}: {c.added.length} added, {c.changed.length} changed, {c.removed.length} removed
              </h3>
              {(["added", "changed", "removed"] as const).flatMap((k) =>
                c[k].map((r) => (
                  <details key={`${k}/${r.kind}/${r.namespace}/${r.name}`} open={c[k].length + c.changed.length < 6}>
                    <summary>
                      <span class={k === "removed" ? "error" : k === "added" ? "ok" : "warn"}>{k}</span> {r.kind} <code>{r.namespace ? `${r.namespace}/` : ""}{r.name}</code>
                    </summary>
                    <pre class="diff">{r.text}</pre>
                  </details>
                )),
              )}
            </section>
          ))}
          {report.introduced.length > 0 && (
            <section class="rejected">
              <h3>New diagnostics in {short(report.head.commit)}</h3>
              <DiagList list={report.introduced} />
            </section>
          )}
        </div>
      )}
    </section>
  );
}
