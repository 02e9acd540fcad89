import { describe, expect, it } from "vitest";
import { loadDesiredState, updateDesiredState, type DesiredState, type SourceFile } from "../../src/config/index.js";
import { docs, externalService, file, kubernetesCluster, routeTable, virtualDestination, virtualGateway, workspace, workspaceSettings, yamlDoc } from "./fixtures.js";
import { createRandom } from "../helpers/random.js";

const NAMES = ["a", "b", "c"];
const NAMESPACES = ["web", "api", "nowhere"];
const PATHS = ["admin/ws.yaml", "admin/clusters.yaml", "web/a.yaml", "web/b.yaml", "api/a.yaml", "api/b.yaml", "gw.yaml", "z/dup.yaml", "gitmesh.yaml"];

/** Random documents covering every whole-tree rule: duplicates, ownership, settings per workspace, references, invalid objects. */
function randomDoc(r: () => number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(r() * list.length)]!;
  const name = pick(NAMES);
  const ns = pick(NAMESPACES);
  switch (Math.floor(r() * 12)) {
    case 0:
      return pick([
        docs(workspace("web", ["web", "web-gw"]), workspace("api", ["api"])),
        workspace("web", ["web", "web-gw", "api"]),
        workspace("api", ["api", "web"], "cluster1"),
        workspace("other", ["nowhere"], "cluster2"),
      ]);
    case 1:
      return pick([kubernetesCluster("cluster1", { env: "prod" }), kubernetesCluster("cluster2")]);
    case 2:
      return workspaceSettings(pick(["web", "api", "extra"]), pick(["web", "api", "gloo-mesh"]));
    case 3:
      return virtualGateway(pick(["north", "south"]), "web-gw");
    case 4:
      return externalService(name, ns);
    case 5:
      return routeTable(name, ns, {
        hosts: [`${name}.example.com`],
        virtualGateways: [{ name: pick(["north", "south"]), namespace: "web-gw" }],
        http: [{ name: "main", forwardTo: { destinations: [{ ref: { name: pick(NAMES), namespace: pick(NAMESPACES) }, kind: pick(["VIRTUAL_DESTINATION", "EXTERNAL_SERVICE"]), port: { number: 80 } }] } }],
      });
    case 6:
      return yamlDoc("resilience.policy.gloo.solo.io/v2", "OutlierDetectionPolicy", name, ns, {
        applyToDestinations: [{ kind: "VIRTUAL_DESTINATION", selector: { name: pick(NAMES), namespace: pick(NAMESPACES) } }],
        config: { consecutiveErrors: 5 },
      });
    case 7:
      return yamlDoc("networking.gloo.solo.io/v2", "VirtualDestination", name, ns, { hosts: ["x.global"], ports: [{ number: 80, protocol: "HTTP" }], bogus: 1 }); // schema violation
    case 8:
      return yamlDoc("networking.gloo.solo.io/v2", "VirtualDestination", name, ns, { hosts: ["x.global"], ports: [{ number: 80, protocol: "HTTP" }] }, { annotations: { "cluster.solo.io/cluster": pick(["cluster1", "cluster2"]) } });
    case 9:
      return "kind: [\n";
    default:
      return virtualDestination(name, ns);
  }
}

function randomFile(r: () => number, path: string): SourceFile {
  if (path === "gitmesh.yaml") return file(path, r() < 0.5 ? "adminNamespace: gloo-mesh\n" : "ignore: [z/]\n");
  const n = 1 + Math.floor(r() * 3);
  return file(path, docs(...Array.from({ length: n }, () => randomDoc(r))));
}

function expectSameAsFullLoad(state: DesiredState, diagnostics: unknown, files: ReadonlyMap<string, SourceFile>): void {
  const full = loadDesiredState([...files.values()]);
  expect(diagnostics).toEqual(full.diagnostics);
  expect(JSON.parse(JSON.stringify(state))).toEqual(JSON.parse(JSON.stringify(full.state)));
}

describe("updateDesiredState is a full load, incrementally", () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`random edits, removals and additions give the state and diagnostics of a full load (seed ${seed})`, () => {
      const r = createRandom(seed);
      const current = new Map<string, SourceFile>();
      for (const path of PATHS) if (path !== "gitmesh.yaml" && r() < 0.7) current.set(path, randomFile(r, path));
      let { state } = loadDesiredState([...current.values()]);
      const history: { state: DesiredState; files: Map<string, SourceFile> }[] = [];
      for (let step = 0; step < 40; step++) {
        // Sometimes branch off an older state (as git-sync does from the last good state).
        if (history.length > 0 && r() < 0.15) {
          const old = history[Math.floor(r() * history.length)]!;
          state = old.state;
          current.clear();
          for (const [p, f] of old.files) current.set(p, f);
        }
        const changed: SourceFile[] = [];
        const removed: string[] = [];
        const edits = 1 + Math.floor(r() * 3);
        for (let e = 0; e < edits; e++) {
          const path = PATHS[Math.floor(r() * PATHS.length)]!;
          if (changed.some((f) => f.path === path) || removed.includes(path)) continue;
          if (current.has(path) && r() < 0.25) {
            removed.push(path);
            current.delete(path);
          } else {
            const f = r() < 0.1 && current.has(path) ? current.get(path)! : randomFile(r, path); // sometimes the same bytes again
            changed.push(f);
            current.set(path, f);
          }
        }
        // A previously ignored file needs its content handed in when the ignore rules widen.
        const settingsChanged = changed.some((f) => f.path === "gitmesh.yaml") || removed.includes("gitmesh.yaml");
        const handIn = settingsChanged ? [...current.values()].filter((f) => f.path.startsWith("z/") && !changed.includes(f)) : [];
        const next = updateDesiredState(state, [...changed, ...handIn], removed);
        expectSameAsFullLoad(next.state, next.diagnostics, current);
        // changedKeys: exactly the keys whose object in force differs (by content, workspace or place).
        const before = JSON.parse(JSON.stringify(state)) as DesiredState;
        const after = JSON.parse(JSON.stringify(next.state)) as DesiredState;
        const at = (s: DesiredState, key: string) => {
          const loc = s.objects[key];
          return loc ? JSON.stringify(s.files[loc.file]!.objects[loc.index]) : undefined;
        };
        const expected = new Set([...Object.keys(before.objects), ...Object.keys(after.objects)].filter((k) => at(before, k) !== at(after, k)));
        expect([...next.changedKeys].sort()).toEqual([...expected].sort());
        history.push({ state: next.state, files: new Map(current) });
        state = next.state;
      }
    });
  }

  it("re-links fully and identically after the state went through JSON", () => {
    const r = createRandom(42);
    const current = new Map<string, SourceFile>();
    for (const path of PATHS) if (path !== "gitmesh.yaml") current.set(path, randomFile(r, path));
    const { state } = loadDesiredState([...current.values()]);
    const restored = JSON.parse(JSON.stringify(state)) as DesiredState;
    const f = randomFile(r, "web/a.yaml");
    current.set(f.path, f);
    const next = updateDesiredState(restored, [f], []);
    expectSameAsFullLoad(next.state, next.diagnostics, current);
  });
});
