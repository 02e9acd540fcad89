/**
 * Issue #40 item 1: each opt-in of the agent chart gets only what it needs, where it needs it.
 *
 * For every combination of the opt-ins (istio.writeCacerts, istio.autoRestartPods with
 * istio.restartNamespaces, lifecycle.enabled, rateLimit.configNamespaces — 16 renders by the real
 * helm), the chart is installed by the real helm into a real API server (tools/kube-apiserver) and
 * the API server's own authorizer is asked, as the agent's ServiceAccount:
 * - every rule of the render (listed as grants) — and every rule of any other combination — through
 *   SubjectAccessReviews: the answers are exactly what the render's rules cover, nothing more;
 * - every call the agent makes (checks.ts agentCalls, plus the restarts when on) is allowed;
 * - `kubectl auth can-i` for what it must never do in any combination: patch a workload in a
 *   namespace outside istio.restartNamespaces or anything in istio-system but istiod, read Secrets it
 *   did not create there, touch istiod otherwise, create or delete workloads where it only restarts.
 * The README's agent RBAC table (between the "agent-rbac" markers) is generated from these
 * observations; UPDATE_GOLDEN=1 rewrites it, otherwise a difference fails.
 *
 * The agent keeps working with the narrower grants: its restarter (src/agent/workload-restart.ts),
 * with the ServiceAccount's own token, restarts istiod and the listed namespace's workloads, names the
 * injected namespace outside the list and patches nothing there.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKubeClient, parseAgentConfig, withFieldOwner } from "../../src/agent/index.js";
import { GATEWAY_SECRETS_CLUSTER_ROLE } from "../../src/translate/index.js";
import { createWorkloadRestarter, RESTART_FIELD_MANAGER, RESTARTED_AT_ANNOTATION } from "../../src/agent/workload-restart.js";
import { createMemoryLogger } from "../../src/core/index.js";
import { startRealKube, type RealKube } from "../helpers/real-kube.js";
import { agentCalls, DEFAULT_SECRETS, envOf, find, grant, grantsOf, kubectlCanI, lifecycleOutput, parseGrant, podSpec, type Grant } from "./checks.js";
import { chartDir, helm, helmBinary, renderOk, ROOT, type Manifest } from "./helm.js";

const NS = "gitmesh";
const SA = { name: "gitmesh-agent", namespace: NS };
const USER = `system:serviceaccount:${NS}:gitmesh-agent`;
const ISTIO_NS = "istio-system";
const RESTART_NS = "bookinfo"; // listed in istio.restartNamespaces
const UNLISTED_NS = "legacy"; // injected by the mesh, not listed
const GATEWAY_NS = "istio-gateways"; // lifecycle.gatewayNamespaces' default
const RATELIMIT_NS = "gloo-mesh-addons";
const BASE = ["--namespace", NS, "--set", "relay.serverAddress=mgmt.example.com:9900", "--set", "relay.cluster=cluster1"];

interface OptIn {
  readonly name: string;
  readonly on: readonly string[];
  readonly off: readonly string[];
}
const OPT_INS: readonly OptIn[] = [
  { name: "istio.writeCacerts", on: ["--set", "istio.writeCacerts=true"], off: ["--set", "istio.writeCacerts=false"] },
  { name: "istio.autoRestartPods", on: ["--set", "istio.autoRestartPods=true", "--set", `istio.restartNamespaces={${RESTART_NS}}`], off: [] },
  { name: "lifecycle.enabled", on: ["--set", "lifecycle.enabled=true"], off: [] },
  { name: "rateLimit.configNamespaces", on: ["--set", `rateLimit.configNamespaces={${RATELIMIT_NS}}`], off: [] },
];
const COMBOS = Array.from({ length: 1 << OPT_INS.length }, (_, mask) => mask);
const label = (mask: number) => OPT_INS.filter((_, i) => mask & (1 << i)).map((o) => o.name).join(" + ") || "(none)";
const argsOf = (mask: number) => [...BASE, ...OPT_INS.flatMap((o, i) => (mask & (1 << i) ? o.on : o.off))];
const on = (mask: number, name: string) => (mask & (1 << OPT_INS.findIndex((o) => o.name === name))) !== 0;

/** What the agent must never be able to do, whatever the opt-ins. */
const NEVER: readonly Grant[] = [
  grant("cluster", "apps", "deployments", "patch"), // no workload patch cluster-wide
  grant(`ns:${UNLISTED_NS}`, "apps", "deployments", "patch"), // injected, but not in istio.restartNamespaces
  grant(`ns:${UNLISTED_NS}`, "apps", "statefulsets", "patch"),
  grant("ns:kube-system", "apps", "daemonsets", "patch"),
  grant(`ns:${RESTART_NS}`, "apps", "deployments", "create"), // restart = patch only
  grant(`ns:${RESTART_NS}`, "apps", "deployments", "delete"),
  grant(`ns:${RESTART_NS}`, "apps", "deployments", "update"),
  grant(`ns:${RESTART_NS}`, "", "secrets", "get"),
  // lifecycle.enabled: the agent binds the gateway ClusterRole; it never reads a Secret or writes a Role itself.
  grant(`ns:${GATEWAY_NS}`, "", "secrets", "get"),
  grant(`ns:${GATEWAY_NS}`, "", "secrets", "list"),
  grant(`ns:${GATEWAY_NS}`, "rbac.authorization.k8s.io", "roles", "create"),
  grant(`ns:${GATEWAY_NS}`, "rbac.authorization.k8s.io", "clusterroles", "bind", "cluster-admin"),
  grant(`ns:${ISTIO_NS}`, "apps", "deployments", "patch", "istio-ingressgateway"), // istiod by name only
  grant(`ns:${ISTIO_NS}`, "apps", "deployments", "delete", "istiod"), // never replace istiod
  grant(`ns:${ISTIO_NS}`, "apps", "deployments", "update", "istiod"),
  grant(`ns:${ISTIO_NS}`, "apps", "deployments", "create"),
  grant(`ns:${ISTIO_NS}`, "", "secrets", "get", "istio-ca-secret"), // Secrets it did not create
  grant(`ns:${ISTIO_NS}`, "", "secrets", "list"),
  grant(`ns:${ISTIO_NS}`, "rbac.authorization.k8s.io", "roles", "create"),
  grant(`ns:${ISTIO_NS}`, "", "services", "patch"),
  grant("cluster", "", "secrets", "list"),
  grant("ns:kube-system", "", "secrets", "get"),
  grant(`ns:${NS}`, "", "secrets", "list"),
  grant(`ns:${RATELIMIT_NS}`, "", "secrets", "get"),
  grant("cluster", "rbac.authorization.k8s.io", "clusterroles", "create"),
  grant(`ns:${GATEWAY_NS}`, "rbac.authorization.k8s.io", "roles", "escalate"),
];

let kube: RealKube;

beforeAll(async () => {
  helmBinary();
  kube = await startRealKube();
  const ns = (name: string, labels: Record<string, string> = {}) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name, labels } });
  await kube.apply([ns(NS), ns(ISTIO_NS), ns(RESTART_NS, { "istio-injection": "enabled" }), ns(UNLISTED_NS, { "istio-injection": "enabled" }), ns(GATEWAY_NS), ns(RATELIMIT_NS)]);
}, 180_000);
afterAll(async () => {
  await kube.stop();
});

async function hOk(args: readonly string[]): Promise<string> {
  const r = await helm(args, { env: { KUBECONFIG: kube.kubeconfigPath } });
  if (r.code !== 0) throw new Error(`helm ${args.join(" ")} failed (${String(r.code)}):\n${r.stderr}`);
  return r.stdout;
}


/** Whether a rule-derived grant covers a probe (a ClusterRole covers every namespace; "*" every name). */
function covers(granted: ReadonlySet<Grant>, probe: Grant): boolean {
  const p = parseGrant(probe);
  for (const scope of p.scope === "cluster" ? ["cluster"] : ["cluster", p.scope]) {
    for (const name of p.name === "*" ? ["*"] : ["*", p.name]) if (granted.has(grant(scope, p.group, p.resource, p.verb, name))) return true;
  }
  return false;
}

/** The API server's authorizer, asked as an admin on the agent's behalf (what `kubectl auth can-i --as` asks). */
async function allowed(probe: Grant): Promise<boolean> {
  const p = parseGrant(probe);
  const resourceAttributes = {
    verb: p.verb,
    group: p.group,
    resource: p.resource,
    ...(p.scope === "cluster" ? {} : { namespace: p.scope.slice("ns:".length) }),
    ...(p.name === "*" ? {} : { name: p.name }),
  };
  const r = await kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
    body: { apiVersion: "authorization.k8s.io/v1", kind: "SubjectAccessReview", spec: { user: USER, groups: ["system:serviceaccounts", `system:serviceaccounts:${NS}`, "system:authenticated"], resourceAttributes } },
  });
  if (r.status !== 201) throw new Error(`SubjectAccessReview ${probe}: HTTP ${String(r.status)} ${r.text}`);
  return (r.body as { status: { allowed: boolean } }).status.allowed;
}

/** `kubectl auth can-i` as the ServiceAccount; true for "yes". */
const canI = (g: Grant) => kubectlCanI(kube.kubeconfigPath, g, USER);

async function inParallel<T, R>(items: readonly T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i]!);
  }));
  return out;
}

/** The calls the agent makes with these opt-ins (checks.ts agentCalls, plus the restarts). */
function callsOf(mask: number): Set<Grant> {
  const calls = agentCalls({ ns: NS, istioNs: ISTIO_NS, lease: "gitmesh-agent", inventory: "gitmesh-agent-inventory", secrets: DEFAULT_SECRETS, cacerts: on(mask, "istio.writeCacerts") });
  if (on(mask, "istio.writeCacerts") && on(mask, "istio.autoRestartPods")) {
    calls.add(grant(`ns:${ISTIO_NS}`, "apps", "deployments", "patch", "istiod"));
    for (const r of ["deployments", "statefulsets", "daemonsets"]) calls.add(grant(`ns:${RESTART_NS}`, "apps", r, "patch"));
  }
  if (on(mask, "lifecycle.enabled")) {
    for (const v of ["create", "patch", "delete"]) calls.add(grant("cluster", "sailoperator.io", "istios", v));
    for (const v of ["create", "patch", "delete"]) calls.add(grant(`ns:${GATEWAY_NS}`, "rbac.authorization.k8s.io", "rolebindings", v));
    calls.add(grant(`ns:${GATEWAY_NS}`, "rbac.authorization.k8s.io", "clusterroles", "bind", GATEWAY_SECRETS_CLUSTER_ROLE));
    calls.add(grant(`ns:${GATEWAY_NS}`, "rbac.authorization.k8s.io", "roles", "delete"));
  }
  if (on(mask, "rateLimit.configNamespaces")) for (const v of ["create", "patch", "delete"]) calls.add(grant(`ns:${RATELIMIT_NS}`, "", "configmaps", v));
  return calls;
}

/* ------------------------------------------------------------------ README table */

const SCOPE_LABEL: Readonly<Record<string, string>> = {
  cluster: "cluster-wide",
  [`ns:${NS}`]: "release namespace",
  [`ns:${ISTIO_NS}`]: "`istio.namespace`",
  [`ns:${RESTART_NS}`]: "each of `istio.restartNamespaces`",
  [`ns:${GATEWAY_NS}`]: "each of `lifecycle.gatewayNamespaces`",
  [`ns:${RATELIMIT_NS}`]: "each of `rateLimit.configNamespaces`",
};

/** For each observed grant, the opt-ins it needs (all of them on: granted; any off: denied), else a failure. */
function conditionOf(probe: Grant, yes: ReadonlySet<number>): string {
  const required = OPT_INS.map((o, i) => ({ o, i })).filter(({ i }) => [...yes].every((m) => m & (1 << i)));
  const need = required.reduce((m, { i }) => m | (1 << i), 0);
  const expected = COMBOS.filter((m) => (m & need) === need);
  expect([...yes].sort((a, b) => a - b), `${probe}: granted exactly when ${required.map((r) => r.o.name).join(" + ") || "always"}`).toEqual(expected);
  return required.map(({ o }) => `\`${o.name}\``).join(" + ") || "always";
}

function table(observed: ReadonlyMap<Grant, Set<number>>): string {
  const rows = new Map<string, { cond: string; scope: string; names: string; verbs: string; resources: Set<string> }>();
  const byGrant = new Map<string, { cond: string; scope: string; gr: string; name: string; verbs: Set<string> }>();
  const same = (a: ReadonlySet<number> | undefined, b: ReadonlySet<number>) => a !== undefined && a.size === b.size && [...a].every((m) => b.has(m));
  for (const [probe, yes] of observed) {
    if (yes.size === 0) continue;
    const p = parseGrant(probe);
    // A row only for what a broader grant does not already say (cluster-wide over a namespace, any name over one).
    const broader = [p.scope !== "cluster" ? grant("cluster", p.group, p.resource, p.verb, p.name) : undefined, p.name !== "*" ? grant(p.scope, p.group, p.resource, p.verb) : undefined];
    if (broader.some((b) => b !== undefined && same(observed.get(b), yes))) continue;
    const cond = conditionOf(probe, yes);
    const key = [cond, p.scope, `${p.group}/${p.resource}`, p.name].join("|");
    const e = byGrant.get(key) ?? { cond, scope: p.scope, gr: p.group === "" ? p.resource : `${p.resource}.${p.group}`, name: p.name, verbs: new Set<string>() };
    e.verbs.add(p.verb);
    byGrant.set(key, e);
  }
  for (const e of byGrant.values()) {
    const verbs = [...e.verbs].sort().join(", ");
    const key = [e.cond, e.scope, e.name, verbs].join("|");
    const row = rows.get(key) ?? { cond: e.cond, scope: e.scope, names: e.name === "*" ? "any" : `\`${e.name}\``, verbs, resources: new Set<string>() };
    row.resources.add(e.gr);
    rows.set(key, row);
  }
  const order = (c: string) => (c === "always" ? "" : c);
  const sorted = [...rows.values()].sort((a, b) => order(a.cond).localeCompare(order(b.cond)) || a.scope.localeCompare(b.scope) || a.names.localeCompare(b.names) || [...a.resources].sort()[0]!.localeCompare([...b.resources].sort()[0]!));
  const lines = [
    "| granted when | where | resources | names | verbs |",
    "|---|---|---|---|---|",
    ...sorted.map((r) => `| ${r.cond} | ${SCOPE_LABEL[r.scope] ?? r.scope} | ${[...r.resources].sort().join(", ")} | ${r.names} | ${r.verbs} |`),
  ];
  return `${lines.join("\n")}\n`;
}

const BEGIN = "<!-- BEGIN agent-rbac: generated by test/charts/agent-privilege-real-kube.test.ts (UPDATE_GOLDEN=1 rewrites) -->\n";
const END = "<!-- END agent-rbac -->";

function expectReadmeTable(text: string): void {
  const file = join(ROOT, "README.md");
  const readme = readFileSync(file, "utf8");
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  expect(start >= 0 && end > start, `README.md has no "${BEGIN.trim()}" … "${END}" section`).toBe(true);
  const current = readme.slice(start + BEGIN.length, end);
  if (process.env.UPDATE_GOLDEN === "1") {
    writeFileSync(file, readme.slice(0, start + BEGIN.length) + text + readme.slice(end));
    return;
  }
  expect(current, "README.md agent RBAC table differs from what the API server answered (UPDATE_GOLDEN=1 rewrites it)").toBe(text);
}

/* ------------------------------------------------------------------ tests */

describe("agent chart: every combination of opt-ins, installed by helm, asked of the real API server", () => {
  it("the API server grants exactly the rendered rules, every agent call, and never what no opt-in needs; README table from it", async () => {
    const renders = new Map<number, Manifest[]>();
    for (const mask of COMBOS) renders.set(mask, (await renderOk("gitmesh-agent", ["--name", "gitmesh-agent", ...argsOf(mask)])).manifests);
    const rules = new Map([...renders].map(([m, ms]) => [m, grantsOf(ms, SA)]));
    // Every grant any combination renders, every call, and the must-nevers: asked in every combination.
    const universe = [...new Set([...[...rules.values()].flatMap((g) => [...g]), ...COMBOS.flatMap((m) => [...callsOf(m)]), ...NEVER])].sort();
    expect(universe.length).toBeGreaterThan(100);
    const observed = new Map<Grant, Set<number>>(universe.map((g) => [g, new Set<number>()]));
    for (const mask of COMBOS) {
      await hOk(["upgrade", "--install", "gitmesh-agent", chartDir("gitmesh-agent"), ...argsOf(mask)]);
      const granted = rules.get(mask)!;
      const want = universe.map((g) => covers(granted, g));
      // RBAC reaches the authorizer through its informers: ask until it answers the render (or time out).
      let got: boolean[] = [];
      for (const deadline = Date.now() + 30_000; ; ) {
        got = await inParallel(universe, 8, allowed);
        if (got.every((v, i) => v === want[i]) || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      const differ = universe.flatMap((g, i) => (got[i] === want[i] ? [] : [`${g}: API server ${String(got[i])}, render ${String(want[i])}`]));
      expect(differ, label(mask)).toEqual([]);
      universe.forEach((g, i) => got[i] && observed.get(g)!.add(mask));
      const missing = [...callsOf(mask)].filter((c) => !got[universe.indexOf(c)]);
      expect(missing, `agent calls denied with ${label(mask)}`).toEqual([]);
      // kubectl auth can-i, as an operator would check: none of the must-nevers.
      const answers = await inParallel(NEVER, 4, canI);
      expect(NEVER.filter((_, i) => answers[i]), `kubectl auth can-i said yes with ${label(mask)}`).toEqual([]);
    }
    // The opt-ins' grants where they belong (spot checks of the observations, by name).
    const when = (g: Grant) => [...observed.get(g)!].map(label).sort();
    const restartOn = COMBOS.filter((m) => on(m, "istio.writeCacerts") && on(m, "istio.autoRestartPods")).map(label).sort();
    expect(when(grant(`ns:${ISTIO_NS}`, "apps", "deployments", "patch", "istiod"))).toEqual(restartOn);
    expect(when(grant(`ns:${RESTART_NS}`, "apps", "statefulsets", "patch"))).toEqual(restartOn);
    expect(when(grant(`ns:${GATEWAY_NS}`, "rbac.authorization.k8s.io", "clusterroles", "bind", GATEWAY_SECRETS_CLUSTER_ROLE))).toEqual(COMBOS.filter((m) => on(m, "lifecycle.enabled")).map(label).sort());
    for (const g of NEVER) expect(observed.get(g)!.size, g).toBe(0);
    expectReadmeTable(table(observed));
    await hOk(["uninstall", "gitmesh-agent", "--namespace", NS]);
  }, 600_000);

  it("the Istio namespace is refused as a restart or gateway namespace (helm names the value)", async () => {
    for (const [value, args] of [
      ["istio.restartNamespaces", ["--set", "istio.autoRestartPods=true", "--set", `istio.restartNamespaces={${RESTART_NS},${ISTIO_NS}}`]],
      ["lifecycle.gatewayNamespaces", ["--set", "lifecycle.enabled=true", "--set", `lifecycle.gatewayNamespaces={${GATEWAY_NS},${ISTIO_NS}}`]],
    ] as const) {
      const r = await helm(["install", "refused", chartDir("gitmesh-agent"), ...BASE, ...args], { env: { KUBECONFIG: kube.kubeconfigPath } });
      expect(r.code, value).toBe(1);
      expect(r.stderr).toContain(`${value} must not contain the Istio namespace "${ISTIO_NS}"`);
    }
    const defaults = (await renderOk("gitmesh-agent", ["--name", "gitmesh-agent", ...BASE, "--set", "lifecycle.enabled=true"])).manifests;
    expect([...grantsOf(defaults, SA)].filter((g) => g.startsWith(`ns:${ISTIO_NS} `) && !g.includes("/configmaps ")).sort()).toEqual([
      grant(`ns:${ISTIO_NS}`, "", "secrets", "create"), grant(`ns:${ISTIO_NS}`, "", "secrets", "get", "cacerts"), grant(`ns:${ISTIO_NS}`, "", "secrets", "patch", "cacerts"),
    ].sort());
  }, 60_000);

  it("the agent's restarter works with the narrowed grants, as the ServiceAccount: istiod and the listed namespace restarted, the other named and left alone", async () => {
    const args = [...BASE, "--set", "istio.autoRestartPods=true", "--set", `istio.restartNamespaces={${RESTART_NS}}`];
    await hOk(["upgrade", "--install", "gitmesh-agent", chartDir("gitmesh-agent"), ...args]);
    // What the chart tells the agent reaches its configuration.
    const rendered = (await renderOk("gitmesh-agent", ["--name", "gitmesh-agent", ...args])).manifests;
    const env = envOf(podSpec(find(rendered, "Deployment", "gitmesh-agent")).containers[0]!) as Record<string, string>;
    const { config } = parseAgentConfig({ relayAddress: "mgmt.example.com:9900", cluster: "cluster1", namespace: NS, autoRestartPods: env.GITMESH_AUTO_RESTART_PODS, restartNamespaces: env.GITMESH_RESTART_NAMESPACES }, { identity: "agent-0" });
    expect(config?.restartNamespaces).toEqual([RESTART_NS]);

    const deployment = (name: string, namespace: string, labels: Record<string, string> = { app: name }) => ({
      apiVersion: "apps/v1", kind: "Deployment", metadata: { name, namespace, labels },
      spec: { replicas: 1, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: "c", image: "example/c:1" }] } } },
    });
    await kube.apply([deployment("istiod", ISTIO_NS, { app: "istiod" }), deployment("reviews", RESTART_NS), deployment("old-app", UNLISTED_NS)]);
    const tr = await kube.request("POST", `/api/v1/namespaces/${NS}/serviceaccounts/gitmesh-agent/token`, { body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } } });
    expect(tr.status).toBe(201);
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig({ token: (tr.body as { status: { token: string } }).status.token, user: USER, namespace: NS }));
    const client = createKubeClient(kc);
    const restartedAt = async (ns: string, name: string) =>
      ((await kube.request("GET", `/apis/apps/v1/namespaces/${ns}/deployments/${name}`)).body as { spec: { template: { metadata: { annotations?: Record<string, string> } } } }).spec.template.metadata.annotations?.[RESTARTED_AT_ANNOTATION];

    const mem = createMemoryLogger("restart");
    const restarter = createWorkloadRestarter({ reader: client, writer: withFieldOwner(client, RESTART_FIELD_MANAGER), namespaces: config!.restartNamespaces!, istiodRolloutTimeoutMs: 0, logger: mem.logger });
    const round = await restarter.request({ namespace: ISTIO_NS, revision: "" });
    restarter.stop();
    expect(round.errors).toEqual([]);
    expect(round.restarted).toEqual([`Deployment/${ISTIO_NS}/istiod`, `Deployment/${RESTART_NS}/reviews`]);
    expect(round.skipped).toEqual([UNLISTED_NS]);
    expect(mem.records.find((r) => r.level === "warn" && r.msg.includes("outside istio.restartNamespaces"))?.fields.namespaces).toBe(UNLISTED_NS);
    expect(await restartedAt(ISTIO_NS, "istiod")).toBeDefined();
    expect(await restartedAt(RESTART_NS, "reviews")).toBeDefined();
    expect(await restartedAt(UNLISTED_NS, "old-app")).toBeUndefined();

    // Without the list (the old behaviour) the API server itself refuses the unlisted namespace: the grant is the limit.
    const unlimited = createWorkloadRestarter({ reader: client, writer: withFieldOwner(client, RESTART_FIELD_MANAGER), istiodRolloutTimeoutMs: 0, minIntervalMs: 0, logger: createMemoryLogger("restart2").logger });
    const second = await unlimited.request({ namespace: ISTIO_NS, revision: "" });
    unlimited.stop();
    expect(second.errors).toHaveLength(1);
    expect(second.errors[0]).toMatch(new RegExp(`^Deployment/${UNLISTED_NS}/old-app: .*(forbidden|403)`, "i"));
    expect(await restartedAt(UNLISTED_NS, "old-app")).toBeUndefined();
  }, 120_000);

  it("lifecycle: as the agent's ServiceAccount, the gateway's RoleBinding to the gateway ClusterRole is created, while a Role granting Secret reads and reading a Secret are refused", async () => {
    await hOk(["upgrade", "--install", "gitmesh-agent", chartDir("gitmesh-agent"), ...BASE, "--set", "lifecycle.enabled=true"]);
    const rendered = (await renderOk("gitmesh-agent", ["--name", "gitmesh-agent", ...BASE, "--set", "lifecycle.enabled=true"])).manifests;
    // The chart holds the gateway's permission under the name the server's rendered output binds.
    expect(find(rendered, "ClusterRole", GATEWAY_SECRETS_CLUSTER_ROLE).rules).toEqual([{ apiGroups: [""], resources: ["secrets"], verbs: ["get", "watch", "list"] }]);
    await kube.apply([{ apiVersion: "v1", kind: "Secret", metadata: { name: "gateway-tls", namespace: GATEWAY_NS }, stringData: { "tls.crt": "x" } }]);
    const tr = await kube.request("POST", `/api/v1/namespaces/${NS}/serviceaccounts/gitmesh-agent/token`, { body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 3600 } } });
    expect(tr.status).toBe(201);
    const kc = new KubeConfig();
    kc.loadFromString(kube.kubeconfig({ token: (tr.body as { status: { token: string } }).status.token, user: USER, namespace: NS }));
    const writer = withFieldOwner(createKubeClient(kc));
    // The gateways' RBAC as the server renders it (the lifecycle golden case), applied as the agent.
    const gatewayRbac = lifecycleOutput().filter((o) => (o.kind === "ServiceAccount" || o.kind === "RoleBinding") && o.metadata.namespace === GATEWAY_NS);
    expect(gatewayRbac.filter((o) => o.kind === "RoleBinding").length).toBeGreaterThan(0);
    for (const o of gatewayRbac) expect((await writer.apply(o)).metadata.uid, `${o.kind} ${o.metadata.name}`).toBeDefined();
    const subjects = [{ kind: "ServiceAccount", name: "istio-ingressgateway", namespace: GATEWAY_NS }];
    // Any other ClusterRole, or a Role of its own with Secret reads: Kubernetes' escalation check refuses both.
    await expect(writer.apply({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "cluster-admin", namespace: GATEWAY_NS }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" }, subjects })).rejects.toThrow(/forbidden|403/i);
    await expect(writer.apply({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "reader", namespace: GATEWAY_NS }, rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }] })).rejects.toThrow(/forbidden|403/i);
    await expect(createKubeClient(kc).get({ apiVersion: "v1", kind: "Secret", plural: "secrets", namespaced: true }, GATEWAY_NS, "gateway-tls")).rejects.toThrow(/forbidden|403/i);
    await hOk(["uninstall", "gitmesh-agent", "--namespace", NS]);
  }, 120_000);
});
