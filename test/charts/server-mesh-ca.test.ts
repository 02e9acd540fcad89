/**
 * charts/gitmesh-server `meshCa`: the server may read exactly the mgmtServerCa.secretRef Secrets listed
 * (a Role per namespace, get by name), and create its generated mesh root only when allowed.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { helmBinary, render, renderOk } from "./helm.js";
import { envOf, find, grant, grantsOf, podSpec, validateAll } from "./checks.js";

const BASE = ["--name", "gitmesh-server", "--namespace", "gitmesh", "--set", "git.url=https://git.example.com/acme/mesh-config.git"];
const SA = { name: "gitmesh-server", namespace: "gitmesh" };

// The real helm (tools/helm): missing, every test here fails with the command that builds it.
beforeAll(() => {
  helmBinary();
});

describe("gitmesh-server chart: mesh CA", () => {
  it("secretRefs: get on exactly the listed Secrets, in their namespaces (default gloo-mesh); nothing else outside its namespace", async () => {
    const { manifests } = await renderOk("gitmesh-server", [
      ...BASE,
      "--set", "meshCa.secretRefs[0].name=mesh-root-2026",
      "--set", "meshCa.secretRefs[1].name=mesh-root-2027",
      "--set", "meshCa.secretRefs[2].name=corp-root", "--set", "meshCa.secretRefs[2].namespace=security",
      "--set", "meshCa.rootSecret=my-mesh-root",
    ]);
    validateAll(manifests);
    const outside = [...grantsOf(manifests, SA)].filter((g) => !g.startsWith("ns:gitmesh ")).sort();
    expect(outside).toEqual([grant("ns:gloo-mesh", "", "secrets", "get", "mesh-root-2026"), grant("ns:gloo-mesh", "", "secrets", "get", "mesh-root-2027"), grant("ns:security", "", "secrets", "get", "corp-root")].sort());
    expect(grantsOf(manifests, SA).has(grant("ns:gitmesh", "", "secrets", "get", "my-mesh-root"))).toBe(true);
    expect(envOf(podSpec(find(manifests, "Deployment", "gitmesh-server")).containers[0]!).GITMESH_MESH_ROOT_SECRET).toBe("my-mesh-root");
  });

  it("a brought-in PKI and mesh root: nothing created but the clusters' identity records", async () => {
    const { manifests } = await renderOk("gitmesh-server", [...BASE, "--set", "relay.tls.existingSecrets=true", "--set", "meshCa.generateRoot=false"]);
    // Per-cluster identity records (relay-identity-<cluster>, src/relay/identity.ts) are Secrets the
    // server creates by compare-and-swap; RBAC has no name prefixes, so that grant is namespace-wide.
    // No other create: not the relay PKI, not the mesh root.
    expect([...grantsOf(manifests, SA)].filter((g) => g.includes(" create "))).toEqual([grant("ns:gitmesh", "", "secrets", "create")]);
  });

  it("rejects a secretRef without a name", async () => {
    const r = await render("gitmesh-server", [...BASE, "--set", "meshCa.secretRefs[0].namespace=gloo-mesh"]);
    expect(r.code).not.toBe(0);
  });
});
