/**
 * The audit writer serialises only what changed: outputs read back from the store are new objects with
 * mostly the same content on every write, and a fleet-wide commit touches one object per cluster.
 * canonicalYaml is counted (the dominant cost of a write); the branch content is checked with git.
 */
import { execFileSync } from "node:child_process";
import { beforeEach, describe, expect, it, vi } from "vitest";
import * as core from "../../src/core/index.js";
import { createAuditWriter, type AuditInput, type RenderedResource } from "../../src/git-sync/index.js";
import { useTempDirs } from "../helpers/tmp.js";

const yamlCalls = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../src/core/index.js", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../src/core/index.js")>();
  return {
    ...actual,
    canonicalYaml: (value: unknown) => {
      yamlCalls.count++;
      return actual.canonicalYaml(value);
    },
  };
});

const BRANCH = "gitmesh/rendered";
const vs = (cluster: string, name: string, host: string): RenderedResource => ({
  apiVersion: "networking.istio.io/v1",
  kind: "VirtualService",
  metadata: { name, namespace: "web", labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
  spec: { hosts: [host], http: [{ route: [{ destination: { host } }], timeout: "5s" }] },
});
/** A fleet as the store gives it: fresh objects on every read (deep copies), 3 clusters × 4 objects + discovery. */
const fleet = (timeouts: Readonly<Record<string, string>> = {}): AuditInput => {
  const clusters = new Map<string, RenderedResource[]>();
  for (const c of ["c1", "c2", "c3"]) {
    clusters.set(
      c,
      ["a", "b", "c", "d"].map((n) => {
        const r = structuredClone(vs(c, n, `${n}.example.com`)) as { spec: { http: { timeout: string }[] } } & RenderedResource;
        r.spec.http[0]!.timeout = timeouts[`${c}/${n}`] ?? "5s";
        return r;
      }),
    );
  }
  return {
    clusters,
    discovery: new Map<string, unknown>(["c1", "c2", "c3"].map((c) => [c, structuredClone({ cluster: c, namespaces: [{ name: "web" }] })])),
    sourceCommit: "2222222222222222222222222222222222222222",
    sourceRef: "refs/heads/main",
    timestamp: 1_700_000_000,
  };
};

describe("audit writer serialisation cache", () => {
  const tmp = useTempDirs("gitsync-audit-cache-");
  let repo: string;
  const git = (...args: string[]) => execFileSync("git", ["-C", repo, ...args], { encoding: "utf8" });
  beforeEach(() => {
    repo = tmp();
    execFileSync("git", ["init", "--bare", "-q", repo]);
    yamlCalls.count = 0;
  });

  it("serialises a changed object again and an unchanged one (a new object, same content) not", async () => {
    const { logger } = core.createMemoryLogger("git-sync.audit");
    const writer = createAuditWriter({ target: { kind: "local", path: repo }, logger });
    await writer.write(fleet());
    expect(yamlCalls.count).toBe(12 + 3);

    yamlCalls.count = 0;
    const same = await writer.write(fleet());
    expect(same.commit).toBeUndefined();
    expect(yamlCalls.count).toBe(0);

    // One object of every cluster changes: exactly those three are serialised, and the branch holds their new YAML.
    yamlCalls.count = 0;
    const changed = fleet({ "c1/b": "7s", "c2/b": "7s", "c3/d": "9s" });
    const result = await writer.write(changed);
    expect(yamlCalls.count).toBe(3);
    expect(result.changes.map((c) => [c.cluster, c.changed])).toEqual([["c1", 1], ["c2", 1], ["c3", 1]]);
    expect(git("show", `${BRANCH}:clusters/c1/web/virtualservice/b.yaml`)).toBe(core.canonicalYaml(changed.clusters.get("c1")![1]));
    expect(git("show", `${BRANCH}:clusters/c3/web/virtualservice/d.yaml`)).toContain("timeout: 9s");

    // Back to the first content: the cache holds the newest YAML per path, so the reverted ones are serialised again.
    yamlCalls.count = 0;
    await writer.write(fleet());
    expect(yamlCalls.count).toBe(3);
    expect(git("show", `${BRANCH}:clusters/c3/web/virtualservice/d.yaml`)).toContain("timeout: 5s");
  });

  it("writes the same tree as a writer without a cache (a fresh writer on another repository)", async () => {
    const { logger } = core.createMemoryLogger("git-sync.audit");
    const warm = createAuditWriter({ target: { kind: "local", path: repo }, logger });
    await warm.write(fleet());
    const warmTree = (await warm.write(fleet({ "c2/a": "1s" }))).tree;
    const other = tmp();
    execFileSync("git", ["init", "--bare", "-q", other]);
    const cold = createAuditWriter({ target: { kind: "local", path: other }, logger });
    expect((await cold.write(fleet({ "c2/a": "1s" }))).tree).toBe(warmTree);
  });
});
