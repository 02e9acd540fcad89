/**
 * `helm lint --strict` (the real helm, tools/helm) of both charts over the values the chart tests
 * render: the chart metadata, every template rendered and parsed as YAML, the values schema, and —
 * with --strict — no warning at all. A chart that only renders is not enough: lint is what `helm
 * package`/chart repositories and most CI pipelines run.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { helmBinary, lint } from "./helm.js";

let tmp = "";
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "gitmesh-chart-lint-"));
  helmBinary();
});
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

function valuesFile(name: string, text: string): string {
  const file = join(tmp, name);
  writeFileSync(file, text);
  return file;
}

const AGENT = ["--namespace", "gitmesh", "--set", "relay.serverAddress=mgmt.example.com:9900", "--set", "relay.cluster=cluster1"];
const SERVER = ["--namespace", "gitmesh", "--set", "git.url=https://git.example.com/acme/mesh-config.git"];

/** The values sets of test/charts/*.test.ts, one lint each. */
const AGENT_MATRIX: [string, string[]][] = [
  ["required values", AGENT],
  [
    "representative (replicas, selectors, secret names, Istio namespace, no cacerts)",
    [
      "--namespace", "mesh-agent", "--set", "relay.serverAddress=mgmt.example.com:9900", "--set", "relay.cluster=cluster1",
      "--set", "replicas=3", "--set", "relay.authority=gitmesh.mgmt.internal",
      "--set", "relay.rootTlsSecret=my-root,relay.tokenSecret=my-token,relay.clientTlsSecret=my-client",
      "--set", "istio.namespace=istio-1-29,istio.writeCacerts=false",
      "--set", "discovery.selectors[0].matchLabels.istio-injection=enabled",
      "--set", "discovery.selectors[1].matchExpressions[0].key=team",
      "--set", "discovery.selectors[1].matchExpressions[0].operator=In",
      "--set", "discovery.selectors[1].matchExpressions[0].values={payments,checkout}",
      "--set", "leaderElection.leaseName=agent-leader", "--set", "image.tag=1.2.3",
    ],
  ],
  ["lifecycle.enabled with a gateway namespace", [...AGENT, "--set", "lifecycle.enabled=true", "--set", "lifecycle.gatewayNamespaces={istio-ingress}"]],
  ["rateLimit.configNamespaces", [...AGENT, "--set", "rateLimit.configNamespaces={gloo-mesh-addons,rate-limit}"]],
  ["istio.autoRestartPods", [...AGENT, "--set", "istio.autoRestartPods=true"]],
  ["inventory, Lease and log level renamed", [...AGENT, "--set", "inventory.configMapName=agent-owned,leaderElection.leaseName=agent-leader,logLevel=debug"]],
];

const SERVER_MATRIX: [string, string[]][] = [
  ["required values", SERVER],
  [
    "representative (external Redis, existing secrets, replicas, Git credentials, HTTPS)",
    [
      ...SERVER, "--set", "replicas=3",
      "--set", "redis.bundled.enabled=false,redis.external.existingSecret=redis-conn,redis.external.existingSecretKey=address",
      "--set", "relay.tls.existingSecrets=true,relay.token.existingSecret=true",
      "--set", "api.tokens.existingSecret=true,api.tokens.secretName=ops-api-tokens",
      "--set", "http.tls.secretName=gitmesh-http-tls", "--set", "webhook.existingSecret=github-hook",
      "--set", "git.credentials.existingSecret=git-creds,git.branch=prod,git.path=mesh",
      "--set", "relay.service.type=NodePort,relay.additionalSans={relay.example.com,10.0.0.5}",
    ],
  ],
  ["api.auth.enabled=false", [...SERVER, "--set", "api.auth.enabled=false"]],
  ["commitStatus", [...SERVER, "--set", "commitStatus.platform=github,commitStatus.repository=acme/mesh-config,commitStatus.tokenSecret=gh-status-token"]],
  ["external Redis by URL, inline Git credentials", [...SERVER, "--set", "redis.bundled.enabled=false,redis.external.url=rediss://:pw@redis.internal:6380/0,redis.prefix=team-a", "--set", "git.credentials.username=bot,git.credentials.password=s3cret-token"]],
  ["no Redis, one replica", [...SERVER, "--set", "redis.bundled.enabled=false"]],
  ["relay.bootstrap=fleet-token", [...SERVER, "--set", "relay.bootstrap=fleet-token"]],
  ["meshCa secretRefs", [...SERVER, "--set", "meshCa.secretRefs[0].name=mesh-root-2026", "--set", "meshCa.secretRefs[1].name=corp-root", "--set", "meshCa.secretRefs[1].namespace=security", "--set", "meshCa.rootSecret=my-mesh-root"]],
  ["workers", [...SERVER, "--set", "workers.enabled=true"]],
  ["workers with HPA autoscaling", [...SERVER, "--set", "workers.enabled=true,workers.autoscaling.enabled=true"]],
];

describe("helm lint --strict", () => {
  it.each(AGENT_MATRIX)("gitmesh-agent: %s", async (_name, args) => {
    const r = await lint("gitmesh-agent", args);
    expect(r.stdout + r.stderr, "helm lint output").toContain("1 chart(s) linted, 0 chart(s) failed");
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it.each(SERVER_MATRIX)("gitmesh-server: %s", async (_name, args) => {
    const r = await lint("gitmesh-server", args);
    expect(r.stdout + r.stderr, "helm lint output").toContain("1 chart(s) linted, 0 chart(s) failed");
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it("gitmesh-server: workers autoscaled by KEDA from a values file (redis list triggers)", async () => {
    const file = valuesFile(
      "keda.yaml",
      [
        "workers:",
        "  enabled: true",
        "  autoscaling:",
        "    enabled: true",
        "    keda:",
        "      enabled: true",
        "      triggers:",
        "        - type: redis",
        "          metadata: {address: 'gitmesh-server-redis.gitmesh.svc:6379', listName: 'gitmesh:bull:workspace:wait', listLength: '8'}",
        "",
      ].join("\n"),
    );
    const r = await lint("gitmesh-server", [...SERVER, "-f", file]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it("fails on a value the schema refuses, naming it", async () => {
    const bad = await lint("gitmesh-server", [...SERVER, "--set", "replicas=two"]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain("[ERROR] values.yaml: - at '/replicas': got string, want integer");
    expect(bad.stderr).toContain("1 chart(s) linted, 1 chart(s) failed");
  });

  it("reports a missing `required` value without failing (Helm's lint mode): rendering is what refuses it", async () => {
    // helm lint renders in lint mode, where `required` only logs; the charts' own values.yaml
    // leaves the agent's relay address and cluster empty. `helm template`/`install` refuse them
    // (agent-chart.test.ts), so a lint pass alone never proves the required values are given.
    const bare = await lint("gitmesh-agent");
    expect(bare.code).toBe(0);
    expect(bare.stderr).toContain("Missing required value: relay.serverAddress is required");
    expect(bare.stderr).toContain("Missing required value: relay.cluster is required");
  });
});
