/** The performance helpers must not change a byte: canonical form, content hashes, fast validation paths, incremental indexes. */
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/core/index.js";
import { canonicalObject, contentHash } from "../../src/translate/canonical.js";
import { assembleCluster, indexOf, validateIstioResource, type IstioResource } from "../../src/translate/index.js";
import { patchCluster } from "../../src/translate/assemble.js";
import { desiredFromYaml, discoveryFromYaml, objectsFromYaml } from "./helpers.js";

describe("canonicalObject", () => {
  const samples: unknown[] = [
    { spec: { z: 1, a: [{ y: 2, b: undefined, a: { d: 1, c: 2 } }] }, metadata: { name: "n", labels: { b: "1", a: "2" } }, kind: "K", apiVersion: "v1" },
    { apiVersion: "v1", kind: "K", metadata: { annotations: {}, name: "x" }, spec: { a: [1, "2", null, { b: 1, a: 2 }], b: { c: { e: 1, d: undefined } } } },
    { apiVersion: "v1", kind: "K", metadata: { name: "x" }, aaa: 1, spec: {} },
    [{ b: 1, a: 2 }, 3],
  ];
  it("serialises exactly like core canonicalJson", () => {
    for (const s of samples) expect(JSON.stringify(canonicalObject(s))).toBe(canonicalJson(s));
  });
  it("returns already-canonical subtrees as they are and does not modify its input", () => {
    const labels = { a: "1", b: "2" };
    const input = { apiVersion: "v1", kind: "K", metadata: { labels, name: "x" }, spec: { z: 1, a: 2 } };
    const before = JSON.stringify(input);
    const out = canonicalObject(input);
    expect(JSON.stringify(input)).toBe(before);
    expect(out).not.toBe(input);
    expect(out.metadata).toBe(input.metadata);
    expect(out.metadata.labels).toBe(labels);
    const again = canonicalObject(out);
    expect(again).toBe(out);
  });
  it("content hashes are equal exactly when canonical JSON is", () => {
    const a = canonicalObject({ apiVersion: "v1", kind: "K", spec: { a: 1, b: [1, 2] } });
    const b = canonicalObject({ kind: "K", apiVersion: "v1", spec: { b: [1, 2], a: 1 } });
    const c = canonicalObject({ apiVersion: "v1", kind: "K", spec: { a: 1, b: [2, 1] } });
    expect(contentHash(a)).toBe(contentHash(b));
    expect(contentHash(a)).not.toBe(contentHash(c));
  });
});

describe("validateIstioResource metadata fast path", () => {
  const base = {
    apiVersion: "security.istio.io/v1",
    kind: "PeerAuthentication",
    metadata: { labels: { a: "b" }, name: "p", namespace: "ns" },
    spec: { mtls: { mode: "STRICT" } },
  };
  it("accepts valid objects and still reports schema errors in the spec and in metadata", () => {
    expect(validateIstioResource(base)).toEqual([]);
    expect(validateIstioResource({ ...base, spec: { mtls: { mode: 7 } } }).length).toBeGreaterThan(0);
    const badLabel = validateIstioResource({ ...base, metadata: { ...base.metadata, labels: { a: 1 } } } as unknown as IstioResource);
    expect(badLabel.map((i) => i.path)).toEqual(["/metadata/labels/a"]);
    const badName = validateIstioResource({ ...base, metadata: { ...base.metadata, name: 5 } } as unknown as IstioResource);
    expect(badName.map((i) => i.path)).toEqual(["/metadata/name"]);
  });
});

describe("incremental index", () => {
  const yaml = `apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: { name: ws, namespace: gloo-mesh }
spec: { workloadClusters: [{ name: c1, namespaces: [{ name: app }] }] }
---
apiVersion: resilience.policy.gloo.solo.io/v2
kind: RetryTimeoutPolicy
metadata: { name: p, namespace: app }
spec: { config: { requestTimeout: 1s } }
`;
  const discovery = discoveryFromYaml(`cluster: c1\nnamespaces: [{ name: app }]\n`);
  it("derives the next index from the previous one when workspaces are unchanged, and rebuilds it when they change", () => {
    const objects = objectsFromYaml(yaml);
    const first = { objects };
    const a = indexOf(first, discovery);
    const changed = { objects: [objects[0]!, ...objectsFromYaml(yaml.replace("1s", "2s")).slice(1)] };
    const b = indexOf(changed, discovery);
    expect(b).not.toBe(a);
    expect(b.structure).toBe(a.structure);
    expect(b.owner.get("RetryTimeoutPolicy//app/p")).toBe("ws");
    const other = indexOf(desiredFromYaml(yaml.replace("name: app }] }]", "name: 'ap*' }] }]")), discovery);
    expect(other.structure).not.toBe(a.structure);
    expect(other.owner.get("RetryTimeoutPolicy//app/p")).toBe("ws");
  });
});

describe("patchCluster", () => {
  const res = (kind: string, ns: string, name: string, v: number, ws = "a"): IstioResource =>
    canonicalObject({ apiVersion: "networking.istio.io/v1", kind, metadata: { labels: { "gitmesh.io/workspace": ws }, name, namespace: ns }, spec: { v } });
  const a1 = [res("DestinationRule", "n1", "x", 1), res("ServiceEntry", "n1", "a", 1), res("ServiceEntry", "n1-b", "a", 1), res("VirtualService", "n", "z", 1)];
  const b1 = [res("DestinationRule", "n2", "y", 1, "b"), res("ServiceEntry", "n1", "b", 1, "b")];

  it("equals a full assembly after changes, removals and additions", () => {
    const prev = assembleCluster("c", [{ workspace: "a", resources: a1 }, { workspace: "b", resources: b1 }]);
    const a2 = [res("DestinationRule", "n1", "x", 2), res("ServiceEntry", "n1", "0", 1), res("ServiceEntry", "n1-b", "a", 1), res("VirtualService", "n", "z", 1), res("WorkloadEntry", "n", "w", 1)];
    const patched = patchCluster(prev, [{ workspace: "a", before: a1, after: a2 }]);
    const full = assembleCluster("c", [{ workspace: "a", resources: a2 }, { workspace: "b", resources: b1 }]);
    expect(patched).toBeDefined();
    expect(JSON.stringify(patched!.resources)).toBe(JSON.stringify(full.resources));
    // and again from the patched output
    const a3 = a2.slice(1);
    const again = patchCluster(patched!, [{ workspace: "a", before: a2, after: a3 }]);
    expect(JSON.stringify(again!.resources)).toBe(JSON.stringify(assembleCluster("c", [{ workspace: "a", resources: a3 }, { workspace: "b", resources: b1 }]).resources));
  });

  it("declines when a changed key has another provider, so the caller re-assembles", () => {
    const prev = assembleCluster("c", [{ workspace: "a", resources: a1 }, { workspace: "b", resources: b1 }]);
    // a starts producing a key b already produces
    const clash = [...a1, res("ServiceEntry", "n1", "b", 9)];
    expect(patchCluster(prev, [{ workspace: "a", before: a1, after: clash }])).toBeUndefined();
    // an output with a conflict is never patched
    const conflicted = assembleCluster("c", [{ workspace: "a", resources: clash }, { workspace: "b", resources: b1 }]);
    expect(conflicted.diagnostics.length).toBe(1);
    expect(patchCluster(conflicted, [{ workspace: "a", before: clash, after: a1 }])).toBeUndefined();
    // an output not assembled here is never patched
    expect(patchCluster({ ...prev }, [{ workspace: "a", before: a1, after: a1.slice(1) }])).toBeUndefined();
  });
});
