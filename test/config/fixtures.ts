/** Small, schema-valid configuration documents for loader tests, written as YAML text. */
import { stringify } from "yaml";
import type { Diagnostic } from "../../src/core/index.js";
import type { SourceFile } from "../../src/config/index.js";

export interface ObjOptions {
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

export function yamlDoc(apiVersion: string, kind: string, name: string, namespace: string, spec: unknown, opts: ObjOptions = {}): string {
  const metadata: Record<string, unknown> = { name, namespace };
  if (opts.labels) metadata.labels = opts.labels;
  if (opts.annotations) metadata.annotations = opts.annotations;
  return stringify({ apiVersion, kind, metadata, spec });
}

export function docs(...list: string[]): string {
  return list.join("---\n");
}

export const workspace = (name: string, namespaces: readonly string[], cluster = "*"): string =>
  yamlDoc("admin.gloo.solo.io/v2", "Workspace", name, "gloo-mesh", {
    workloadClusters: [{ name: cluster, namespaces: namespaces.map((n) => ({ name: n })) }],
  });

export const workspaceSettings = (name: string, namespace: string): string =>
  yamlDoc("admin.gloo.solo.io/v2", "WorkspaceSettings", name, namespace, {
    exportTo: [{ workspaces: [{ name: "*" }] }],
  });

export const virtualGateway = (name: string, namespace: string): string =>
  yamlDoc("networking.gloo.solo.io/v2", "VirtualGateway", name, namespace, {
    workloads: [{ selector: { labels: { istio: "ingressgateway" } } }],
    listeners: [{ http: {}, port: { number: 80 }, allowedRouteTables: [{ host: "*" }] }],
  });

export const routeTable = (name: string, namespace: string, spec: Record<string, unknown>, opts: ObjOptions = {}): string =>
  yamlDoc("networking.gloo.solo.io/v2", "RouteTable", name, namespace, spec, opts);

export const virtualDestination = (name: string, namespace: string): string =>
  yamlDoc("networking.gloo.solo.io/v2", "VirtualDestination", name, namespace, {
    hosts: [`${name}.global`],
    services: [{ labels: { app: name } }],
    ports: [{ number: 9080, protocol: "HTTP" }],
  });

export const externalService = (name: string, namespace: string): string =>
  yamlDoc("networking.gloo.solo.io/v2", "ExternalService", name, namespace, {
    hosts: [`${name}.example.com`],
    ports: [{ name: "https", number: 443, protocol: "HTTPS", clientsideTls: {} }],
  });

export const retryPolicy = (name: string, namespace: string, extra: Record<string, unknown> = {}): string =>
  yamlDoc("resilience.policy.gloo.solo.io/v2", "RetryTimeoutPolicy", name, namespace, {
    applyToRoutes: [{ route: { labels: { route: name } } }],
    config: { requestTimeout: "2s", retries: { attempts: 3, perTryTimeout: "1s" } },
    ...extra,
  });

export const kubernetesCluster = (name: string, labels: Record<string, string> = {}): string =>
  yamlDoc("admin.gloo.solo.io/v2", "KubernetesCluster", name, "gloo-mesh", { clusterDomain: "cluster.local" }, { labels });

export function file(path: string, content: string): SourceFile {
  return { path, content };
}

/** A small, valid repository: one workspace with a gateway, a route table and a policy. */
export function baseRepo(): SourceFile[] {
  return [
    file("clusters/cluster1.yaml", kubernetesCluster("cluster1")),
    file("workspaces/web/workspace.yaml", docs(workspace("web", ["web", "web-gw"]), workspaceSettings("web", "web"))),
    file("workspaces/web/gateway.yaml", virtualGateway("north", "web-gw")),
    file(
      "workspaces/web/routes.yaml",
      routeTable("frontend", "web", {
        hosts: ["www.example.com"],
        virtualGateways: [{ name: "north", namespace: "web-gw" }],
        http: [{ name: "main", labels: { route: "main" }, forwardTo: { destinations: [{ ref: { name: "frontend", namespace: "web" }, port: { number: 8080 } }] } }],
      }),
    ),
    file("workspaces/web/policies.yaml", retryPolicy("main", "web")),
  ];
}

export function codes(list: readonly Diagnostic[]): string[] {
  return list.map((d) => d.code);
}

/** `file:line:col code` strings, for compact assertions. */
export function where(list: readonly Diagnostic[]): string[] {
  return list.map((d) => `${d.file ?? ""}:${d.line ?? 0}:${d.column ?? 0} ${d.code}`);
}
