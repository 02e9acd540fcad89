// GET /api/diff over the real HTTP edge, on a real Git repository: the server renders base in full and
// head incrementally from it (src/translate's renderRevisions) in a worker thread; its answer must be
// exactly what full translations of both revisions, compared object by object, report — for a
// one-policy change with a removed file, for a head that introduces errors, and after the discovery
// changed under the worker. The server's own thread keeps answering while a diff renders, a diff
// that outgrows the worker's memory cap or its time limit is refused alone, and the diffs waiting are bounded.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { loadDesiredState } from "../../src/config/index.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { generateFleet, type FleetOptions } from "../../src/devtools/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { compareRenders, createAuditWriter, createWebhookHandlers, renderJson, type RenderSide } from "../../src/git-sync/index.js";
import { createApiAuth, createDiffService, createServerHttp, generateApiToken, parseServerConfig, type DiffService, type ServerApi, type ServerHttp } from "../../src/server/index.js";
import { renderRecord, translateAll } from "../../src/translate/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../queue/fixture.js";

const OPTIONS: FleetOptions = {
  name: "diff-service",
  seed: 5,
  clusters: 4,
  servicesPerCluster: 16,
  servicesPerNamespace: 4,
  namespacesPerWorkspace: 2,
  clustersPerWorkspace: 2,
  routesPerTable: 3,
  virtualDestinationsPerWorkspace: 2,
  isolationEvery: 3,
  federationEvery: 2,
  externalServicesPerWorkspace: 1,
};
const fleet = generateFleet(OPTIONS);
const snapshots = fleet.discovery as unknown as ReadonlyMap<string, DiscoverySnapshot>;
const READ = generateApiToken();
const cacheDir = useTempDirs("gitmesh-diff-cache-");

type Discovery = readonly { cluster: string; checksum: string; snapshot: DiscoverySnapshot }[];

/** The reference: both revisions loaded and translated in full, compared object by object. */
function expectedReport(base: string, baseFiles: ReadonlyMap<string, string>, head: string, headFiles: ReadonlyMap<string, string>, discovery: ReadonlyMap<string, DiscoverySnapshot> = snapshots): unknown {
  const side = (sha: string, files: ReadonlyMap<string, string>): RenderSide => {
    const load = loadDesiredState([...files].map(([path, content]) => ({ path, content })));
    const result = translateAll(load.state, discovery);
    // The server's rule: a commit whose configuration has load errors is rejected (the last good one stays).
    return { ref: sha, commit: sha, clusters: new Map([...result.clusters].map(([c, o]) => [c, o.resources])), diagnostics: [...load.diagnostics, ...result.diagnostics], rejection: load.diagnostics.filter((d) => d.severity === "error") };
  };
  return JSON.parse(renderJson(compareRenders(side(base, baseFiles), side(head, headFiles))));
}

describe("GET /api/diff renders head incrementally and answers what full translations report", () => {
  let git: GitServer;
  const baseFiles = new Map(fleet.files.map((f) => [f.path, f.content]));
  const headFiles = new Map(baseFiles);
  const brokenFiles = new Map(baseFiles);
  let base: string;
  let head: string;
  let broken: string;
  beforeAll(async () => {
    git = await startGitServer();
    await git.createRepo("fleet");
    base = await git.commitFiles("fleet", Object.fromEntries(baseFiles), "base");
    const removed = fleet.files.find((f) => f.path.endsWith("ws-001/routes.yaml"))!.path;
    headFiles.set(fleet.onePolicyChange.after.path, fleet.onePolicyChange.after.content);
    headFiles.delete(removed);
    head = await git.commitFiles("fleet", { [fleet.onePolicyChange.after.path]: fleet.onePolicyChange.after.content, [removed]: null }, "one policy, one file removed");
    // From base again: a route table pointing at a destination that does not exist, and a file that is not YAML.
    const routes = fleet.files.find((f) => f.path.endsWith("ws-002/routes.yaml"))!;
    const brokenRoutes = routes.content.replace(/(\n\s+name: )(\S+)/g, (m, pre: string, name: string, offset: number) => (offset > routes.content.indexOf("forwardTo") && !name.includes("nowhere") ? `${pre}nowhere-${name}` : m));
    expect(brokenRoutes).not.toBe(routes.content);
    brokenFiles.set(routes.path, brokenRoutes);
    brokenFiles.set("workspaces/broken.yaml", "kind: [unclosed\n");
    // On top of head, head's changes undone: base plus the two broken files.
    const undo = { [fleet.onePolicyChange.after.path]: baseFiles.get(fleet.onePolicyChange.after.path)!, [removed]: baseFiles.get(removed)! };
    broken = await git.commitFiles("fleet", { ...undo, [routes.path]: brokenRoutes, "workspaces/broken.yaml": "kind: [unclosed\n" }, "broken");
    api = await startDiffApi(git.repoPath("fleet"), () => discovery);
  });
  afterAll(async () => {
    await api.stop();
    await git.stop();
  });

  let discovery: Discovery = [...snapshots].map(([cluster, snapshot]) => ({ cluster, checksum: cluster, snapshot }));
  let api: DiffApi;
  const get = (b: string, h: string) => api.get(b, h);

  it("a one-policy change with a removed file: the same clusters, objects and diagnostics as full translations", async () => {
    const { status, body } = await get(base, head);
    expect(status).toBe(200);
    expect(body.clusters.length).toBeGreaterThan(0);
    expect(body).toEqual(expectedReport(base, baseFiles, head, headFiles));
  });

  it("from the base's render record on the audit branch when the server's discovery is the one it was rendered with; translated otherwise; the same report (#39)", async () => {
    const result = translateAll(loadDesiredState(fleet.files).state, snapshots);
    const writer = createAuditWriter({ target: { kind: "local", path: git.repoPath("fleet") }, logger: createMemoryLogger().logger });
    await writer.write({ clusters: new Map([...result.clusters].map(([c, o]) => [c, o.resources])), discovery: snapshots, sourceCommit: base, sourceRef: "refs/heads/main", timestamp: 1_700_000_000, render: renderRecord(result) });
    const memory = createMemoryLogger("diff");
    let held: Discovery = discovery;
    const service = createDiffService({ location: { kind: "local", path: git.repoPath("fleet") }, storedRenders: { gitdir: git.repoPath("fleet"), branch: "gitmesh/rendered" }, discovery: () => Promise.resolve(held), logger: memory.logger });
    try {
      expect(await service.diff(base, head)).toEqual(expectedReport(base, baseFiles, head, headFiles));
      expect(memory.text()).toContain("render record");
      // The server's discovery moved on (a cluster lost a service): the record is not used, and the report follows the new discovery.
      const [first, ...rest] = [...snapshots];
      const moved = new Map([[first![0], { ...first![1], services: first![1].services.slice(1) }], ...rest]);
      held = [...moved].map(([cluster, snapshot]) => ({ cluster, checksum: `${cluster}-2`, snapshot }));
      expect(await service.diff(base, head)).toEqual(expectedReport(base, baseFiles, head, headFiles, moved));
      expect(memory.records.some((r) => r.msg === "diff: base translated")).toBe(true);
    } finally {
      await service.close();
    }
  });

  it("a head with errors: its introduced diagnostics and error count, as full translations report them", async () => {
    const { status, body } = await get(base, broken);
    expect(status).toBe(200);
    expect(body.headErrors).toBeGreaterThan(0);
    expect(new Set(body.introduced.map((d) => (d as { code: string }).code))).toEqual(new Set(["YAML_SYNTAX", "ROUTE_REPLACEMENT", "DESTINATION_NOT_FOUND"]));
    expect(body).toEqual(expectedReport(base, baseFiles, broken, brokenFiles));
    // A YAML error rejects the commit: the report says the clusters keep base and shows no change as real.
    expect(body.rejected).toMatchObject({ keeps: base });
    expect(body.clusters).toEqual([]);
  });

  it("a commit the repository does not have is a 404, read from disk or over HTTP", async () => {
    expect((await get(base, "f".repeat(40))).status).toBe(404);
    const remote = createDiffService({ location: { kind: "remote", url: git.url("fleet"), cacheDir: cacheDir(), depth: null }, discovery: () => Promise.resolve(discovery), logger: createMemoryLogger("diff").logger });
    try {
      await expect(remote.diff(base, "f".repeat(40))).rejects.toMatchObject({ status: 404, message: `commit ${"f".repeat(40)} is not in the configuration repository` });
    } finally {
      await remote.close();
    }
  });

  it("takes revisions as `gitmesh diff` does: abbreviated SHAs, branches, HEAD~N; a malformed one is a 400 and an unknown one a 404, each naming it", async () => {
    const full = (await get(base, head)).body;
    // main is `broken`; main~1 is head (from disk every spelling of gitrevisions the CLI takes).
    expect((await get(base.slice(0, 7), head.slice(0, 10))).body).toEqual(full);
    expect((await get(base, "main~1")).body).toEqual(full);
    expect((await get(base, "main")).body).toMatchObject({ head: { commit: broken } });
    const unknown = await get(base, "no-such-branch");
    expect(unknown.status).toBe(404);
    expect(unknown.body.error?.message).toMatch(/^head: unknown revision no-such-branch/);
    const malformed = await get("a..b", head);
    expect(malformed.status).toBe(400);
    expect(malformed.body.error?.message).toContain('base: "a..b" is not a revision');
    // A remote repository: abbreviations of the commits the server has read, branches and tags by name.
    const remote = createDiffService({ location: { kind: "remote", url: git.url("fleet"), cacheDir: cacheDir(), depth: null }, discovery: () => Promise.resolve(discovery), knownCommits: () => [broken, head, base], logger: createMemoryLogger("diff").logger });
    try {
      expect(await remote.diff(base.slice(0, 8), "main")).toMatchObject({ base: { commit: base }, head: { commit: broken } });
      await expect(remote.diff(base, "nope")).rejects.toMatchObject({ status: 404, message: "head: unknown revision nope: no such branch, tag or commit in the configuration repository" });
      await expect(remote.diff("main~1", head)).rejects.toMatchObject({ status: 400, message: expect.stringContaining("relative revisions need a local repository") });
    } finally {
      await remote.close();
    }
  });

  it("renders against the discovery the server holds now: a changed and a removed cluster reach the worker", async () => {
    const before = (await get(base, head)).body;
    // One cluster loses its services (new checksum), another disappears from discovery.
    const [emptied, removed] = [...snapshots.keys()];
    const changed = new Map(snapshots);
    changed.set(emptied!, { ...snapshots.get(emptied!)!, services: [] });
    changed.delete(removed!);
    discovery = [...changed].map(([cluster, snapshot]) => ({ cluster, checksum: cluster === emptied ? `${cluster}-emptied` : cluster, snapshot }));
    const { status, body } = await get(base, head);
    expect(status).toBe(200);
    expect(body).not.toEqual(before);
    expect(body).toEqual(expectedReport(base, baseFiles, head, headFiles, changed));
    // And back: the worker takes the first discovery again.
    discovery = [...snapshots].map(([cluster, snapshot]) => ({ cluster, checksum: cluster, snapshot }));
    expect((await get(base, head)).body).toEqual(before);
  });
});

interface DiffApi {
  readonly service: DiffService;
  readonly url: string;
  get(base: string, head: string): Promise<{ status: number; body: { clusters: unknown[]; headErrors: number; introduced: unknown[]; rejected?: { keeps: string }; error?: { message: string } } }>;
  stop(): Promise<void>;
}

/** The diff service behind the real HTTP edge, as the server wires it. */
async function startDiffApi(
  repoPath: string,
  discovery: () => Discovery,
  options: { maxMemoryMb?: number; idleMs?: number; timeoutMs?: number; maxWaiting?: number; logger?: ReturnType<typeof createMemoryLogger>["logger"] } = {},
): Promise<DiffApi> {
  const { logger = createMemoryLogger("diff").logger, ...limits } = options;
  const service = createDiffService({ location: { kind: "local", path: repoPath }, discovery: () => Promise.resolve(discovery()), logger, ...limits });
  const api = { diff: (b: string, h: string) => service.diff(b, h), healthy: () => true } as unknown as ServerApi;
  const http: ServerHttp = createServerHttp({ api, registry: new Registry(), webhooks: createWebhookHandlers({ genericSecret: "s", onPush: () => "accepted", logger }), logger, host: "127.0.0.1", port: 0, auth: createApiAuth({ tokens: { read: READ, admin: generateApiToken() }, hint: "test" }), onWebhook: () => undefined, maxBodyBytes: 1024 });
  const url = `http://127.0.0.1:${String(await http.start())}`;
  return {
    service,
    url,
    async get(b, h) {
      const res = await fetch(`${url}/api/diff?base=${b}&head=${h}`, { headers: { authorization: `Bearer ${READ}` } });
      return { status: res.status, body: (await res.json()) as Awaited<ReturnType<DiffApi["get"]>>["body"] };
    },
    async stop() {
      await http.stop();
      await service.close();
    },
  };
}

describe("GET /api/diff runs in a worker thread", () => {
  // Large enough that rendering takes a while (a few hundred milliseconds here; seconds at 100 clusters).
  const big = generateFleet({ ...OPTIONS, name: "diff-worker", clusters: 8, servicesPerCluster: 160, servicesPerNamespace: 8, namespacesPerWorkspace: 2, clustersPerWorkspace: 4 });
  const bigDiscovery: Discovery = [...(big.discovery as unknown as ReadonlyMap<string, DiscoverySnapshot>)].map(([cluster, snapshot]) => ({ cluster, checksum: cluster, snapshot }));
  let git: GitServer;
  let base: string;
  let head: string;
  beforeAll(async () => {
    git = await startGitServer();
    await git.createRepo("big");
    base = await git.commitFiles("big", Object.fromEntries(big.files.map((f) => [f.path, f.content])), "base");
    head = await git.commitFiles("big", { [big.onePolicyChange.after.path]: big.onePolicyChange.after.content }, "one policy");
  });
  afterAll(async () => {
    await git.stop();
  });

  it("the server's thread keeps answering while a diff renders", async () => {
    const api = await startDiffApi(git.repoPath("big"), () => bigDiscovery);
    try {
      const delay = monitorEventLoopDelay({ resolution: 5 });
      delay.enable();
      const started = performance.now();
      let healthy = 0;
      let rendering = true;
      const diff = api.get(base, head).finally(() => (rendering = false));
      // Health checks one after the other for as long as the diff renders.
      while (rendering) if ((await fetch(`${api.url}/healthz`)).status === 200) healthy++;
      const { status, body } = await diff;
      const elapsed = performance.now() - started;
      delay.disable();
      expect(status).toBe(200);
      expect(body.clusters.length).toBeGreaterThan(0);
      // On the server's own thread the translation blocked the loop for most of the diff; in the worker the
      // longest stall is a small part of it (sending discovery, parsing the answer), and health checks went on.
      expect(delay.max / 1e6).toBeLessThan(elapsed / 2);
      expect(healthy).toBeGreaterThan(1);
    } finally {
      await api.stop();
    }
  });

  it("an idle worker stops and gives its memory back; the next diff starts another (the reverse diff: the same clusters change)", async () => {
    const { logger, records } = createMemoryLogger("diff");
    const api = await startDiffApi(git.repoPath("big"), () => bigDiscovery, { idleMs: 200, logger });
    const stopped = () => records.filter((r) => r.msg.startsWith("diff worker stopped after a while without diffs")).length;
    try {
      const first = await api.get(base, head);
      expect(first.status).toBe(200);
      await until(() => stopped() === 1);
      const again = await api.get(head, base);
      expect(again.status).toBe(200);
      expect(again.body.clusters.length).toBe(first.body.clusters.length);
      await until(() => stopped() === 2);
    } finally {
      await api.stop();
    }
  });

  /** Two diffs in a row refused 503 with `message`, each logged (`logged`), while /healthz answers 200. */
  async function expectRefusedAlone(limits: { maxMemoryMb?: number; timeoutMs?: number }, message: RegExp, logged: string): Promise<void> {
    const { logger, records } = createMemoryLogger("diff");
    const api = await startDiffApi(git.repoPath("big"), () => bigDiscovery, { ...limits, logger });
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const { status, body } = await api.get(base, head);
        expect(status).toBe(503);
        expect(body.error?.message).toMatch(message);
        expect((await fetch(`${api.url}/healthz`)).status).toBe(200);
      }
      expect(records.filter((r) => r.msg.startsWith(logged))).toHaveLength(2);
    } finally {
      await api.stop();
    }
  }

  it("a diff that needs more memory than the worker may use is refused alone; the server answers on, and so does the next worker", async () => {
    await expectRefusedAlone({ maxMemoryMb: 16 }, /needs more memory than the diff worker may use \(16 MiB\); raise GITMESH_DIFF_MAX_MEMORY_MB/, "diff worker ran out of memory");
  });

  it("a rendering that takes longer than the limit is stopped with its worker and answered 503; the server answers on", async () => {
    // 100 ms: less than starting a worker and rendering this fleet takes (hundreds of milliseconds).
    await expectRefusedAlone({ timeoutMs: 100 }, /took longer than 0\.1 s and was stopped; raise GITMESH_DIFF_TIMEOUT_SECONDS \(Helm: diff\.timeoutSeconds\)/, "diff stopped: rendering took too long");
  });

  it("diffs wait one at a time up to the bound; more are refused at once, and the waiting ones are answered", async () => {
    const { logger, records } = createMemoryLogger("diff");
    const api = await startDiffApi(git.repoPath("big"), () => bigDiscovery, { maxWaiting: 1, logger });
    try {
      // Four at once: one renders, one waits, two are refused (the first takes hundreds of milliseconds).
      const answers = await Promise.all([api.get(base, head), api.get(head, base), api.get(base, head), api.get(head, base)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 503, 503]);
      for (const a of answers.filter((x) => x.status === 503)) expect(a.body.error?.message).toBe("1 diff is waiting to be rendered, one at a time; try again when they are done");
      expect(records.filter((r) => r.msg === "diff refused: too many diffs waiting")).toHaveLength(2);
      // Nothing is left counted: the next ones are served.
      expect((await api.get(base, head)).status).toBe(200);
      expect((await api.get(head, base)).status).toBe(200);
    } finally {
      await api.stop();
    }
  });
});

describe("the diff settings GITMESH_DIFF_TIMEOUT_SECONDS and GITMESH_DIFF_MAX_MEMORY_MB", () => {
  const base = { gitUrl: "https://git.example.com/mesh.git" };
  const settings = [
    // what the setting is, its default and a good value as parsed, values that stop the start
    { input: "diffTimeoutSeconds", read: "diffTimeoutMs", name: "diff timeout (GITMESH_DIFF_TIMEOUT_SECONDS)", fallback: 300_000, good: ["30", 30_000], bad: ["soon", "0", "100000"] },
    { input: "diffMaxMemoryMb", read: "diffMaxMemoryMb", name: "diff memory (GITMESH_DIFF_MAX_MEMORY_MB)", fallback: 2048, good: ["512", 512], bad: ["lots", "32", "1.5"] },
  ] as const;
  it("stop a diff after 300 s and cap its worker at 2048 MiB unless set; a value out of range stops the start with what to write", () => {
    for (const s of settings) {
      expect(parseServerConfig(base, { identity: "r1" }).config?.[s.read], s.name).toBe(s.fallback);
      expect(parseServerConfig({ ...base, [s.input]: s.good[0] }, { identity: "r1" }).config?.[s.read], s.name).toBe(s.good[1]);
      for (const bad of s.bad) {
        const { config, problems } = parseServerConfig({ ...base, [s.input]: bad }, { identity: "r1" });
        expect(config).toBeUndefined();
        expect(problems.join("\n")).toContain(`${s.name} "${bad}" is invalid`);
      }
    }
  });
});
