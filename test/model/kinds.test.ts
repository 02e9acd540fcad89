import { readdirSync, readFileSync } from "node:fs";
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

  it("the schema set covers exactly SUPPORTED_KINDS (plus common and the discovery snapshot)", () => {
    const dir = new URL("../../schemas/", import.meta.url);
    const files = readdirSync(dir).filter((f) => f.endsWith(".schema.json"));
    const kindFiles = new Set(SUPPORTED_KINDS.map((k) => k.schemaFile));
    expect(files.filter((f) => !kindFiles.has(f)).sort()).toEqual(["common.schema.json", "discovery-snapshot.schema.json"]);
    expect(SUPPORTED_KINDS.filter((k) => !files.includes(k.schemaFile))).toEqual([]);
    for (const k of SUPPORTED_KINDS) {
      const schema = JSON.parse(readFileSync(new URL(k.schemaFile, dir), "utf8"));
      expect(schema.title, k.schemaFile).toBe(k.kind);
      expect(schema.properties.apiVersion.enum, k.schemaFile).toEqual([k.apiVersion]);
      expect(schema.properties.kind.enum, k.schemaFile).toEqual([k.kind]);
      expect(schema.properties.metadata.$ref, k.schemaFile).toBe("common.schema.json#/$defs/ObjectMeta");
      expect(schema.additionalProperties, k.schemaFile).toBe(false);
      expect(schema.$defs[`${k.kind}Spec`].additionalProperties, k.schemaFile).toBe(false);
    }
  });

  it("the 30 kinds of the Gloo v2 groups gitmesh supports", () => {
    expect(SUPPORTED_KINDS.map((k) => k.kind)).toEqual([
      "Workspace", "WorkspaceSettings", "KubernetesCluster", "RootTrustPolicy", "IstioLifecycleManager", "GatewayLifecycleManager", "RateLimitServerConfig", "RateLimitServerSettings", "ExtAuthServer",
      "VirtualDestination", "RouteTable", "VirtualGateway", "ExternalService", "ExternalEndpoint",
      "RetryTimeoutPolicy", "FaultInjectionPolicy", "FailoverPolicy", "OutlierDetectionPolicy", "ConnectionPolicy", "TrimProxyConfigPolicy",
      "AccessPolicy", "CORSPolicy", "JWTPolicy", "CSRFPolicy", "ExtAuthPolicy",
      "HeaderManipulationPolicy", "MirrorPolicy", "LoadBalancerPolicy", "RateLimitPolicy", "RateLimitClientConfig",
    ]);
    expect(SUPPORTED_KINDS.filter((k) => k.adminScoped).map((k) => k.kind)).toEqual(["Workspace", "WorkspaceSettings", "KubernetesCluster", "RootTrustPolicy", "IstioLifecycleManager", "GatewayLifecycleManager", "RateLimitServerConfig", "RateLimitServerSettings", "ExtAuthServer"]);
  });

  it("every object type in every schema rejects unknown fields", () => {
    const dir = new URL("../../schemas/", import.meta.url);
    const open: string[] = [];
    const walk = (node: unknown, where: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${where}/${String(i)}`));
      if (typeof node !== "object" || node === null) return;
      const o = node as Record<string, unknown>;
      if (o.properties !== undefined && o.additionalProperties !== false) open.push(where);
      for (const [k, v] of Object.entries(o)) walk(v, `${where}/${k}`);
    };
    for (const f of readdirSync(dir).filter((x) => x.endsWith(".schema.json") && x !== "discovery-snapshot.schema.json")) {
      walk(JSON.parse(readFileSync(new URL(f, dir), "utf8")), f);
    }
    expect(open).toEqual([]);
  });
});
