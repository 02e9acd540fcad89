// GET /api/diff over the real HTTP edge, on a real Git repository: the server renders base in full and
// head incrementally from it (src/translate's renderRevisions); its answer must be exactly what full
// translations of both revisions, compared object by object, report — for a one-policy change with a
// removed file, and for a head that introduces errors.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { loadDesiredState } from "../../src/config/index.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { generateFleet, type FleetOptions } from "../../src/devtools/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { compareRenders, createWebhookHandlers, renderJson, type RenderSide } from "../../src/git-sync/index.js";
import { createApiAuth, createDiffService, createServerHttp, generateApiToken, type ServerApi, type ServerHttp } from "../../src/server/index.js";
import { translateAll } from "../../src/translate/index.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";

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

/** The reference: both revisions loaded and translated in full, compared object by object. */
function expectedReport(base: string, baseFiles: ReadonlyMap<string, string>, head: string, headFiles: ReadonlyMap<string, string>): unknown {
  const side = (sha: string, files: ReadonlyMap<string, string>): RenderSide => {
    const load = loadDesiredState([...files].map(([path, content]) => ({ path, content })));
    const result = translateAll(load.state, snapshots);
    return { ref: sha, commit: sha, clusters: new Map([...result.clusters].map(([c, o]) => [c, o.resources])), diagnostics: [...load.diagnostics, ...result.diagnostics] };
  };
  return JSON.parse(renderJson(compareRenders(side(base, baseFiles), side(head, headFiles))));
}

describe("GET /api/diff renders head incrementally and answers what full translations report", () => {
  let git: GitServer;
  let http: ServerHttp;
  let url: string;
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
    const logger = createMemoryLogger("diff").logger;
    const discovery = [...snapshots].map(([cluster, snapshot]) => ({ cluster, checksum: cluster, snapshot }));
    const service = createDiffService({ location: { kind: "local", path: git.repoPath("fleet") }, discovery: () => Promise.resolve(discovery), logger });
    const api = { diff: (b: string, h: string) => service.diff(b, h) } as unknown as ServerApi;
    http = createServerHttp({ api, registry: new Registry(), webhooks: createWebhookHandlers({ genericSecret: "s", onPush: () => "accepted", logger }), logger, host: "127.0.0.1", port: 0, auth: createApiAuth({ tokens: { read: READ, admin: generateApiToken() }, hint: "test" }), onWebhook: () => undefined, maxBodyBytes: 1024 });
    url = `http://127.0.0.1:${String(await http.start())}`;
  });
  afterAll(async () => {
    await http.stop();
    await git.stop();
  });

  const get = async (b: string, h: string) => {
    const res = await fetch(`${url}/api/diff?base=${b}&head=${h}`, { headers: { authorization: `Bearer ${READ}` } });
    return { status: res.status, body: (await res.json()) as { clusters: unknown[]; headErrors: number; introduced: unknown[] } };
  };

  it("a one-policy change with a removed file: the same clusters, objects and diagnostics as full translations", async () => {
    const { status, body } = await get(base, head);
    expect(status).toBe(200);
    expect(body.clusters.length).toBeGreaterThan(0);
    expect(body).toEqual(expectedReport(base, baseFiles, head, headFiles));
  });

  it("a head with errors: its introduced diagnostics and error count, as full translations report them", async () => {
    const { status, body } = await get(base, broken);
    expect(status).toBe(200);
    expect(body.headErrors).toBeGreaterThan(0);
    expect(new Set(body.introduced.map((d) => (d as { code: string }).code))).toEqual(new Set(["YAML_SYNTAX", "ROUTE_REPLACEMENT", "DESTINATION_NOT_FOUND"]));
    expect(body).toEqual(expectedReport(base, baseFiles, broken, brokenFiles));
  });

  it("a commit the repository does not have is a 404", async () => {
    expect((await get(base, "f".repeat(40))).status).toBe(404);
  });
});
