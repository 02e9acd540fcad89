// TrimProxyConfigPolicy (issue #15): what the rendered Sidecars do — Istio applies one Sidecar per
// workload, so no workload may be selected by two; the trimmed workload sees exactly what the policy
// includes (and the control plane).
import { describe, expect, it } from "vitest";
import { loadCase, runCase } from "./golden.js";

describe("TrimProxyConfigPolicy", () => {
  const c = loadCase("trim-proxy-config");
  const sidecars = (runCase(c).result.clusters.get("cluster1")?.resources ?? []).filter((r) => r.kind === "Sidecar");
  const workloads = c.discovery.get("cluster1")!.workloads;
  const selecting = (labels: Record<string, string>, ns: string) =>
    sidecars.filter((s) => s.metadata.namespace === ns && Object.entries((s.spec.workloadSelector as { labels: Record<string, string> }).labels).every(([k, v]) => labels[k] === v));

  it("every workload is selected by at most one Sidecar", () => {
    for (const w of workloads) expect(selecting(w.podLabels, w.namespace).length, `${w.namespace}/${w.name}`).toBeLessThanOrEqual(1);
  });

  it("the trimmed workload sees the included destinations and the control plane, nothing else", () => {
    const productpage = workloads.find((w) => w.name === "productpage-v1")!;
    const [sidecar] = selecting(productpage.podLabels, productpage.namespace);
    expect((sidecar!.spec.egress as { hosts: string[] }[])[0]!.hosts).toEqual(["*/httpbin.org", "*/reviews.bookinfo-backends.svc.cluster.local", "istio-system/*"]);
    // The workspace-wide trimming still covers the others (reviews: the second policy includes nothing).
    const reviews = workloads.find((w) => w.name === "reviews-v1")!;
    expect((selecting(reviews.podLabels, reviews.namespace)[0]!.spec.egress as { hosts: string[] }[])[0]!.hosts).toContain("bookinfo-frontends/*");
  });
});
