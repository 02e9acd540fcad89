/**
 * The output objects the agent benchmarks apply: `count` VirtualServices and DestinationRules (half
 * each) spread over `namespaces` namespaces `ns-<i>`, labelled as the server labels them. Deterministic.
 */
import type { KubeObject, OutputVersion } from "../../src/agent/index.js";

export function outputObject(i: number, namespaces: number): KubeObject {
  const ns = `ns-${i % namespaces}`;
  return {
    apiVersion: "networking.istio.io/v1",
    kind: i % 2 === 0 ? "VirtualService" : "DestinationRule",
    metadata: { name: `out-${i}`, namespace: ns, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "bench" } },
    spec: i % 2 === 0 ? { hosts: [`svc-${i}.${ns}.svc.cluster.local`], http: [{ route: [{ destination: { host: `svc-${i}` } }], retries: { attempts: 3 } }] } : { host: `svc-${i}`, trafficPolicy: { tls: { mode: "ISTIO_MUTUAL" } } },
  };
}

export function outputObjects(count: number, namespaces: number): KubeObject[] {
  return Array.from({ length: count }, (_, i) => outputObject(i, namespaces));
}

const enc = new TextEncoder();

/** An output version (complete) of `objects`, keyed as the relay keys them. */
export function outputVersion(objects: readonly KubeObject[], version: number): OutputVersion {
  return {
    version,
    complete: true,
    sourceCommit: `c${String(version)}`,
    resources: new Map(objects.map((o) => [`${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`, enc.encode(JSON.stringify(o))])),
  };
}
