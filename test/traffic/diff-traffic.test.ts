// Traffic-aware pull-request review end to end: `gitmesh diff --prometheus <url> --post github` through
// the real CLI entry, a real Git repository (examples/repo-layout), Debian's Prometheus holding an hour
// of bookinfo's Istio metrics in two clusters (istio-exporter.ts), and the fake GitHub that checks every
// request against GitHub's OpenAPI description. Expected figures are those the exporter declares.
import { cpSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startFakeGitHub, type FakeGitHub } from "../git-host/fake-github.js";
import { DISCOVERY, EXAMPLE, git, gitmesh } from "../git-host/fixture.js";
import { freePort } from "../helpers/ports.js";
import { useTempDirs } from "../helpers/tmp.js";
import { startTrafficPrometheus, untilReady, type TrafficPrometheus } from "./fixture.js";

const TOKEN = "ghs_trafficreview0123456789abcdefAB";
const PROM_TOKEN = "prometheus-bearer-0123456789";
const PR = 12;
const tmp = useTempDirs("gitmesh-diff-traffic-");

let running: TrafficPrometheus;
let repo: string;
let base: string;
let live: string;
let quiet: string;

beforeAll(async () => {
  running = await startTrafficPrometheus(tmp());
  repo = tmp();
  git(repo, "init", "-q");
  cpSync(EXAMPLE, repo, { recursive: true });
  git(repo, "add", "-A");
  git(repo, "commit", "-qm", "bookinfo");
  base = git(repo, "rev-parse", "HEAD");
  // A change that meets live traffic: the reviews route and the backends' access policies go, the gateway's host is renamed.
  rmSync(join(repo, "workspaces/bookinfo-backends/route-table-reviews.yaml"));
  rmSync(join(repo, "workspaces/bookinfo-backends/access-policies.yaml"));
  const main = join(repo, "workspaces/gateways/route-table-main.yaml");
  writeFileSync(main, readFileSync(main, "utf8").replace("    - bookinfo.example.com", "    - shop.example.com"));
  git(repo, "add", "-A");
  git(repo, "commit", "-qm", "drop reviews routing and backend policies; rename the shop");
  live = git(repo, "rev-parse", "HEAD");
  // A change that meets none: httpbin's timeout (its route keeps its hosts and destinations).
  git(repo, "checkout", "-q", "-b", "quiet", base);
  const timeout = join(repo, "workspaces/gateways/retry-timeout-httpbin.yaml");
  writeFileSync(timeout, readFileSync(timeout, "utf8").replace("requestTimeout: 5s", "requestTimeout: 7s"));
  git(repo, "commit", "-qam", "slower httpbin");
  quiet = git(repo, "rev-parse", "HEAD");
  await untilReady(running.prometheus.url);
});
afterAll(async () => {
  await running.stop();
});

describe("gitmesh diff --prometheus", () => {
  let gh: FakeGitHub;
  let eventPath: string;
  beforeEach(async () => {
    gh = await startFakeGitHub({ token: TOKEN, owner: "acme", repo: "mesh", pulls: { [PR]: live }, commits: [base, live, quiet] });
    eventPath = join(tmp(), "event.json");
  });
  afterEach(async () => {
    expect(gh.violations).toEqual([]);
    await gh.close();
  });
  const env = (head: string) => {
    writeFileSync(eventPath, JSON.stringify({ action: "synchronize", number: PR, pull_request: { number: PR, head: { sha: head, ref: "feature" }, base: { sha: base, ref: "main" } } }));
    return { GITHUB_ACTIONS: "true", GITHUB_TOKEN: TOKEN, GITHUB_REPOSITORY: "acme/mesh", GITHUB_API_URL: gh.url, GITHUB_EVENT_PATH: eventPath };
  };
  const diff = (head: string, ...more: string[]) => gitmesh(env(head), ["diff", "--repo", repo, "--base", base, "--head", head, "--discovery", DISCOVERY, "--post", "github", ...more]);
  const comment = () => gh.comments.get(PR)?.[0]?.body ?? "";

  it("opens the pull-request comment with the changes that touch live traffic, busiest first, and annotates each changed object", async () => {
    const r = await diff(live, "--prometheus", running.prometheus.url);
    expect(r.err).toContain(`posted to acme/mesh#${String(PR)}: 1 comment(s) created`);
    expect(r.code).toBe(0); // traffic informs the review; it does not fail it
    const body = comment();
    const touches = body.indexOf("**Touches live traffic** (");
    expect(touches).toBeGreaterThan(0);
    expect(touches).toBeLessThan(body.indexOf("**Risks**"));
    expect(touches).toBeLessThan(body.indexOf("**Clusters:**"));
    const section = body.slice(touches, body.indexOf("**Risks**"));
    expect(section).toContain(`traffic over the last 1h from ${running.prometheus.url}`);
    const lines = section.split("\n").filter((l) => l.startsWith("- "));
    // cluster1: the gateway's bookinfo.example.com carries 10 req/s to productpage; the reviews route 4 + 3 + 2.5
    // (east-west to cluster2) req/s, 0.5 of them 5xx; details (AuthorizationPolicy and PeerAuthentication) 10 req/s, 10% 5xx.
    expect(section).toMatch(/cluster1: VirtualService `istio-gateways\/routetable-main-bookinfo[^`]*` no longer serves bookinfo\.example\.com at the gateway — \*\*(9\.[5-9]|10\.[0-4]) req\/s, 0\.0% 5xx\*\*/);
    expect(section).toMatch(/cluster1: VirtualService `bookinfo-backends\/routetable-reviews[^`]*` is removed: requests to reviews\.bookinfo-backends\.svc\.cluster\.local lose its routing — \*\*9\.\d req\/s, 5\.\d% 5xx\*\*/);
    expect(section).toMatch(/cluster2: VirtualService `bookinfo-backends\/routetable-reviews[^`]*` is removed[^\n]*\*\*(1\.9|2\.0|2\.1) req\/s, 0\.0% 5xx\*\*/);
    expect(section).toMatch(/cluster1: AuthorizationPolicy `bookinfo-backends\/[^`]*` is removed[^\n]*\*\*(9\.[5-9]|10\.[0-4]) req\/s, (9\.\d|10\.\d)% 5xx\*\*/);
    expect(section).toMatch(/cluster1: PeerAuthentication `bookinfo-backends\/[^`]*` is removed/);
    // busiest first
    const rates = lines.map((l) => Number(/\*\*([\d.]+) req\/s/.exec(l)?.[1]));
    expect(rates).toEqual([...rates].sort((a, b) => b - a));
    expect(lines.length).toBeGreaterThanOrEqual(10);
    // every changed route and security policy says its traffic in its heading
    expect(body).toMatch(/#### - VirtualService `bookinfo-backends\/routetable-reviews[^`]*cluster1[^`]*` removed \(networking\.istio\.io\/v1\) — 9\.\d req\/s, 5\.\d% 5xx \(last 1h\)/);
    expect(body).toMatch(/#### \+ AuthorizationPolicy `bookinfo-backends\/settings-ratings[^`]*cluster1[^`]*` added \(security\.istio\.io\/v1\) — [23]\.\d req\/s, 0\.0% 5xx \(last 1h\)/);
    // the JSON report holds the same figures
    const json = await gitmesh({}, ["diff", "--repo", repo, "--base", base, "--head", live, "--discovery", DISCOVERY, "--format", "json", "--prometheus", running.prometheus.url]);
    const report = JSON.parse(json.out) as { traffic: { touches: { kind: string; cluster: string; requestsPerSecond: number }[]; objects: unknown[] } };
    expect(new Set(report.traffic.touches.map((t) => t.kind))).toEqual(new Set(["gateway-host-lost", "route-removed", "security-policy-removed"]));
    expect(report.traffic.touches.filter((t) => t.cluster === "cluster2").length).toBeGreaterThan(0);
  });

  it("a change that carries no live traffic says so, and still annotates the route it changes", async () => {
    const r = await diff(quiet, "--prometheus", running.prometheus.url);
    expect(r.code).toBe(0);
    const body = comment();
    expect(body).toContain("**Touches live traffic** (0;");
    expect(body).toContain("None: no route, destination or security policy that carries traffic now is removed or re-pointed.");
    // The gateway route (productpage and httpbin) carries the gateway's 10 req/s in cluster1, 2 in cluster2.
    expect(body).toMatch(/#### ~ VirtualService `istio-gateways\/[^`]*cluster1[^`]*` changed \(networking\.istio\.io\/v1\) — (9\.[5-9]|10\.[0-4]) req\/s, 0\.0% 5xx \(last 1h\)/);
  });

  it("a Prometheus that cannot be read leaves the review whole and says why, in the comment and on stderr", async () => {
    const r = await diff(live, "--prometheus", `http://127.0.0.1:${String(await freePort())}`);
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/warning: no live traffic in the report: Prometheus at http:\/\/127\.0\.0\.1:\d+ cannot be reached/);
    const body = comment();
    expect(body).toMatch(/\*\*Touches live traffic\*\*: unknown — the traffic of the last 1h could not be read from http:\/\/127\.0\.0\.1:\d+/);
    expect(body).toContain("**Risks**");
    expect(body).toContain("#### - VirtualService `bookinfo-backends/routetable-reviews");
  });

  it("refuses unusable flags before reading anything (exit 2), and never shows the token", async () => {
    const tokenFile = join(tmp(), "prom-token");
    writeFileSync(tokenFile, `${PROM_TOKEN}\n`);
    const creds = await gitmesh({}, ["diff", "--repo", repo, "--base", base, "--head", live, "--discovery", DISCOVERY, "--prometheus", "http://user:pw@prom:9090"]);
    expect(creds.code).toBe(2);
    expect(creds.err).toContain("must not carry credentials");
    const window = await gitmesh({}, ["diff", "--repo", repo, "--base", base, "--head", live, "--discovery", DISCOVERY, "--prometheus", running.prometheus.url, "--traffic-window", "an hour"]);
    expect(window.code).toBe(2);
    const lonely = await gitmesh({}, ["diff", "--repo", repo, "--base", base, "--head", live, "--discovery", DISCOVERY, "--prometheus-token-file", tokenFile]);
    expect(lonely.code).toBe(2);
    expect(lonely.err).toContain("go with --prometheus");
    const missing = await gitmesh({}, ["diff", "--repo", repo, "--base", base, "--head", live, "--discovery", DISCOVERY, "--prometheus", running.prometheus.url, "--prometheus-token-file", join(tmp(), "nope")]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/cannot read --prometheus-token-file \S+\/nope: ENOENT/);
    const twoWords = join(tmp(), "two-words");
    writeFileSync(twoWords, "Bearer abc\n");
    const split = await gitmesh({}, ["diff", "--repo", repo, "--base", base, "--head", live, "--discovery", DISCOVERY, "--prometheus", running.prometheus.url, "--prometheus-token-file", twoWords]);
    expect(split.code).toBe(2);
    expect(split.err).toContain("must hold one token (one word)");
    // Prometheus itself ignores the bearer token: the report has the figures, and the token is nowhere in the output.
    const withToken = await gitmesh({}, ["diff", "--repo", repo, "--base", base, "--head", live, "--discovery", DISCOVERY, "--prometheus", running.prometheus.url, "--prometheus-token-file", tokenFile]);
    expect(withToken.code).toBe(0);
    expect(withToken.out).toContain("**Touches live traffic** (");
    expect(withToken.out + withToken.err).not.toContain(PROM_TOKEN);
  });
});
