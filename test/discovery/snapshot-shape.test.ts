/**
 * Normalised snapshots of one layout share one hidden class. V8 (Node 20) gives every object made by a
 * literal that starts with a spread (`{ ...a, b }`) a class of its own; normalizeSnapshot was written that
 * way, so the large fleet's 100 snapshots had 92 classes and every translator's `snapshot.services` was
 * megamorphic. Values are normalize.test.ts's concern.
 */
import { describe, expect, it } from "vitest";
import { discoveryFromFiles, normalizeSnapshot, type DiscoverySnapshot } from "../../src/discovery/index.js";
import { hiddenClasses as classes } from "../helpers/hidden-classes.js";

function snapshot(i: number): DiscoverySnapshot {
  return {
    cluster: `cluster-${i}`,
    gateways: [],
    istioObjects: [],
    localities: [{ region: "r1", zone: `z${i % 3}` }],
    meshes: [],
    namespaces: [{ name: `ns-${i}`, labels: { team: `t${i}` } }],
    services: [{ name: `svc-${i}`, namespace: `ns-${i}`, labels: {}, selector: { app: `svc-${i}` }, type: "ClusterIP", ports: [{ name: "http", port: 8080 + i, protocol: "TCP", targetPort: 8080 }] }],
    workloads: [],
  } as unknown as DiscoverySnapshot;
}

describe("normalised snapshots", () => {
  it("of one layout share one hidden class, whichever way they are normalised or read", () => {
    const raw = Array.from({ length: 30 }, (_, i) => snapshot(i));
    expect(classes(raw.map((s) => normalizeSnapshot(s, { owned: true })))).toBe(1);
    expect(classes(raw.map((s) => normalizeSnapshot(s)))).toBe(1);
    const files = raw.map((s) => ({ path: `${s.cluster}/snapshot.json`, content: JSON.stringify({ apiVersion: "gitmesh.io/v1alpha1", kind: "DiscoverySnapshot", ...s }) }));
    const { snapshots, diagnostics } = discoveryFromFiles(files);
    expect(diagnostics).toEqual([]);
    expect(snapshots.size).toBe(30);
    expect(classes([...snapshots.values()])).toBe(1);
  });
});
