import { describe, expect, it } from "vitest";
import { allObjects, ConfigCode, getObject, loadDesiredState, objectsOfKind, updateDesiredState } from "../../src/config/index.js";
import { generateConfigRepo } from "../../bench/config/generate-config-repo.js";

// Correctness on a large tree only; speed and memory are measured by `npm run bench -- load`.
describe("the loader on several thousand files", () => {
  const files = generateConfigRepo({ objects: 4000, docsPerFile: 1, objectsPerWorkspace: 50 });

  it("loads every object of 4,000 one-document files with no diagnostics", () => {
    expect(files.length).toBe(4000);
    const { state, diagnostics } = loadDesiredState(files);
    expect(diagnostics).toEqual([]);
    expect(allObjects(state)).toHaveLength(4000);
    expect(objectsOfKind(state, "Workspace")).toHaveLength(80);
    expect(allObjects(state).filter((o) => o.kind !== "Workspace" && o.workspace === undefined)).toEqual([]);
    expect(new Set(allObjects(state).map((o) => o.source.file)).size).toBe(4000);
  });

  it("finds the few broken files among thousands, each at the right place, and an update fixes them", () => {
    const rtIndex = files.findIndex((f, i) => i > 2000 && f.content.includes("kind: RouteTable"));
    const broken = files.map((f, i) => {
      if (i === 1234) return { path: f.path, content: f.content.replace("kind: ", "kind: [") };
      if (i === rtIndex) return { path: f.path, content: f.content.replace("  virtualGateways:", "  virtualGateway:") };
      return f;
    });
    const { state, diagnostics } = loadDesiredState(broken);
    const byFile = new Map(diagnostics.map((d) => [d.file, d]));
    expect(byFile.get(files[1234]!.path)?.code).toBe(ConfigCode.YAML_SYNTAX);
    const typo = byFile.get(files[rtIndex]!.path)!;
    expect(typo.code).toBe(ConfigCode.SCHEMA_VIOLATION);
    expect(typo.path).toBe("/spec/virtualGateway");
    expect(typo.line).toBe(files[rtIndex]!.content.split("\n").indexOf("  virtualGateways:") + 1);
    expect(new Set(diagnostics.map((d) => d.file)).size).toBeLessThanOrEqual(4);

    const fixed = updateDesiredState(state, [files[1234]!, files[rtIndex]!], []);
    expect(fixed.diagnostics).toEqual([]);
    expect(allObjects(fixed.state)).toHaveLength(4000);
    expect(fixed.changedKeys.size).toBeGreaterThanOrEqual(2);
    for (const key of fixed.changedKeys) expect(getObject(fixed.state, key)).toBeDefined();
  });
});
