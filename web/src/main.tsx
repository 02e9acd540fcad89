/**
 * The gitmesh UI: a read-only view of the management server (fleet, commits, clusters, provenance,
 * diagnostics). Hash routes, so the server serves one page; every page reads the JSON API and
 * re-reads it when the server's event stream says something changed.
 */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { setToken, subscribe, token } from "./api.js";
import { setTimeZone, timeZone } from "./format.js";
import { ClusterPage } from "./pages/cluster.js";
import { CommitsPage } from "./pages/commits.js";
import { DiagnosticsPage } from "./pages/diagnostics.js";
import { DiffPage } from "./pages/diff.js";
import { InsightsPage } from "./pages/insights.js";
import { LoginPage } from "./pages/login.js";
import { OverviewPage } from "./pages/overview.js";
import { ProvenancePage } from "./pages/provenance.js";
import { TrafficPage } from "./pages/traffic.js";
import { LiveContext } from "./live.js";
import "./style.css";

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return hash;
}

function route(hash: string) {
  const path = hash.replace(/^#/, "") || "/";
  const [p, query = ""] = path.split("?", 2) as [string, string?];
  const params = new URLSearchParams(query);
  const cluster = /^\/clusters\/([^/]+)$/.exec(p);
  if (cluster) return <ClusterPage name={decodeURIComponent(cluster[1]!)} />;
  if (p === "/commits") return <CommitsPage />;
  if (p === "/diagnostics") return <DiagnosticsPage />;
  if (p === "/diff") return <DiffPage params={params} />;
  if (p === "/insights") return <InsightsPage params={params} />;
  if (p === "/provenance") return <ProvenancePage params={params} />;
  if (p === "/traffic") return <TrafficPage params={params} />;
  return <OverviewPage />;
}

function App() {
  const [authed, setAuthed] = useState(token() !== null);
  const [tick, setTick] = useState(0);
  const [live, setLive] = useState(false);
  const [zone, setZone] = useState(timeZone());
  const localZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const hash = useHash();
  useEffect(() => {
    if (!authed) return;
    const abort = new AbortController();
    subscribe(
      (event) => {
        if (event === "unauthorized") {
          setToken(null);
          setAuthed(false);
        } else setTick((t) => t + 1);
      },
      setLive,
      abort.signal,
    );
    return () => abort.abort();
  }, [authed]);
  if (!authed) return <LoginPage onLogin={() => setAuthed(true)} />;
  const nav = (href: string, label: string) => {
    const active = href === "#/" ? hash === "" || hash === "#/" : hash.startsWith(href);
    return (
      <a href={href} aria-current={active ? "page" : undefined}>
        {label}
      </a>
    );
  };
  return (
    <LiveContext.Provider value={{ tick, unauthorized: () => (setToken(null), setAuthed(false)) }}>
      <header>
        <span class="brand">gitmesh</span>
        <nav>
          {nav("#/", "Fleet")}
          {nav("#/commits", "Commits")}
          {nav("#/diff", "Diff")}
          {nav("#/diagnostics", "Diagnostics")}
          {nav("#/insights", "Insights")}
          {nav("#/provenance", "Provenance")}
          {nav("#/traffic", "Traffic")}
        </nav>
        <label class="zone">
          <span class="sr">Time zone</span>
          <select aria-label="Time zone" value={zone} onChange={(e) => (setTimeZone(e.currentTarget.value), setZone(timeZone()))}>
            <option value="UTC">UTC</option>
            {localZone && localZone !== "UTC" && <option value={localZone}>{localZone}</option>}
          </select>
        </label>
        <span class={live ? "live on" : "live"} title={live ? "updates arrive as they happen" : "reconnecting to the server's event stream"} data-testid="live">
          {live ? "live" : "offline"}
        </span>
        <button type="button" class="link" onClick={() => (setToken(null), setAuthed(false))}>
          Sign out
        </button>
      </header>
      <main>{route(hash)}</main>
    </LiveContext.Provider>
  );
}

render(<App />, document.getElementById("app")!);
