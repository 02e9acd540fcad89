// Shared set-up of the agent tests: the emulator seeded with an example cluster, output builders.
import { readFile } from "node:fs/promises";
import { parseAllDocuments } from "yaml";
import { Registry } from "prom-client";
import { createMemoryLogger } from "../../src/core/index.js";
import { createAgentMetrics, createKubeClient, withFieldOwner, type KubeObject, type KubeReader, type OutputVersion } from "../../src/agent/index.js";
import type { StartedKube } from "../helpers/kube.js";

const SERVED = new Set(["v1/Namespace", "v1/Node", "v1/Service", "v1/Pod", "v1/ConfigMap", "apps/v1/Deployment", "apps/v1/StatefulSet", "apps/v1/DaemonSet", "networking.istio.io/v1/DestinationRule", "networking.istio.io/v1/Gateway", "networking.istio.io/v1/VirtualService", "networking.istio.io/v1/ServiceEntry"]);

/** The objects of examples/discovery/<cluster> the emulator serves (List items flattened). */
export async function exampleObjects(cluster: string): Promise<Record<string, unknown>[]> {
  const files = ["namespaces-and-nodes.yaml", "istio-system.yaml", "istio-gateways.yaml", "bookinfo.yaml", "gloo-mesh.yaml"];
  const out: Record<string, unknown>[] = [];
  for (const f of files) {
    for (const doc of parseAllDocuments(await readFile(new URL(`../../examples/discovery/${cluster}/${f}`, import.meta.url), "utf8"))) {
      const o = doc.toJS() as Record<string, unknown> | null;
      if (!o) continue;
      const items = o.kind === "List" ? (o.items as Record<string, unknown>[]) : [o];
      for (const i of items) if (SERVED.has(`${String(i.apiVersion)}/${String(i.kind)}`)) out.push(i);
    }
  }
  return out;
}

/**
 * What a cluster holds before its agent first starts: examples/discovery/<cluster>, the gitmesh and
 * bookinfo namespaces, and the relay secrets the chart would create (root CA, bootstrap token).
 */
export async function agentClusterSeed(cluster: string, relay: { rootCaPem: string; token: string }): Promise<Record<string, unknown>[]> {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  return [
    ...(await exampleObjects(cluster)),
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "bookinfo" } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-root-tls-secret", namespace: "gitmesh" }, data: { "ca.crt": b64(relay.rootCaPem) } },
    { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: "gitmesh" }, data: { token: b64(relay.token) } },
  ];
}

/** Every object of the kinds discovery reads, straight from the emulator's state (no HTTP). */
export function emulatorObjects(kube: StartedKube, istioNamespace = "istio-system"): Record<string, unknown>[] {
  const e = kube.emulator;
  const withKind = (apiVersion: string, kind: string, ns?: string) => e.list(apiVersion, kind, ns).map((o) => ({ ...o, apiVersion, kind }));
  return [
    ...withKind("v1", "Namespace"),
    ...withKind("v1", "Node"),
    ...withKind("v1", "Service"),
    ...withKind("apps/v1", "Deployment"),
    ...withKind("apps/v1", "StatefulSet"),
    ...withKind("apps/v1", "DaemonSet"),
    ...withKind("v1", "Pod"),
    ...withKind("v1", "ConfigMap", istioNamespace),
    ...["Gateway", "ServiceEntry", "WorkloadEntry", "DestinationRule", "Sidecar", "VirtualService"].flatMap((k) => withKind("networking.istio.io/v1", k)),
    ...["PeerAuthentication", "AuthorizationPolicy"].flatMap((k) => withKind("security.istio.io/v1", k)),
  ];
}

export function parts(kube: StartedKube, name = "agent") {
  const mem = createMemoryLogger(name);
  const registry = new Registry();
  const metrics = createAgentMetrics(registry);
  const client = createKubeClient(kube.newKubeConfig());
  return { mem, logger: mem.logger, registry, metrics, client, writer: withFieldOwner(client) };
}

const enc = new TextEncoder();

export function vs(name: string, ns: string, host: string, cluster = "cluster1"): KubeObject {
  return {
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    metadata: { name, namespace: ns, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
    spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
  };
}

export function dr(name: string, ns: string, host: string, cluster = "cluster1"): KubeObject {
  return {
    apiVersion: "networking.istio.io/v1",
    kind: "DestinationRule",
    metadata: { name, namespace: ns, labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster } },
    spec: { host, trafficPolicy: { tls: { mode: "ISTIO_MUTUAL" } } },
  };
}

export function output(version: number, objects: readonly KubeObject[], opts: { complete?: boolean; extra?: Record<string, unknown> } = {}): OutputVersion {
  const resources = new Map<string, Uint8Array>();
  for (const o of objects) resources.set(`${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`, enc.encode(JSON.stringify(o)));
  for (const [k, v] of Object.entries(opts.extra ?? {})) resources.set(k, enc.encode(JSON.stringify(v)));
  return { version, complete: opts.complete ?? true, sourceCommit: `commit-${version}`, resources };
}

export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const values = (m?.values ?? []) as { value: number; labels: Record<string, string | number> }[];
  return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((a, v) => a + v.value, 0);
}

/**
 * A reader that runs `race` (another actor's writes) right after the first list of `kind` through
 * it: the race between the agent's list and its write, made deterministic.
 */
export function racingReader(reader: KubeReader, race: () => Promise<void> | void, kind = "VirtualService"): KubeReader {
  let armed = true;
  return {
    get: reader.get.bind(reader),
    list: async (ref, o) => {
      const res = await reader.list(ref, o);
      if (armed && ref.kind === kind) {
        armed = false;
        await race();
      }
      return res;
    },
  };
}
