/** The server's side of the output-options contract and the pruneHeld view. */
import { describe, expect, it } from "vitest";
import { OUTPUT_OPTIONS_KEY as AGENT_KEY } from "../../src/agent/index.js";
import { frozenTables, OUTPUT_OPTIONS_KEY, pruneHeldView, relayResources, type PipelineOutput } from "../../src/server/index.js";

const vs = { apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name: "a", namespace: "apps", labels: {} }, spec: {} };
const out = (extra: Partial<PipelineOutput>): PipelineOutput => ({ cluster: "cluster1", version: 3, sourceCommit: "c", resources: [vs], complete: true, diagnostics: [], ...extra });

describe("output options and pruneHeld", () => {
  it("uses the agent's reserved key, and adds the entry only when there are options", () => {
    expect(OUTPUT_OPTIONS_KEY).toBe(AGENT_KEY);
    expect([...relayResources(out({})).keys()]).toEqual(["VirtualService/apps/a"]);
    const m = relayResources(out({ options: { allowMassDeletion: true, ignoreDifferences: [{ kind: "VirtualService", jsonPointers: ["/spec/http"] }] } }));
    expect(JSON.parse(new TextDecoder().decode(m.get(OUTPUT_OPTIONS_KEY)))).toEqual({ allowMassDeletion: true, ignoreDifferences: [{ kind: "VirtualService", jsonPointers: ["/spec/http"] }] });
  });

  it("reports held objects with reason and since; nothing when nothing is held", () => {
    expect(pruneHeldView(out({}), 0)).toBeNull();
    expect(pruneHeldView(undefined, 0)).toBeNull();
    const v = pruneHeldView(
      out({
        held: [
          { cause: "frozen", table: "apps/a", reason: "frozen", sinceMs: Date.parse("2026-01-02T00:00:00Z"), objects: ["VirtualService/apps/a"] },
          { cause: "discovery", reason: "no discovery", sinceMs: Date.parse("2026-01-01T00:00:00Z"), objects: ["VirtualService/shared/s"] },
        ],
      }),
      0,
    );
    expect(v).toMatchObject({ reason: "frozen; no discovery", since: "2026-01-01T00:00:00.000Z", objects: ["VirtualService/apps/a", "VirtualService/shared/s"], incomplete: null });
    expect(frozenTables(out({ held: [{ cause: "frozen", table: "apps/a", reason: "", sinceMs: 0, objects: [] }] }))).toEqual(["apps/a"]);
    expect(pruneHeldView(out({ complete: false, incompleteReason: "no discovery from cluster1" }), 0)).toMatchObject({ reason: "no discovery from cluster1", incomplete: "no discovery from cluster1", objects: [] });
  });
});
