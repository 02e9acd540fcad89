/** gitmesh.yaml `suspend` (a change freeze held in Git, #38): accepted as documented, rejected with file:line otherwise. */
import { describe, expect, it } from "vitest";
import { loadDesiredState } from "../../src/config/index.js";
import { formatDiagnostic } from "../../src/core/index.js";

const load = (settings: string) => loadDesiredState([{ path: "gitmesh.yaml", content: settings }]);

describe("gitmesh.yaml suspend", () => {
  it("accepts clusters (sorted, without duplicates) or the whole fleet, with an optional reason", () => {
    const a = load("suspend:\n  clusters: [cluster2, cluster1, cluster2]\n  reason: change freeze until 2026-12-01\n");
    expect(a.diagnostics).toEqual([]);
    expect(a.state.settings.suspend).toEqual({ clusters: ["cluster1", "cluster2"], reason: "change freeze until 2026-12-01" });
    const fleet = load('suspend:\n  clusters: ["*"]\n');
    expect(fleet.diagnostics).toEqual([]);
    expect(fleet.state.settings.suspend).toEqual({ clusters: ["*"] });
  });

  it("nothing is suspended without the key, with an empty list, or with suspend: null", () => {
    expect(load("auditBranch: audit/out\n").state.settings.suspend).toBeUndefined();
    expect(load("suspend:\n  clusters: []\n").state.settings.suspend).toBeUndefined();
    expect(load("suspend:\n").state.settings.suspend).toBeUndefined();
  });

  it("a bad value is an error at its line (the commit is rejected, so a typo cannot lift a freeze in force)", () => {
    const { diagnostics } = load("suspend:\n  clusters: cluster1\n  colour: blue\n  reason: 42\n");
    expect(diagnostics.map(formatDiagnostic)).toEqual([
      expect.stringMatching(/^gitmesh\.yaml:2:3: error SETTINGS_INVALID: `suspend` must be a mapping \{clusters: .*nothing is suspended \(at \/suspend\/clusters\)$/),
      expect.stringMatching(/^gitmesh\.yaml:3:3: error SETTINGS_INVALID: unknown key `colour` in suspend.*\(at \/suspend\/colour\)$/),
    ]);
    expect(load("suspend: [cluster1]\n").diagnostics.map(formatDiagnostic)).toEqual([expect.stringMatching(/^gitmesh\.yaml:1:1: error SETTINGS_INVALID: `suspend` must be a mapping.*\(at \/suspend\)$/)]);
    expect(load("suspend:\n  clusters: [Cluster_1]\n").diagnostics).toHaveLength(1);
  });
});
