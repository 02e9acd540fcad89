/**
 * charts/gitmesh-agent `istio.autoRestartPods`: the agent may patch (restart) Deployments,
 * StatefulSets and DaemonSets only when the value is on, and is told so (GITMESH_AUTO_RESTART_PODS);
 * off (the default), it can restart nothing.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { helmBinary, renderOk } from "./helm.js";
import { envOf, find, grant, grantsOf, podSpec, validateAll } from "./checks.js";

const BASE = ["--name", "gitmesh-agent", "--namespace", "gitmesh", "--set", "relay.serverAddress=mgmt.example.com:9900", "--set", "relay.cluster=cluster1"];
const SA = { name: "gitmesh-agent", namespace: "gitmesh" };
const PATCHES = ["deployments", "statefulsets", "daemonsets"].map((r) => grant("cluster", "apps", r, "patch"));

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

  it("on: patch on apps deployments/statefulsets/daemonsets cluster-wide (nothing else added), and the agent is told", async () => {
    const off = grantsOf((await renderOk("gitmesh-agent", BASE)).manifests, SA);
    const { manifests } = await renderOk("gitmesh-agent", [...BASE, "--set", "istio.autoRestartPods=true"]);
    validateAll(manifests);
    const on = grantsOf(manifests, SA);
    expect([...on].filter((g) => !off.has(g)).sort()).toEqual([...PATCHES].sort());
    expect(envOf(podSpec(find(manifests, "Deployment", "gitmesh-agent")).containers[0]!).GITMESH_AUTO_RESTART_PODS).toBe("true");
  });

  it("without writeCacerts there is nothing to restart for: no grant", async () => {
    const { manifests } = await renderOk("gitmesh-agent", [...BASE, "--set", "istio.autoRestartPods=true", "--set", "istio.writeCacerts=false"]);
    const grants = grantsOf(manifests, SA);
    for (const g of PATCHES) expect(grants.has(g), g).toBe(false);
  });
});
