import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compareRenders, renderJson, renderJsonChunks, renderMarkdown, reportFails, unifiedDiff, type RenderedResource, type RenderSide } from "../../src/git-sync/index.js";
import type { Diagnostic } from "../../src/core/index.js";

const UPDATE = process.env.UPDATE_GOLDEN === "1";
const DIR = join(import.meta.dirname, "..", "fixtures", "git-sync", "diff");

function golden(name: string, actual: string): void {
  const file = join(DIR, name);
  if (UPDATE) writeFileSync(file, actual);
  expect(existsSync(file), `golden ${name} is missing: run UPDATE_GOLDEN=1 vitest run test/git-sync and review it`).toBe(true);
  expect(actual).toBe(readFileSync(file, "utf8"));
}

const vs = (cluster: string, name: string, hosts: string[], timeout = "5s"): RenderedResource => ({
  apiVersion: "networking.istio.io/v1",
  kind: "VirtualService",
  metadata: { name, namespace: "web", labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
  spec: { hosts, http: [{ timeout, route: [{ destination: { host: `${name}.web.svc.cluster.local`, port: { number: 8080 } } }] }] },
});
const dr = (cluster: string, name: string): RenderedResource => ({
  apiVersion: "networking.istio.io/v1",
  kind: "DestinationRule",
  metadata: { name, namespace: "web", labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
  spec: { host: `${name}.web.svc.cluster.local`, trafficPolicy: { tls: { mode: "ISTIO_MUTUAL" } } },
});
const diag = (code: string, severity: Diagnostic["severity"], file: string, line: number, message: string): Diagnostic => ({ code, severity, file, line, column: 3, path: "/spec/http/0", message });

const base: RenderSide = {
  ref: "main",
  commit: "a".repeat(40),
  clusters: new Map([
    ["cluster1", [vs("cluster1", "reviews", ["reviews.example.com"]), dr("cluster1", "reviews"), vs("cluster1", "old", ["old.example.com"])]],
    ["cluster2", [vs("cluster2", "reviews", ["reviews.example.com"])]],
    ["cluster3", [dr("cluster3", "ratings")]],
  ]),
  diagnostics: [diag("UNRESOLVED_REF", "warning", "workspaces/web/routes.yaml", 12, "destination ratings not found; check the name"), diag("OLD_ONE", "error", "a.yaml", 3, "fixed later")],
};
const head: RenderSide = {
  ref: "feature/timeouts",
  commit: "b".repeat(40),
  clusters: new Map([
    ["cluster1", [vs("cluster1", "reviews", ["reviews.example.com"], "10s"), dr("cluster1", "reviews"), vs("cluster1", "new", ["new.example.com"])]],
    ["cluster2", [vs("cluster2", "reviews", ["reviews.example.com"], "10s")]],
    ["cluster3", [dr("cluster3", "ratings")]],
  ]),
  diagnostics: [diag("UNRESOLVED_REF", "warning", "workspaces/web/routes.yaml", 14, "destination ratings not found; check the name"), diag("BAD_TIMEOUT", "error", "workspaces/web/routes.yaml", 20, "timeout must be a duration such as 10s")],
};

describe("rendered diff report", () => {
  const report = compareRenders(base, head);

  it("classifies changes per cluster and diagnostics as introduced or fixed (line moves do not count)", () => {
    expect(report.clusters.map((c) => [c.cluster, c.added.length, c.changed.length, c.removed.length])).toEqual([
      ["cluster1", 1, 1, 1],
      ["cluster2", 0, 1, 0],
    ]);
    expect(report.introduced.map((d) => d.code)).toEqual(["BAD_TIMEOUT"]);
    expect(report.fixed.map((d) => d.code)).toEqual(["OLD_ONE"]);
    expect(report.headErrors).toBe(1);
  });

  it("matches the Markdown and JSON goldens", () => {
    const bodies = renderMarkdown(report);
    expect(bodies).toHaveLength(1);
    golden("report.md", bodies[0]!);
    golden("report.json", renderJson(report));
  });

  it("says so clearly when nothing renders differently", () => {
    const same = compareRenders(base, { ...base, ref: "other", commit: "c".repeat(40) });
    const bodies = renderMarkdown(same);
    expect(bodies).toHaveLength(1);
    golden("no-change.md", bodies[0]!);
  });

  it("splits into bodies under the limit without cutting a resource's diff", () => {
    const many: RenderSide = {
      ...head,
      clusters: new Map([...head.clusters].map(([c, rs]) => [c, [...rs, ...Array.from({ length: 6 }, (_, i) => vs(c, `extra-${i}`, [`extra-${i}.example.com`]))]])),
    };
    const big = compareRenders(base, many);
    const limit = 2500;
    const bodies = renderMarkdown(big, { maxChars: limit });
    expect(bodies.length).toBeGreaterThan(2);
    for (const b of bodies) {
      expect(b.length).toBeLessThanOrEqual(limit);
      expect(b.startsWith("<!-- gitmesh-diff -->\n")).toBe(true);
      expect(b.split("<details>").length).toBe(b.split("</details>").length);
      expect(b.split("```").length % 2).toBe(1);
    }
    // every resource section appears whole, exactly once
    const all = bodies.join("\n");
    const changes = big.clusters.flatMap((c) => [...c.added, ...c.changed, ...c.removed]);
    for (const r of changes) {
      const same = changes.filter((x) => x.text === r.text).length;
      expect(all.split("\n" + r.text).length - 1, `${r.kind} ${r.name}`).toBe(same);
    }
    golden("split.md", bodies.join("\n<!-- ===== next comment ===== -->\n"));
  });

  it("replaces a single diff larger than the limit by a pointer to the JSON report", () => {
    const huge: RenderSide = { ...head, clusters: new Map([["cluster1", [vs("cluster1", "huge", Array.from({ length: 400 }, (_, i) => `host-${i}.example.com`))]]]) };
    const bodies = renderMarkdown(compareRenders({ ...base, clusters: new Map() }, huge), { maxChars: 3000 });
    for (const b of bodies) expect(b.length).toBeLessThanOrEqual(3000);
    expect(bodies.join("")).toContain("more than fits in one comment");
  });

  it("stops at maxBodies even inside the diagnostics, counting what it leaves out", () => {
    const many: RenderSide = { ...head, diagnostics: Array.from({ length: 300 }, (_, i) => diag(`CODE_${i}`, "warning", `workspaces/web/f${i}.yaml`, i + 1, `problem number ${i} of a long list`)) };
    const capped = compareRenders(base, many);
    const bodies = renderMarkdown(capped, { maxChars: 1500, maxBodies: 2 });
    expect(renderMarkdown(capped, { maxChars: 1500, maxBodies: 1000 }).length).toBeGreaterThan(2);
    expect(bodies).toHaveLength(2);
    for (const b of bodies) expect(b.length).toBeLessThanOrEqual(1500);
    const shown = bodies.join("").split("\n- `").length - 1;
    const note = /_Not shown: 4 resource changes in 2 clusters and (\d+) diagnostics;/.exec(bodies[1]!);
    expect(note, bodies[1]).not.toBeNull();
    expect(shown + Number(note![1])).toBe(capped.introduced.length + capped.fixed.length);
    expect(bodies.join("")).not.toContain("#### "); // no resource section after diagnostics that were cut
    // one body: everything in it, cut where it is full
    const one = renderMarkdown(capped, { maxChars: 1500, maxBodies: 1 });
    expect(one).toHaveLength(1);
    expect(one[0]).toContain("_Not shown: 4 resource changes in 2 clusters and ");
  });

  it("writes the JSON report one changed cluster at a time, the pieces joined exactly JSON.stringify's text", () => {
    const odd: RenderSide = {
      ...head,
      clusters: new Map([...head.clusters, ["cluster4", [vs("cluster4", "odd", ["line\nbreak.example.com", "ünïcödé.example.com", 'quote".example.com'])]]]),
      diagnostics: [...head.diagnostics, diag("MULTI", "warning", "x.yaml", 1, "two\nlines\tand a tab")],
    };
    const reports = [report, compareRenders(base, odd), compareRenders(base, { ...base, ref: "same", commit: "c".repeat(40) }), compareRenders({ ...base, clusters: new Map() }, odd)];
    for (const r of reports) {
      const chunks = [...renderJsonChunks(r)];
      expect(chunks.join("")).toBe(JSON.stringify(r, null, 2) + "\n");
      expect(renderJson(r)).toBe(JSON.stringify(r, null, 2) + "\n");
      // one piece per changed cluster, plus one per other member (8), the list's start and end, and the closing brace
      if (r.clusters.length > 0) expect(chunks.length).toBe(r.clusters.length + 11);
    }
    expect(reports.map((r) => r.clusters.length)).toEqual([2, 3, 0, 4]);
  });

  it("produces unified diffs with context and hunk headers", () => {
    const a = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n";
    const b = "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\nl\nm\nn\n";
    expect(unifiedDiff(a, b)).toBe("@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n@@ -11,3 +11,4 @@\n k\n l\n m\n+n\n");
    // changes 2·context lines apart share one hunk
    expect(unifiedDiff("1\n2\n3\n4\n5\n6\n7\n8\n", "x\n2\n3\n4\n5\n6\n7\ny\n")).toBe("@@ -1,8 +1,8 @@\n-1\n+x\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+y\n");
    expect(unifiedDiff(a, a)).toBe("");
  });
});

// What the issue asks of a PR diff that tells what will happen (#38 item 3), from the server's rules: a
// commit whose configuration does not load is rejected and the last good one stays in force; agents refuse
// to delete more than max(2, 50 % of what they own) at once unless the commit consents.
describe("a PR diff that tells what will happen", () => {
  const yamlError = diag("YAML_SYNTAX", "error", "workspaces/web/broken.yaml", 4, "bad indentation of a mapping entry");
  const schemaError = diag("SCHEMA", "error", "workspaces/web/rt.yaml", 9, "/spec/http/0/matchers must be array");
  const authz = (cluster: string): RenderedResource => ({ apiVersion: "security.istio.io/v1", kind: "AuthorizationPolicy", metadata: { name: "reviews", namespace: "web", labels: { "gitmesh.io/cluster": cluster } }, spec: { action: "ALLOW" } });
  const gateway = (hosts: string[]): RenderedResource => ({ apiVersion: "networking.istio.io/v1", kind: "Gateway", metadata: { name: "ingress", namespace: "istio-gateways" }, spec: { servers: [{ hosts, port: { number: 8443, name: "https", protocol: "HTTPS" } }] } });
  const gwRoute = (routes: number): RenderedResource => ({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "productpage", namespace: "web" }, spec: { hosts: ["www.example.com"], gateways: ["istio-gateways/ingress"], http: Array.from({ length: routes }, (_, i) => ({ name: `r${String(i)}` })) } });

  it("a head the server would reject: says so, keeps base, lists every error, shows no change as real, fails", () => {
    const rejected = compareRenders(base, { ...head, clusters: new Map(), diagnostics: [yamlError, schemaError, ...head.diagnostics], rejection: [yamlError, schemaError] });
    expect(rejected.rejected).toEqual({ keeps: base.commit, errors: [schemaError, yamlError].sort((a, b) => (a.file! < b.file! ? -1 : 1)) });
    expect(rejected.clusters).toEqual([]); // base's objects are not "removed": nothing changes anywhere
    expect(rejected.risks).toEqual([]);
    const body = renderMarkdown(rejected).join("\n");
    expect(body).toContain("**This commit would be rejected**: its configuration has 2 errors, so the server keeps `aaaaaaaaaaaa` (main) in force on every cluster. Nothing would change");
    for (const d of [yamlError, schemaError, head.diagnostics[1]!]) expect(body).toContain(d.message);
    expect(body).not.toMatch(/removed\)|#### - /);
  });

  it("lists every error of head, the ones it keeps from base too", () => {
    const kept = compareRenders(base, { ...head, diagnostics: [...head.diagnostics, base.diagnostics[1]!] });
    const body = renderMarkdown(kept).join("\n");
    expect(kept.errors.map((d) => d.code)).toEqual(["OLD_ONE", "BAD_TIMEOUT"]);
    expect(body).toContain("**Errors head keeps from base** (1)");
    expect(body).toContain("fixed later");
    expect(body).toContain(":x: head has 2 errors.");
  });

  it("puts risks first: a removed AuthorizationPolicy, a gateway losing a host or routes", () => {
    const b: RenderSide = { ...base, clusters: new Map([["cluster1", [authz("cluster1"), gateway(["www.example.com", "api.example.com"]), gwRoute(3), dr("cluster1", "a"), dr("cluster1", "b"), dr("cluster1", "c")]]]), diagnostics: [] };
    const h: RenderSide = { ...head, clusters: new Map([["cluster1", [gateway(["www.example.com"]), gwRoute(2), dr("cluster1", "a"), dr("cluster1", "b"), dr("cluster1", "c")]]]), diagnostics: [] };
    const r = compareRenders(b, h);
    expect(r.risks.map((x) => [x.kind, x.blocking]).sort()).toEqual([
      ["gateway-host-lost", false],
      ["gateway-route-lost", false],
      ["security-policy-removed", false],
    ]);
    expect(r.risks.find((x) => x.kind === "gateway-host-lost")!.message).toContain("api.example.com");
    const body = renderMarkdown(r).join("\n");
    expect(body.indexOf("**Risks** (3)")).toBeGreaterThan(0);
    expect(body.indexOf("**Risks** (3)")).toBeLessThan(body.indexOf("**Clusters:**"));
  });

  it("a removal above the agents' mass-deletion limit needs consent; the trailer or gitmesh.yaml gives it", () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => dr("cluster1", `d${String(i)}`));
    const b: RenderSide = { ...base, clusters: new Map([["cluster1", many(10)]]), diagnostics: [] };
    // 10 owned: the limit is max(2, 5) = 5. Removing 5 passes; 6 needs consent.
    expect(compareRenders(b, { ...head, clusters: new Map([["cluster1", many(5)]]), diagnostics: [] }).risks).toEqual([]);
    const six = { ...head, clusters: new Map([["cluster1", many(4)]]), diagnostics: [] };
    const refused = compareRenders(b, six);
    expect(refused.risks).toEqual([expect.objectContaining({ kind: "mass-deletion", cluster: "cluster1", blocking: true })]);
    expect(refused.risks[0]!.message).toContain('Gitmesh-Allow-Deletion: cluster1');
    expect(renderMarkdown(refused)[0]).toContain(":no_entry: **needs consent** cluster1: removes 6 of 10 objects");
    expect(reportFails(refused)).toBe(true); // CI's exit code and the commit status read this verdict
    expect(compareRenders(b, { ...six, allowMassDeletion: ["cluster1"] }).risks).toEqual([]);
    expect(reportFails(compareRenders(b, { ...six, allowMassDeletion: ["cluster1"] }))).toBe(false);
    expect(compareRenders(b, { ...six, allowMassDeletion: ["*"] }).risks).toEqual([]);
    expect(compareRenders(b, { ...six, allowMassDeletion: ["cluster2"] }).risks).toHaveLength(1);
    // A small cluster: two removals are always allowed.
    const small: RenderSide = { ...base, clusters: new Map([["cluster1", many(2)]]), diagnostics: [] };
    expect(compareRenders(small, { ...head, clusters: new Map([["cluster1", []]]), diagnostics: [] }).risks).toEqual([]);
  });

  it("says which Gloo file causes which Istio changes, over every cluster", () => {
    const from = (r: RenderedResource, file: string): RenderedResource => ({ ...r, metadata: { ...r.metadata, annotations: { "gitmesh.io/source-file": file } } });
    const b: RenderSide = { ...base, clusters: new Map([["c1", [from(vs("c1", "a", ["a"]), "ws/routes.yaml"), from(dr("c1", "a"), "ws/dest.yaml")]], ["c2", [from(vs("c2", "a", ["a"]), "ws/routes.yaml")]]]), diagnostics: [] };
    const h: RenderSide = { ...head, clusters: new Map([["c1", [from(vs("c1", "a", ["a"], "9s"), "ws/routes.yaml")]], ["c2", [from(vs("c2", "a", ["a"], "9s"), "ws/routes.yaml"), dr("c2", "x")]]]), diagnostics: [] };
    const r = compareRenders(b, h);
    expect(r.bySource).toEqual([
      { file: "", clusters: 1, added: 1, changed: 0, removed: 0 },
      { file: "ws/dest.yaml", clusters: 1, added: 0, changed: 0, removed: 1 },
      { file: "ws/routes.yaml", clusters: 2, added: 0, changed: 2, removed: 0 },
    ]);
    expect(renderMarkdown(r).join("\n")).toContain("| `ws/routes.yaml` | 2 | 0 | 2 | 0 |");
  });
});
