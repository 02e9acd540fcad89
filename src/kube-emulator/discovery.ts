/** Discovery documents (`/api`, `/apis`, `/apis/<g>/<v>`, `/version`) built from the kind registry. */
import { DEFAULT_VERBS, apiVersionOf, singularOf, type KindRegistry } from "./kinds.js";
import type { JsonObject } from "./patch.js";
import { hasScale } from "./scale.js";

export const EMULATED_VERSION = { major: "1", minor: "31", gitVersion: "v1.31.0-gitmesh-emulator" } as const;

export function versionInfo(): JsonObject {
  return {
    major: EMULATED_VERSION.major,
    minor: EMULATED_VERSION.minor,
    gitVersion: EMULATED_VERSION.gitVersion,
    gitCommit: "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: "2026-01-01T00:00:00Z",
    goVersion: "go1.22.0",
    compiler: "gc",
    platform: "linux/amd64",
  };
}

export function coreVersions(serverAddress: string): JsonObject {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

function groupDoc(group: string, versions: readonly string[]): JsonObject {
  const gvs = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { name: group, versions: gvs, preferredVersion: gvs[0]! };
}

export function groupList(kinds: KindRegistry): JsonObject {
  const groups = [...kinds.groups()].filter(([g]) => g !== "").map(([g, vs]) => groupDoc(g, vs));
  return { kind: "APIGroupList", apiVersion: "v1", groups };
}

export function group(kinds: KindRegistry, name: string): JsonObject | undefined {
  const vs = kinds.groups().get(name);
  if (name === "" || vs === undefined) return undefined;
  return { kind: "APIGroup", apiVersion: "v1", ...groupDoc(name, vs) };
}

export function resourceList(kinds: KindRegistry, group: string, version: string): JsonObject | undefined {
  const ks = kinds.inGroupVersion(group, version);
  if (ks.length === 0) return undefined;
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: apiVersionOf({ group, version }),
    resources: ks
      .sort((a, b) => a.plural.localeCompare(b.plural))
      .flatMap((k) => [
        {
          name: k.plural,
          singularName: singularOf(k),
          namespaced: k.namespaced,
          kind: k.kind,
          verbs: [...DEFAULT_VERBS],
          ...(k.shortNames !== undefined && k.shortNames.length > 0 ? { shortNames: [...k.shortNames] } : {}),
          ...(k.categories !== undefined && k.categories.length > 0 ? { categories: [...k.categories] } : {}),
          storageVersionHash: Buffer.from(`${k.group}/${k.version}/${k.kind}`).toString("base64").slice(0, 11),
        },
        ...(k.statusSubresource === true ? [{ name: `${k.plural}/status`, singularName: "", namespaced: k.namespaced, kind: k.kind, verbs: ["get", "patch", "update"] }] : []),
        ...(hasScale(k) ? [{ name: `${k.plural}/scale`, singularName: "", namespaced: k.namespaced, group: "autoscaling", version: "v1", kind: "Scale", verbs: ["get", "patch", "update"] }] : []),
      ]),
  };
}
