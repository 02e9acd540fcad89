// `gitmesh insights` as a process (bin/gitmesh.js), offline from a repository and a discovery directory:
// the table, --json, the filters, and the exit codes (1 on an error insight, 0 otherwise, 2 on usage).
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Insight } from "../../src/insights/index.js";
import { CLUSTERS, lineOf, snapshot, workspace } from "./fleet.js";

const ROOT = new URL("../../", import.meta.url).pathname;

const VD = `apiVersion: networking.gloo.solo.io/v2
kind: VirtualDestination
metadata:
  name: cart
  namespace: shop
spec:
  hosts:
  - cart.shop.global
  services:
  - labels:
      app: cart
  ports:
  - number: 8080
    protocol: HTTP
`;

async function gitmesh(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(ROOT, "bin/gitmesh.js"), "insights", ...args], { cwd: ROOT });
    return { code: 0, out: stdout, err: stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: err.code ?? -1, out: err.stdout ?? "", err: err.stderr ?? "" };
  }
}

describe("gitmesh insights (process)", () => {
  let dir: string;
  const repo = () => join(dir, "repo");
  const discovery = () => join(dir, "discovery");

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "gitmesh-insights-"));
    const files: Record<string, string> = { "clusters.yaml": CLUSTERS, "workspaces/shop/workspace.yaml": workspace("shop", "shop"), "workspaces/shop/vd.yaml": VD };
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(repo(), path)), { recursive: true });
      await writeFile(join(repo(), path), text);
    }
    // cluster1 runs Istio 1.24 (end of life 2025-06-24), cluster2 1.29: an error and a skew warning.
    for (const [name, version] of [
      ["cluster1", "1.24.3"],
      ["cluster2", "1.29.0"],
    ] as const) {
      await mkdir(join(discovery(), name), { recursive: true });
      await writeFile(join(discovery(), name, "snapshot.yaml"), stringify(snapshot({ name, services: ["shop/cart"], istio: [version] })));
    }
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("prints a table with file:line, message and fix for each insight, and exits 1 when one is an error", async () => {
    const r = await gitmesh(repo(), "--discovery", discovery(), "--today", "2026-11-29");
    expect(r.code, r.err).toBe(1);
    const lines = r.out.split("\n");
    expect(lines[0]).toMatch(/^SEVERITY +CODE +CLUSTER +WORKSPACE +WHERE$/);
    expect(r.out).toMatch(/^error +ISTIO_END_OF_LIFE +cluster1 +- +Deployment istio-system\/istiod$/m);
    expect(r.out).toMatch(/^warning +ISTIO_VERSION_SKEW +cluster1 /m);
    expect(r.out).toContain(`${join(repo(), "workspaces/shop/vd.yaml")}:1`);
    expect(r.out).toMatch(/^ {4}fix: Upgrade the control plane of "cluster1"/m);
    expect(lines.at(-2)).toBe("failed: 1 error, 2 warnings, 0 info");
  });

  it("--json prints the insights as data; filters narrow what is shown and what decides the exit code", async () => {
    const all = await gitmesh(repo(), "--discovery", discovery(), "--today", "2026-11-29", "--json");
    expect(all.code).toBe(1);
    const body = JSON.parse(all.out) as { today: string; counts: Record<string, number>; insights: Insight[] };
    expect(body.today).toBe("2026-11-29");
    expect(body.counts).toEqual({ error: 1, warning: 2, info: 0 });
    const vd = body.insights.find((i) => i.code === "MULTICLUSTER_NO_OUTLIER_DETECTION");
    expect(vd).toMatchObject({ severity: "warning", workspace: "shop", file: join(repo(), "workspaces/shop/vd.yaml"), line: lineOf(VD, "apiVersion") });

    const warnings = await gitmesh(repo(), "--discovery", discovery(), "--today", "2026-11-29", "--severity", "warning", "--json");
    expect(warnings.code).toBe(0);
    expect((JSON.parse(warnings.out) as { insights: Insight[] }).insights.map((i) => i.code).sort()).toEqual(["ISTIO_VERSION_SKEW", "MULTICLUSTER_NO_OUTLIER_DETECTION"]);

    const before = await gitmesh(repo(), "--discovery", discovery(), "--today", "2025-06-01", "--cluster", "cluster1");
    // Before 1.24's end of life, cluster1 has only the skew warning: exit 0.
    expect(before.code).toBe(0);
    expect(before.out).toMatch(/^warning +ISTIO_VERSION_SKEW +cluster1 /m);
    expect(before.out).not.toContain("MULTICLUSTER_NO_OUTLIER_DETECTION");
    expect(before.out).toMatch(/ok: 0 errors, 1 warning, 0 info\n$/);
  });

  it("exits 2 on usage errors, saying what is wrong", async () => {
    const cases: [string[], RegExp][] = [
      [[repo()], /--discovery <dir> is required/],
      [[repo(), "--discovery", join(dir, "nope")], /--discovery .*nope does not exist/],
      [[repo(), "--discovery", discovery(), "--today", "29/11/2026"], /--today must be a date YYYY-MM-DD/],
      [[repo(), "--discovery", discovery(), "--code", "NO_SUCH_CODE"], /unknown code "NO_SUCH_CODE"/],
      [[repo(), "--discovery", discovery(), "--severity", "fatal"], /unknown severity "fatal"/],
      [[repo(), "--server", "http://127.0.0.1:1"], /either <repo-dir> --discovery <dir> \(offline\) or --server/],
    ];
    for (const [args, message] of cases) {
      const r = await gitmesh(...args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err).toMatch(message);
    }
  });
});
