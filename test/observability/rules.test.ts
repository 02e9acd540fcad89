// The alerting rules and monitoring templates the charts ship (#37): rendered by the real helm,
// checked by Debian's promtool (`check rules`), and for every alert a `promtool test rules` case
// that fires and one that does not. The Pod/ServiceMonitor and dashboard templates render behind
// their values, and the dashboard ConfigMap carries the chart's file byte for byte.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lint, render, renderOk } from "../charts/helm.js";
import { useTempDirs } from "../helpers/tmp.js";
import { dashboardJson, promtool, renderedRules, REQUIRED_VALUES, writeYaml, type RuleGroups } from "./prometheus-tools.js";

const tmp = useTempDirs("gitmesh-rules-");

interface Series { readonly series: string; readonly values: string }
/** One alert's two cases: input series that make it fire (with the labels it fires with) and series that do not. */
interface AlertCases {
  readonly fire: { readonly series: readonly Series[]; readonly at: string; readonly labels: readonly Record<string, string>[] };
  readonly quiet: { readonly series: readonly Series[]; readonly at: string };
}

const SERVER_ALERTS: Record<string, AlertCases> = {
  GitmeshCommitRejected: {
    fire: { series: [{ series: 'gitmesh_server_commit_rejected{instance="a"}', values: "1x10" }], at: "5m", labels: [{}] },
    quiet: { series: [{ series: 'gitmesh_server_commit_rejected{instance="a"}', values: "0x10" }], at: "5m" },
  },
  GitmeshClusterNotApplied: {
    // both replicas see cluster1 not applied for 15 minutes
    fire: {
      series: [
        { series: 'gitmesh_server_cluster_sync{instance="a",cluster="cluster1",state="not-applied"}', values: "1x20" },
        { series: 'gitmesh_server_cluster_sync{instance="a",cluster="cluster1",state="refused"}', values: "0x20" },
        { series: 'gitmesh_server_cluster_sync{instance="b",cluster="cluster1",state="refused"}', values: "1x20" },
      ],
      at: "15m",
      labels: [{ cluster: "cluster1" }],
    },
    // replica b holds the agent and saw it apply: the other replica's "not applied" does not count
    quiet: {
      series: [
        { series: 'gitmesh_server_cluster_sync{instance="a",cluster="cluster1",state="not-applied"}', values: "1x20" },
        { series: 'gitmesh_server_cluster_sync{instance="b",cluster="cluster1",state="not-applied"}', values: "0x20" },
        { series: 'gitmesh_server_cluster_sync{instance="b",cluster="cluster1",state="in-sync"}', values: "1x20" },
      ],
      at: "15m",
    },
  },
  GitmeshClusterSuspended: {
    // suspended for 25 hours (on both replicas)
    fire: {
      series: [
        { series: 'gitmesh_server_cluster_sync{instance="a",cluster="cluster3",state="suspended"}', values: "1x1500" },
        { series: 'gitmesh_server_cluster_sync{instance="b",cluster="cluster3",state="suspended"}', values: "1x1500" },
      ],
      at: "25h",
      labels: [{ cluster: "cluster3" }],
    },
    // suspended for two hours during an incident, then resumed: no reminder
    quiet: {
      series: [
        { series: 'gitmesh_server_cluster_sync{instance="a",cluster="cluster3",state="suspended"}', values: "1x120 0x1380" },
        { series: 'gitmesh_server_cluster_sync{instance="a",cluster="cluster3",state="in-sync"}', values: "0x120 1x1380" },
      ],
      at: "25h",
    },
  },
  GitmeshRelayDisconnected: {
    fire: {
      series: [
        { series: 'gitmesh_relay_pull_clients_connected{instance="a",cluster="cluster2"}', values: "0x20" },
        { series: 'gitmesh_server_cluster_sync{instance="a",cluster="cluster2",state="cut-off"}', values: "0x20" },
      ],
      at: "10m",
      labels: [{ cluster: "cluster2" }],
    },
    // removed from Git (cut off): its streams are meant to be closed
    quiet: {
      series: [
        { series: 'gitmesh_relay_pull_clients_connected{instance="a",cluster="cluster2"}', values: "0x20" },
        { series: 'gitmesh_server_cluster_sync{instance="a",cluster="cluster2",state="cut-off"}', values: "1x20" },
      ],
      at: "10m",
    },
  },
  GitmeshQueueBacklog: {
    fire: { series: [{ series: 'gitmesh_pipeline_queue_depth{instance="a",type="workspace"}', values: "500x20" }], at: "15m", labels: [{ type: "workspace" }] },
    quiet: { series: [{ series: 'gitmesh_pipeline_queue_depth{instance="a",type="workspace"}', values: "50x20" }], at: "15m" },
  },
};

const AGENT_ALERTS: Record<string, AlertCases> = {
  GitmeshMassDeletionRefused: {
    fire: { series: [{ series: 'gitmesh_agent_prune_refused_total{instance="a",reason="mass_deletion"}', values: "0 0 1 1 1" }], at: "4m", labels: [{ instance: "a", reason: "mass_deletion" }] },
    // another guard refused (incomplete discovery): not a mass deletion
    quiet: { series: [{ series: 'gitmesh_agent_prune_refused_total{instance="a",reason="incomplete"}', values: "0 0 1 1 1" }, { series: 'gitmesh_agent_prune_refused_total{instance="a",reason="mass_deletion"}', values: "0x4" }], at: "4m" },
  },
  GitmeshDriftFight: {
    fire: { series: [{ series: 'gitmesh_agent_drift_fights_total{instance="a",kind="VirtualService"}', values: "0 0 1 1" }], at: "3m", labels: [{ instance: "a", kind: "VirtualService" }] },
    quiet: { series: [{ series: 'gitmesh_agent_drift_fights_total{instance="a",kind="VirtualService"}', values: "0x30" }], at: "20m" },
  },
  GitmeshCertificateExpiringSoon: {
    // notAfter 5 days after the test's time 0
    fire: { series: [{ series: 'gitmesh_agent_certificate_expiry_timestamp_seconds{instance="a",certificate="relay-client"}', values: "432000x5" }], at: "1m", labels: [{ instance: "a", certificate: "relay-client" }] },
    quiet: { series: [{ series: 'gitmesh_agent_certificate_expiry_timestamp_seconds{instance="a",certificate="relay-client"}', values: "2592000x5" }], at: "1m" },
  },
};

/** A promtool unit test file: per alert, the firing case (expected labels and the rule's own annotations) and the quiet case. */
function unitTests(rulesFile: string, rules: RuleGroups, cases: Record<string, AlertCases>) {
  const alerts = rules.groups.flatMap((g) => g.rules).filter((r) => r.alert !== undefined);
  const tests = alerts.flatMap((rule) => {
    const c = cases[rule.alert!];
    if (!c) throw new Error(`alert ${rule.alert!} has no promtool test cases: add them to rules.test.ts`);
    return [
      {
        name: `${rule.alert!} fires`,
        interval: "1m",
        input_series: c.fire.series,
        alert_rule_test: [{ eval_time: c.fire.at, alertname: rule.alert, exp_alerts: c.fire.labels.map((l) => ({ exp_labels: { ...rule.labels, ...l }, exp_annotations: rule.annotations ?? {} })) }],
      },
      { name: `${rule.alert!} stays quiet`, interval: "1m", input_series: c.quiet.series, alert_rule_test: [{ eval_time: c.quiet.at, alertname: rule.alert, exp_alerts: [] }] },
    ];
  });
  return { rule_files: [rulesFile], evaluation_interval: "1m", tests };
}

async function checkAndTest(chart: "gitmesh-server" | "gitmesh-agent", cases: Record<string, AlertCases>) {
  const dir = tmp();
  const rules = await renderedRules(chart);
  writeYaml(join(dir, "rules.yaml"), rules);
  const check = promtool(["check", "rules", "rules.yaml"], dir);
  expect(check.code, check.out).toBe(0);
  const alerts = rules.groups.flatMap((g) => g.rules).map((r) => r.alert);
  expect(alerts.sort()).toEqual(Object.keys(cases).sort());
  writeYaml(join(dir, "tests.yaml"), unitTests("rules.yaml", rules, cases));
  const test = promtool(["test", "rules", "tests.yaml"], dir);
  expect(test.code, test.out).toBe(0);
  for (const r of rules.groups.flatMap((g) => g.rules).filter((x) => x.alert !== undefined)) expect(r.annotations?.runbook?.length ?? 0, `${String(r.alert)} runbook`).toBeGreaterThan(80);
  return { dir, rules };
}

describe("alerting rules, rendered by helm and checked by promtool", () => {
  it("server chart: promtool check rules passes, and every alert fires in its case and stays quiet in the other", async () => {
    await checkAndTest("gitmesh-server", SERVER_ALERTS);
  }, 60_000);

  it("agent chart: the same for the agent's alerts", async () => {
    await checkAndTest("gitmesh-agent", AGENT_ALERTS);
  }, 60_000);

  it("a promtool case can fail: a threshold raised above the firing series makes the firing case fail", async () => {
    const dir = tmp();
    const rules = await renderedRules("gitmesh-server", ["monitoring.prometheusRule.queueBacklogJobs=1000"]);
    expect(rules.groups[0]!.rules.find((r) => r.alert === "GitmeshQueueBacklog")!.expr).toContain("> 1000");
    writeYaml(join(dir, "rules.yaml"), rules);
    writeYaml(join(dir, "tests.yaml"), unitTests("rules.yaml", rules, SERVER_ALERTS));
    const test = promtool(["test", "rules", "tests.yaml"], dir);
    expect(test.code).not.toBe(0);
    expect(test.out).toContain("GitmeshQueueBacklog");
  }, 60_000);

  it("values set the durations; glooCompatibleNames records Gloo's relay names from gitmesh's", async () => {
    const dir = tmp();
    const rules = await renderedRules("gitmesh-server", ["monitoring.prometheusRule.clusterNotAppliedFor=30m", "monitoring.prometheusRule.glooCompatibleNames=true"]);
    expect(rules.groups[0]!.rules.find((r) => r.alert === "GitmeshClusterNotApplied")!.for).toBe("30m");
    writeYaml(join(dir, "rules.yaml"), rules);
    expect(promtool(["check", "rules", "rules.yaml"], dir).code).toBe(0);
    writeYaml(join(dir, "tests.yaml"), {
      rule_files: ["rules.yaml"],
      evaluation_interval: "1m",
      tests: [{
        interval: "1m",
        input_series: [{ series: 'gitmesh_relay_pull_clients_connected{cluster="cluster1"}', values: "1x5" }],
        promql_expr_test: [{ expr: "relay_pull_clients_connected", eval_time: "2m", exp_samples: [{ labels: 'relay_pull_clients_connected{cluster="cluster1"}', value: 1 }] }],
      }],
    });
    const test = promtool(["test", "rules", "tests.yaml"], dir);
    expect(test.code, test.out).toBe(0);
    // off by default
    expect((await renderedRules("gitmesh-server")).groups.map((g) => g.name)).toEqual(["gitmesh-server"]);
  }, 60_000);
});

describe("monitoring templates behind values", () => {
  const serverArgs = [...REQUIRED_VALUES["gitmesh-server"]];
  const agentArgs = [...REQUIRED_VALUES["gitmesh-agent"]];
  const kinds = (ms: { object: { kind: string } }[]) => ms.map((m) => m.object.kind).filter((k) => ["PrometheusRule", "PodMonitor", "ServiceMonitor"].includes(k) || k === "ConfigMap");

  it("nothing is rendered by default", async () => {
    const server = await renderOk("gitmesh-server", serverArgs);
    expect(server.manifests.filter((m) => m.source.endsWith("monitoring.yaml"))).toEqual([]);
    const agent = await renderOk("gitmesh-agent", agentArgs);
    expect(agent.manifests.filter((m) => m.source.endsWith("monitoring.yaml"))).toEqual([]);
  }, 60_000);

  it("server: the dashboard ConfigMap carries the chart's JSON with the sidecar label; monitors scrape port http, https with TLS", async () => {
    const { manifests } = await renderOk("gitmesh-server", [
      ...serverArgs, "--name", "gm", "--namespace", "gitmesh",
      "--set", "monitoring.dashboards.enabled=true", "--set", "monitoring.dashboards.namespace=monitoring", "--set", "monitoring.dashboards.annotations.grafana_folder=gitmesh",
      "--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.serviceMonitor.labels.release=kps",
      "--set", "http.tls.secretName=gitmesh-http-tls", "--set", "monitoring.tlsConfig.insecureSkipVerify=true",
    ]);
    const mine = manifests.filter((m) => m.source.endsWith("monitoring.yaml"));
    expect(kinds(mine).sort()).toEqual(["ConfigMap", "PodMonitor", "ServiceMonitor"]);
    const cm = mine.find((m) => m.object.kind === "ConfigMap")!.object as unknown as { metadata: { namespace: string; labels: Record<string, string>; annotations: Record<string, string> }; data: Record<string, string> };
    expect(cm.metadata.namespace).toBe("monitoring");
    expect(cm.metadata.labels.grafana_dashboard).toBe("1");
    expect(cm.metadata.annotations.grafana_folder).toBe("gitmesh");
    expect(cm.data["gitmesh.json"]).toBe(dashboardJson().trimEnd());
    const pm = mine.find((m) => m.object.kind === "PodMonitor")!.object as unknown as { spec: { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: Record<string, unknown>[] } };
    // the release's pods: server and workers
    expect(pm.spec.selector.matchLabels).toEqual({ "app.kubernetes.io/instance": "gm" });
    expect(pm.spec.podMetricsEndpoints[0]).toMatchObject({ port: "http", path: "/metrics", scheme: "https", tlsConfig: { insecureSkipVerify: true } });
    const sm = mine.find((m) => m.object.kind === "ServiceMonitor")!.object as unknown as { metadata: { labels: Record<string, string> }; spec: { endpoints: Record<string, unknown>[] } };
    expect(sm.metadata.labels.release).toBe("kps");
    expect(sm.spec.endpoints[0]).toMatchObject({ port: "http", path: "/metrics", scheme: "https" });
  }, 60_000);

  it("agent: PodMonitor and ServiceMonitor select the agent pods and Service; a bad value is refused by the schema", async () => {
    const { manifests } = await renderOk("gitmesh-agent", [...agentArgs, "--set", "monitoring.podMonitor.enabled=true", "--set", "monitoring.serviceMonitor.enabled=true", "--set", "monitoring.podMonitor.interval=15s"]);
    const mine = manifests.filter((m) => m.source.endsWith("monitoring.yaml"));
    expect(kinds(mine).sort()).toEqual(["PodMonitor", "ServiceMonitor"]);
    const pm = mine.find((m) => m.object.kind === "PodMonitor")!.object as unknown as { spec: { podMetricsEndpoints: Record<string, unknown>[] } };
    expect(pm.spec.podMetricsEndpoints[0]).toMatchObject({ port: "http", path: "/metrics", interval: "15s" });
    const bad = await render("gitmesh-agent", [...agentArgs, "--set", "monitoring.prometheusRule.window=fifteen minutes"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("window");
  }, 60_000);

  it("helm lint --strict passes with every monitoring asset on", async () => {
    const on = ["dashboards", "prometheusRule", "podMonitor", "serviceMonitor"].flatMap((v) => ["--set", `monitoring.${v}.enabled=true`]);
    const server = await lint("gitmesh-server", [...serverArgs, ...on, "--set", "monitoring.prometheusRule.glooCompatibleNames=true"]);
    expect(server.code, server.stdout + server.stderr).toBe(0);
    const agent = await lint("gitmesh-agent", [...agentArgs, ...on.slice(2)]);
    expect(agent.code, agent.stdout + agent.stderr).toBe(0);
  }, 60_000);
});
