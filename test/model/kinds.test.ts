import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SUPPORTED_KINDS, kindInfo } from "../../src/model/index.js";

describe("SUPPORTED_KINDS", () => {
  it("finds kinds by exact apiVersion and kind", () => {
    expect(kindInfo("admin.gloo.solo.io/v2", "Workspace")).toMatchObject({ group: "admin.gloo.solo.io", version: "v2", adminScoped: true, schemaFile: "workspace.schema.json" });
    expect(kindInfo("networking.gloo.solo.io/v2", "RouteTable")?.adminScoped).toBe(false);
    expect(kindInfo("security.policy.gloo.solo.io/v2", "CORSPolicy")?.schemaFile).toBe("cors-policy.schema.json");
    expect(kindInfo("admin.gloo.solo.io/v1", "Workspace")).toBeUndefined();
    expect(kindInfo("admin.gloo.solo.io/v2", "workspace")).toBeUndefined();
  });

  it("has no duplicates", () => {
    const keys = SUPPORTED_KINDS.map((k) => `${k.apiVersion}/${k.kind}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("every schema file present belongs to a supported kind (or is common / the discovery snapshot)", () => {
    const files = readdirSync(new URL("../../schemas/", import.meta.url)).filter((f) => f.endsWith(".schema.json"));
    const kindFiles = new Set(SUPPORTED_KINDS.map((k) => k.schemaFile));
    expect(files.filter((f) => !kindFiles.has(f)).sort()).toEqual(["common.schema.json", "discovery-snapshot.schema.json"]);
  });
});
