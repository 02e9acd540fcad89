/** The rendered change between two commits, per cluster: the same report as `gitmesh diff`, computed by the server. */
import { useEffect, useState } from "preact/hooks";
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

/**
 * Base and head are revisions as `gitmesh diff` takes them — a full or abbreviated SHA, a branch or a
 * tag (HEAD~1 and the like when the server reads a local repository); the server resolves them and
 * names what it cannot find. Without any, the two newest accepted commits are compared.
 */
export function DiffPage({ params }: { params: URLSearchParams }) {
  const { data: commits, error: commitsError } = useApi<Commits>("/api/commits");
  const accepted = (commits?.commits ?? []).filter((c) => c.rejected === null);
  const head = params.get("head") ?? accepted[0]?.commit ?? "";
  const base = params.get("base") ?? accepted[1]?.commit ?? "";
  const ready = head.trim() !== "" && base.trim() !== "";
  const { data: report, error } = useApi<DiffReport>(ready ? `/api/diff?${new URLSearchParams({ base: base.trim(), head: head.trim() }).toString()}` : null);
  const [typed, setTyped] = useState<{ base?: string; head?: string }>({});
  // The typed text follows the address when it changes (a link, the back button).
  useEffect(() => setTyped({}), [params.get("base"), params.get("head")]);
  if (!commits && !ready) return <section><h2>Rendered diff</h2><p>{commitsError ? `Cannot read the commits: ${commitsError}` : "Loading…"}</p></section>;
  const submit = (e: Event) => {
    e.preventDefault();
    location.hash = diffHref((typed.base ?? base).trim(), (typed.head ?? head).trim());
  };
  const field = (which: "base" | "head", value: string) => (
    <label>
      {which === "base" ? "From" : "to"}{" "}
      <input name={which} aria-label={`${which} revision`} list="diff-revisions" placeholder="SHA, branch or tag" size={22} value={typed[which] ?? value} onInput={(e) => setTyped((t) => ({ ...t, [which]: e.currentTarget.value }))} />
    </label>
  );
  return (
    <section>
      <h2>Rendered diff</h2>
      <form class="filters" onSubmit={submit} data-testid="diff-form">
        {field("base", base)} {field("head", head)}
        <button type="submit">Compare</button>
        <datalist id="diff-revisions">
          {accepted.map((c) => (
            <option key={c.commit} value={short(c.commit)}>
              {c.subject ?? ""}
              {c.inForce ? " (in force)" : ""}
            </option>
          ))}
        </datalist>
        <small>(both translated against the discovery the server holds now)</small>
      </form>
      {!ready && <p>Fewer than two accepted commits so far: type two revisions (a commit SHA, a branch or a tag) to compare.</p>}
      {report && (
        <p data-testid="diff-resolved">
          <code>{short(report.base.commit)}</code> → <code>{short(report.head.commit)}</code>
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
