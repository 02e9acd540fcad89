import { describe, expect, it } from "vitest";
import { ConfigCode, getObject, loadDesiredState, updateDesiredState, type SourceFile } from "../../src/config/index.js";
import { baseRepo, codes, docs, file, virtualDestination, workspace, workspaceSettings } from "./fixtures.js";

const extra = (): SourceFile[] => [
  ...baseRepo(),
  file("workspaces/web/vd.yaml", docs(virtualDestination("reviews", "web"), virtualDestination("ratings", "web"))),
];

describe("updateDesiredState", () => {
  it("reports no changed keys when nothing changed, and reuses every file record", () => {
    const { state } = loadDesiredState(extra());
    const next = updateDesiredState(state, [file("workspaces/web/vd.yaml", extra().at(-1)!.content as string)], []);
    expect([...next.changedKeys]).toEqual([]);
    for (const path of Object.keys(state.files)) expect(next.state.files[path]).toBe(state.files[path]);
  });

  it("re-parses only the changed files and reports added, changed and removed keys", () => {
    const { state } = loadDesiredState(extra());
    const changedVd = docs(
      virtualDestination("reviews", "web").replace("reviews.global", "reviews.mesh"), // changed content
      virtualDestination("details", "web"), // ratings removed, details added
    );
    const next = updateDesiredState(state, [file("workspaces/web/vd.yaml", changedVd)], []);
    expect([...next.changedKeys].sort()).toEqual([
      "VirtualDestination//web/details",
      "VirtualDestination//web/ratings",
      "VirtualDestination//web/reviews",
    ]);
    expect(next.diagnostics).toEqual([]);
    // Untouched files keep their very records (nothing re-parsed), the changed one is new.
    expect(next.state.files["workspaces/web/routes.yaml"]).toBe(state.files["workspaces/web/routes.yaml"]);
    expect(next.state.files["workspaces/web/vd.yaml"]).not.toBe(state.files["workspaces/web/vd.yaml"]);
    expect(getObject(next.state, "VirtualDestination//web/ratings")).toBeUndefined();
    expect(getObject(next.state, "VirtualDestination//web/details")).toBeDefined();
    // The previous state is untouched.
    expect(getObject(state, "VirtualDestination//web/ratings")).toBeDefined();
  });

  it("reports every key of a removed file", () => {
    const { state } = loadDesiredState(extra());
    const next = updateDesiredState(state, [], ["workspaces/web/vd.yaml"]);
    expect([...next.changedKeys].sort()).toEqual(["VirtualDestination//web/ratings", "VirtualDestination//web/reviews"]);
    expect(next.state.files["workspaces/web/vd.yaml"]).toBeUndefined();
  });

  it("reports an object moved to another file as changed (its source moved) and keeps it in force", () => {
    const { state } = loadDesiredState(extra());
    const next = updateDesiredState(
      state,
      [file("workspaces/web/vd.yaml", virtualDestination("reviews", "web")), file("workspaces/web/ratings.yaml", virtualDestination("ratings", "web"))],
      [],
    );
    expect([...next.changedKeys]).toEqual(["VirtualDestination//web/ratings"]);
    expect(getObject(next.state, "VirtualDestination//web/ratings")!.source.file).toBe("workspaces/web/ratings.yaml");
    expect(next.diagnostics).toEqual([]);
  });

  it("reports objects whose owning workspace changed although their files did not", () => {
    const { state } = loadDesiredState(extra());
    // The workspace `web` stops owning namespace `web`; a new workspace `shop` takes it.
    const next = updateDesiredState(
      state,
      [file("workspaces/web/workspace.yaml", docs(workspace("web", ["web-gw"]), workspace("shop", ["web"]), workspaceSettings("web", "web-gw")))],
      [],
    );
    expect(getObject(next.state, "VirtualDestination//web/reviews")!.workspace).toBe("shop");
    expect(next.changedKeys).toContain("VirtualDestination//web/reviews");
    expect(next.changedKeys).toContain("RouteTable//web/frontend");
    expect(next.changedKeys).toContain("Workspace//gloo-mesh/shop");
    expect(next.changedKeys).toContain("WorkspaceSettings//web/web"); // removed
    expect(next.changedKeys).toContain("WorkspaceSettings//web-gw/web"); // added
    expect(next.changedKeys).not.toContain("VirtualGateway//web-gw/north");
  });

  it("promotes a shadowed duplicate when the first definition is removed", () => {
    const files = [...baseRepo(), file("a.yaml", virtualDestination("reviews", "web")), file("b.yaml", `# moved\n${virtualDestination("reviews", "web")}`)];
    const { state, diagnostics } = loadDesiredState(files);
    expect(codes(diagnostics)).toEqual([ConfigCode.DUPLICATE_OBJECT]);
    const next = updateDesiredState(state, [], ["a.yaml"]);
    expect(next.diagnostics).toEqual([]);
    expect(getObject(next.state, "VirtualDestination//web/reviews")!.source).toEqual({ file: "b.yaml", line: 2, column: 1, docIndex: 0 });
    expect([...next.changedKeys]).toEqual(["VirtualDestination//web/reviews"]);
  });

  it("follows changes of gitmesh.yaml ignore rules, and asks for a full load when it cannot", () => {
    const files = [...extra(), file("gitmesh.yaml", "ignore: [drafts/]\n"), file("drafts/x.yaml", virtualDestination("draft", "web"))];
    const { state } = loadDesiredState(files);
    expect(state.ignored).toEqual(["drafts/x.yaml"]);
    // Now also ignore vd.yaml: its objects go away.
    const narrower = updateDesiredState(state, [file("gitmesh.yaml", "ignore: [drafts/, workspaces/web/vd.yaml]\n")], []);
    expect([...narrower.changedKeys].sort()).toEqual(["VirtualDestination//web/ratings", "VirtualDestination//web/reviews"]);
    expect(narrower.state.ignored).toEqual(["drafts/x.yaml", "workspaces/web/vd.yaml"]);
    // Un-ignoring drafts/ without handing in its content: the loader says it needs a full load.
    const wider = updateDesiredState(narrower.state, [file("gitmesh.yaml", "ignore: [workspaces/web/vd.yaml]\n")], []);
    expect(codes(wider.diagnostics)).toEqual([ConfigCode.RELOAD_REQUIRED]);
    expect(wider.diagnostics[0]!.message).toContain("drafts/x.yaml");
    // It stays until the content arrives, without piling up.
    const again = updateDesiredState(wider.state, [file("workspaces/web/more.yaml", virtualDestination("details", "web"))], []);
    expect(codes(again.diagnostics)).toEqual([ConfigCode.RELOAD_REQUIRED]);
    // Handing the content in works.
    const full = updateDesiredState(narrower.state, [file("gitmesh.yaml", "ignore: []\n"), ...files.filter((f) => f.path === "drafts/x.yaml" || f.path.endsWith("vd.yaml"))], []);
    expect(full.diagnostics).toEqual([]);
    expect(full.changedKeys).toContain("VirtualDestination//web/draft");
  });

  it("works on a state that went through JSON (as stored in Redis)", () => {
    const { state } = loadDesiredState(extra());
    const restored = JSON.parse(JSON.stringify(state));
    const next = updateDesiredState(restored, [file("workspaces/web/more.yaml", virtualDestination("details", "web"))], []);
    expect([...next.changedKeys]).toEqual(["VirtualDestination//web/details"]);
    expect(next.diagnostics).toEqual([]);
  });

  it("updates diagnostics: a fixed file loses its errors, a broken one gains them", () => {
    const { state } = loadDesiredState(extra());
    const broken = updateDesiredState(state, [file("workspaces/web/vd.yaml", "kind: [\n")], []);
    expect(codes(broken.diagnostics)).toContain(ConfigCode.YAML_SYNTAX);
    expect(getObject(broken.state, "VirtualDestination//web/reviews")).toBeUndefined();
    const fixed = updateDesiredState(broken.state, [file("workspaces/web/vd.yaml", extra().at(-1)!.content as string)], []);
    expect(fixed.diagnostics).toEqual([]);
    expect([...fixed.changedKeys].sort()).toEqual(["VirtualDestination//web/ratings", "VirtualDestination//web/reviews"]);
  });
});
