/** gitmesh.yaml ignoreDifferences and allowMassDeletion: accepted as documented, rejected with file:line otherwise. */
import { describe, expect, it } from "vitest";
import { loadDesiredState } from "../../src/config/index.js";
import { formatDiagnostic } from "../../src/core/index.js";

const load = (settings: string) => loadDesiredState([{ path: "gitmesh.yaml", content: settings }]);

describe("gitmesh.yaml ignoreDifferences and allowMassDeletion", () => {
  it("accepts the documented form", () => {
    const { state, diagnostics } = load(
      "ignoreDifferences:\n  - group: networking.istio.io\n    kind: VirtualService\n    namespace: bookinfo\n    name: reviews\n    jsonPointers: [/spec/http/0/route/0/weight, /spec/http/0/route/1/weight]\n  - kind: DestinationRule\n    jsonPointers: [/spec/trafficPolicy]\nallowMassDeletion: [cluster2, cluster1]\n",
    );
    expect(diagnostics).toEqual([]);
    expect(state.settings.ignoreDifferences).toEqual([
      { group: "networking.istio.io", kind: "VirtualService", namespace: "bookinfo", name: "reviews", jsonPointers: ["/spec/http/0/route/0/weight", "/spec/http/0/route/1/weight"] },
      { kind: "DestinationRule", jsonPointers: ["/spec/trafficPolicy"] },
    ]);
    expect(state.settings.allowMassDeletion).toEqual(["cluster1", "cluster2"]);
  });

  it("rejects bad entries with file:line and the path of the bad field; good entries are kept", () => {
    const { state, diagnostics } = load(
      "ignoreDifferences:\n  - kind: VirtualService\n    jsonPointers: [spec/http]\n  - jsonPointers: [/spec]\n  - kind: VirtualService\n    colour: blue\n    jsonPointers: [/spec/hosts]\n  - kind: ServiceEntry\n    jsonPointers: [/spec/endpoints]\nallowMassDeletion: yes\n",
    );
    expect(diagnostics.map(formatDiagnostic)).toEqual([
      expect.stringMatching(/^gitmesh\.yaml:3:20: error SETTINGS_INVALID: each JSON pointer must start with `\/`.*\(at \/ignoreDifferences\/0\/jsonPointers\/0\)$/),
      expect.stringMatching(/^gitmesh\.yaml:4:5: error SETTINGS_INVALID: `kind` is required.*\(at \/ignoreDifferences\/1\)$/),
      expect.stringMatching(/^gitmesh\.yaml:6:5: error SETTINGS_INVALID: unknown field `colour`.*\(at \/ignoreDifferences\/2\/colour\)$/),
      expect.stringMatching(/^gitmesh\.yaml:10:1: error SETTINGS_INVALID: `allowMassDeletion` must be a list of cluster names/),
    ]);
    expect(state.settings.ignoreDifferences).toEqual([{ kind: "ServiceEntry", jsonPointers: ["/spec/endpoints"] }]);
    expect(state.settings.allowMassDeletion).toEqual([]);
  });

  it("rejects a non-list and pointers at the object's identity", () => {
    expect(load("ignoreDifferences: VirtualService\n").diagnostics.map(formatDiagnostic)).toEqual([expect.stringMatching(/^gitmesh\.yaml:1:1: error SETTINGS_INVALID: `ignoreDifferences` must be a list/)]);
    expect(load("ignoreDifferences:\n  - kind: VirtualService\n    jsonPointers: [/metadata/name]\n").diagnostics).toHaveLength(1);
  });
});
