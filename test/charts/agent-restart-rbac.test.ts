/**
 * charts/gitmesh-agent `istio.autoRestartPods`: the agent may patch (restart) Deployments,
 * StatefulSets and DaemonSets only when the value is on, only in `istio.restartNamespaces` and istiod
 * by name (`istio.istiodDeployments`), and is told so (GITMESH_AUTO_RESTART_PODS,
 * GITMESH_RESTART_NAMESPACES); off (the default), it can restart nothing. What the real API server
 * makes of it: agent-privilege-real-kube.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { helmBinary, renderOk } from "./helm.js";
import { envOf, find, grant, grantsOf, podSpec, validateAll } from "./checks.js";

const BASE = ["--name", "gitmesh-agent", "--namespace", "gitmesh", "--set", "relay.serverAddress=mgmt.example.com:9900", "--set", "relay.cluster=cluster1"];
const SA = { name: "gitmesh-agent", namespace: "gitmesh" };
const PATCHES = ["deployments", "statefulsets", "daemonsets"].map((r) => grant("cluster", "apps", r, "patch"));
const ISTIOD = grant("ns:istio-system", "apps", "deployments", "patch", "istiod");
const IN_BOOKINFO = ["deployments", "statefulsets", "daemonsets"].map((r) => grant("ns:bookinfo", "apps", r, "patch"));

// The real helm (tools/helm): missing, every test here fails with the command that builds it.
beforeAll(() => {
  helmBinary();
});

describe("agent chart: autoRestartPods", () => {
  it("off by default: no patch on workloads, no restart flag", async () => {
    const { manifests } = await renderOk("gitmesh-agent", BASE);
    const grants = grantsOf(manifests, SA);
    for (const g of PATCHES) expect(grants.has(g), g).toBe(false);
    expect(envOf(podSpec(find(manifests, "Deployment", "gitmesh-agent")).containers[0]!)).not.toHaveProperty("GITMESH_AUTO_RESTART_PODS");
  });

  it("on: patch (only) on istiod by name and on the workloads of istio.restartNamespaces, nothing cluster-wide; the agent is told the list", async () => {
    const off = grantsOf((await renderOk("gitmesh-agent", BASE)).manifests, SA);
    const { manifests } = await renderOk("gitmesh-agent", [...BASE, "--set", "istio.autoRestartPods=true", "--set", "istio.restartNamespaces={bookinfo}"]);
    validateAll(manifests);
    const on = grantsOf(manifests, SA);
    expect([...on].filter((g) => !off.has(g)).sort()).toEqual([ISTIOD, ...IN_BOOKINFO].sort());
    for (const g of PATCHES) expect(on.has(g), g).toBe(false);
    const env = envOf(podSpec(find(manifests, "Deployment", "gitmesh-agent")).containers[0]!);
    expect(env.GITMESH_AUTO_RESTART_PODS).toBe("true");
    expect(env.GITMESH_RESTART_NAMESPACES).toBe("bookinfo");
    // no namespace listed: istiod only (istio.istiodDeployments names a revisioned one)
    const istiodOnly = grantsOf((await renderOk("gitmesh-agent", [...BASE, "--set", "istio.autoRestartPods=true", "--set", "istio.istiodDeployments={istiod-1-29}"])).manifests, SA);
    expect([...istiodOnly].filter((g) => !off.has(g))).toEqual([grant("ns:istio-system", "apps", "deployments", "patch", "istiod-1-29")]);
  });

  it("without writeCacerts there is nothing to restart for: no grant", async () => {
    const { manifests } = await renderOk("gitmesh-agent", [...BASE, "--set", "istio.autoRestartPods=true", "--set", "istio.writeCacerts=false"]);
    const grants = grantsOf(manifests, SA);
    for (const g of [...PATCHES, ISTIOD, ...IN_BOOKINFO]) expect(grants.has(g), g).toBe(false);
  });
});
