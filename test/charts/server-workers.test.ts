/**
 * charts/gitmesh-server `workers` (#17 scale-out): the translation worker Deployment (`gitmesh worker`),
 * least privilege (no token, no Role, no secret but the Redis URL), the server's GITMESH_WORKERS,
 * refusals that would leave nothing translating, and the values schema.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { helmBinary, notes, render, renderOk, type Manifest } from "./helm.js";
import { envOf, expectGolden, expectHardened, find, grantsOf, podSpec, validateAll } from "./checks.js";

const CHART = "gitmesh-server";
const BASE = ["--name", "gitmesh-server", "--namespace", "gitmesh", "--set", "git.url=https://git.example.com/acme/mesh-config.git"];
const WORKERS = [...BASE, "--set", "workers.enabled=true"];
const WORKER = "gitmesh-server-worker";

function serverEnv(manifests: readonly Manifest[]): Record<string, unknown> {
  return envOf(podSpec(find(manifests, "Deployment", "gitmesh-server")).containers[0]!);
}

function workerContainer(manifests: readonly Manifest[]) {
  const pod = podSpec(find(manifests, "Deployment", WORKER));
  expect(pod.containers.map((c) => c.name)).toEqual(["worker"]);
  return pod.containers[0]!;
}

/** The documents of a render that come from the given templates (the workers' golden holds only those). */
function fromTemplates(text: string, templates: readonly string[]): string {
  return text
    .split(/^---[ \t]*$/m)
    .filter((chunk) => templates.some((t) => chunk.includes(`# Source: gitmesh-server/templates/${t}\n`)))
    .map((chunk) => chunk.replace(/^\n/, ""))
    .join("---\n");
}

/**
 * What KEDA's ScaledObject CRD (keda.sh/v1alpha1) requires of the fields the chart sets: a target by
 * name, integer counts, and triggers whose metadata is a map of strings (a number there is refused).
 */
function expectScaledObjectShape(so: Record<string, unknown>): void {
  const spec = so.spec as Record<string, unknown>;
  expect((spec.scaleTargetRef as { name?: unknown }).name).toEqual(expect.any(String));
  for (const k of ["minReplicaCount", "maxReplicaCount", "pollingInterval", "cooldownPeriod"]) {
    if (k in spec) expect(Number.isInteger(spec[k]), k).toBe(true);
  }
  const triggers = spec.triggers as { type: unknown; metadata: Record<string, unknown> }[];
  expect(triggers.length).toBeGreaterThan(0);
  for (const t of triggers) {
    expect(t.type).toEqual(expect.any(String));
    for (const [k, v] of Object.entries(t.metadata)) expect(typeof v, `trigger metadata ${k}`).toBe("string");
  }
}

function matches(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

let tmp = "";

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "server-workers-"));
  helmBinary();
});
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

/** A values file (for what --set cannot say well: lists of objects with string values). */
function valuesFile(name: string, text: string): string {
  const file = join(tmp, name);
  writeFileSync(file, text);
  return file;
}

describe("gitmesh-server chart: translation workers", () => {
  it("off by default: no worker objects, and the server keeps its own default number of translation jobs", async () => {
    const { manifests } = await renderOk(CHART, BASE);
    expect(manifests.filter((m) => m.object.metadata.name.includes("worker"))).toEqual([]);
    expect(serverEnv(manifests)).not.toHaveProperty("GITMESH_WORKERS");
  });

  it("workers.enabled: a hardened worker Deployment on the server's Redis, and the server translates nothing itself (golden)", async () => {
    const { text, manifests } = await renderOk(CHART, WORKERS);
    validateAll(manifests);
    const dep = find(manifests, "Deployment", WORKER);
    expectHardened(dep);
    const spec = dep.spec as { replicas: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> } } };
    expect(spec.replicas).toBe(2);
    const c = workerContainer(manifests);
    expect((c as { args?: string[] }).args).toEqual(["worker"]);
    expect(c.ports?.map((p) => [p.name, p.containerPort])).toEqual([["http", 9092]]);
    expect(c.startupProbe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(c.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(c.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(spec.template.metadata.annotations).toMatchObject({ "prometheus.io/scrape": "true", "prometheus.io/port": "9092", "prometheus.io/path": "/metrics" });
    // Exactly what `gitmesh worker` reads (src/server/worker.ts WORKER_ENV), nothing of the server's.
    expect(envOf(c)).toEqual({
      POD_NAME: { fieldRef: { fieldPath: "metadata.name" } },
      GITMESH_HTTP_PORT: "9092",
      GITMESH_LOG_LEVEL: "info",
      REDIS_URL: "redis://gitmesh-server-redis:6379",
      GITMESH_REDIS_PREFIX: "gitmesh",
      GITMESH_WORKER_CONCURRENCY: "4",
      GITMESH_JOB_LOCK_SECONDS: "30",
      GITMESH_SHUTDOWN_TIMEOUT_SECONDS: "25",
      GITMESH_RETENTION_COMMITS: "100",
      GITMESH_RETENTION_DESIRED_STATES: "8",
      GITMESH_RETENTION_MAX_AGE_HOURS: "168",
    });
    // The pod outlives the worker's own shutdown timeout, so the jobs in hand end before SIGKILL.
    expect((dep.spec as { template: { spec: { terminationGracePeriodSeconds: number } } }).template.spec.terminationGracePeriodSeconds).toBe(30);
    // The server: GITMESH_WORKERS=0 (auto with workers), same Redis and prefix as the workers.
    expect(serverEnv(manifests)).toMatchObject({ GITMESH_WORKERS: "0", REDIS_URL: "redis://gitmesh-server-redis:6379", GITMESH_REDIS_PREFIX: "gitmesh", GITMESH_RETENTION_COMMITS: "100", GITMESH_RETENTION_DESIRED_STATES: "8", GITMESH_RETENTION_MAX_AGE_HOURS: "168" });
    // The server's Services (relay, HTTP) never send traffic to a worker; the worker selector takes no server pod.
    const workerLabels = spec.template.metadata.labels;
    for (const name of ["gitmesh-server", "gitmesh-server-http"]) {
      expect(matches((find(manifests, "Service", name).spec as { selector: Record<string, string> }).selector, workerLabels), name).toBe(false);
    }
    const serverLabels = (find(manifests, "Deployment", "gitmesh-server").spec as typeof spec).template.metadata.labels;
    expect(matches(spec.selector.matchLabels, serverLabels)).toBe(false);
    expect(matches(spec.selector.matchLabels, workerLabels)).toBe(true);
    expectGolden("server-workers", fromTemplates(text, ["worker.yaml", "poddisruptionbudgets.yaml"]));
  });

  it("least privilege: its own ServiceAccount without a token, no RBAC, no mounted secret", async () => {
    const { manifests } = await renderOk(CHART, [...WORKERS, "--set", "commitStatus.platform=github,commitStatus.repository=acme/x,commitStatus.tokenSecret=gh", "--set", "http.tls.secretName=gitmesh-http-tls"]);
    const sa = find(manifests, "ServiceAccount", WORKER);
    expect(sa.automountServiceAccountToken).toBe(false);
    const pod = podSpec(find(manifests, "Deployment", WORKER)) as ReturnType<typeof podSpec> & { automountServiceAccountToken?: boolean };
    expect(pod.serviceAccountName).toBe(WORKER);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(grantsOf(manifests, { name: WORKER, namespace: "gitmesh" }).size).toBe(0);
    expect(pod.volumes).toEqual([{ name: "tmp", emptyDir: {} }]);
    expect(workerContainer(manifests).volumeMounts).toEqual([{ name: "tmp", mountPath: "/tmp" }]);
    // The server mounts its API tokens, HTTP certificate and commit-status token; the worker none of them.
    expect(podSpec(find(manifests, "Deployment", "gitmesh-server")).volumes?.map((v) => v.name)).toEqual(["tmp", "api-tokens", "http-tls", "commit-status-token"]);
  });

  it("external Redis: the worker reads the same URL Secret and prefix as the server, and no other Secret", async () => {
    for (const redis of [
      ["redis.bundled.enabled=false,redis.external.url=rediss://:pw@redis.internal:6380/0", { secretKeyRef: { name: "gitmesh-server-redis", key: "url" } }],
      // The URL forms values.yaml documents for highly available Redis (the server and worker parse them).
      ["redis.bundled.enabled=false,redis.external.url=redis-sentinel://:pw@s1:26379\\,s2:26379\\,s3:26379/mymaster", { secretKeyRef: { name: "gitmesh-server-redis", key: "url" } }],
      ["redis.bundled.enabled=false,redis.external.url=rediss-cluster://n1:6379\\,n2:6379\\,n3:6379", { secretKeyRef: { name: "gitmesh-server-redis", key: "url" } }],
      ["redis.bundled.enabled=false,redis.external.existingSecret=redis-conn,redis.external.existingSecretKey=address", { secretKeyRef: { name: "redis-conn", key: "address" } }],
    ] as const) {
      const { manifests } = await renderOk(CHART, [...WORKERS, "--set", redis[0], "--set", "redis.prefix=team-a", "--set", "git.credentials.username=bot,git.credentials.password=s3cret-token"]);
      validateAll(manifests);
      const env = envOf(workerContainer(manifests));
      expect(env.REDIS_URL).toEqual(redis[1]);
      expect(env.GITMESH_REDIS_PREFIX).toBe("team-a");
      expect(serverEnv(manifests)).toMatchObject({ REDIS_URL: redis[1], GITMESH_REDIS_PREFIX: "team-a" });
      const secretRefs = (workerContainer(manifests).env ?? []).filter((e) => e.valueFrom !== undefined && JSON.stringify(e.valueFrom).includes("secretKeyRef"));
      expect(secretRefs.map((e) => e.name)).toEqual(["REDIS_URL"]);
      expect(JSON.stringify(env)).not.toContain("s3cret-token");
      const url = /redis\.external\.url=(\S+)$/.exec(redis[0])?.[1]?.replaceAll("\\,", ",");
      if (url !== undefined) {
        const data = find(manifests, "Secret", "gitmesh-server-redis").data as Record<string, string>;
        expect(Buffer.from(data.url!, "base64").toString()).toBe(url);
      }
    }
  });

  it("worker values: replicas, concurrency, job lock, shutdown timeout (and the grace period after it), placement", async () => {
    const { manifests } = await renderOk(CHART, [
      ...WORKERS,
      "--set", "workers.replicas=5,workers.concurrency=8,workers.jobLockSeconds=60,workers.shutdownTimeoutSeconds=50",
      "--set", "workers.nodeSelector.pool=batch,workers.priorityClassName=low",
      "--set", "workers.tolerations[0].key=batch,workers.tolerations[0].operator=Exists",
      "--set", "workers.resources.requests.cpu=1,workers.resources.requests.memory=512Mi,workers.resources.limits.memory=2Gi",
      "--set", "nodeSelector.pool=control",
      "--set", "logLevel=debug",
    ]);
    validateAll(manifests);
    const dep = find(manifests, "Deployment", WORKER);
    expect((dep.spec as { replicas: number }).replicas).toBe(5);
    expect(envOf(workerContainer(manifests))).toMatchObject({ GITMESH_WORKER_CONCURRENCY: "8", GITMESH_JOB_LOCK_SECONDS: "60", GITMESH_SHUTDOWN_TIMEOUT_SECONDS: "50", GITMESH_LOG_LEVEL: "debug" });
    const pod = podSpec(dep) as ReturnType<typeof podSpec> & Record<string, unknown>;
    expect(pod.terminationGracePeriodSeconds).toBe(55);
    // Workers are placed by their own values, not the server's.
    expect(pod.nodeSelector).toEqual({ pool: "batch" });
    expect(pod.priorityClassName).toBe("low");
    expect(pod.tolerations).toEqual([{ key: "batch", operator: "Exists" }]);
    expect(workerContainer(manifests).resources).toEqual({ requests: { cpu: 1, memory: "512Mi" }, limits: { memory: "2Gi" } });
  });

  it("translationWorkers: a number is passed to the server as is, with or without workers", async () => {
    const mixed = await renderOk(CHART, [...WORKERS, "--set", "translationWorkers=2"]);
    expect(serverEnv(mixed.manifests).GITMESH_WORKERS).toBe("2");
    const alone = await renderOk(CHART, [...BASE, "--set", "translationWorkers=8"]);
    expect(serverEnv(alone.manifests).GITMESH_WORKERS).toBe("8");
    expect(alone.manifests.some((m) => m.object.metadata.name === WORKER)).toBe(false);
  });

  it("refuses what would leave nothing translating: workers without Redis, translationWorkers=0 without workers", async () => {
    const noRedis = await render(CHART, [...WORKERS, "--set", "redis.bundled.enabled=false"]);
    expect(noRedis.code).toBe(1);
    expect(noRedis.stderr).toContain("workers.enabled needs a shared Redis");
    const none = await render(CHART, [...BASE, "--set", "translationWorkers=0"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("translationWorkers=0 needs workers.enabled=true");
  });

  it("autoscaling: an autoscaling/v2 HPA on the External queue-depth metric, per worker (AverageValue); the Deployment leaves replicas to it", async () => {
    const { manifests } = await renderOk(CHART, [...WORKERS, "--set", "workers.autoscaling.enabled=true,workers.autoscaling.minReplicas=2,workers.autoscaling.maxReplicas=20,workers.autoscaling.targetQueueDepthPerWorker=16"]);
    validateAll(manifests);
    expect(find(manifests, "Deployment", WORKER).spec).not.toHaveProperty("replicas");
    expect(manifests.some((m) => m.object.kind === "ScaledObject")).toBe(false);
    expect(find(manifests, "HorizontalPodAutoscaler", WORKER).spec).toEqual({
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: WORKER },
      minReplicas: 2,
      maxReplicas: 20,
      // External + AverageValue: replicas = ceil(depth / 16). A Pods metric would be wrong here: every
      // pod reports the whole queue, so its average would not fall as workers are added.
      metrics: [{ type: "External", external: { metric: { name: "gitmesh_pipeline_queue_depth" }, target: { type: "AverageValue", averageValue: "16" } } }],
    });
    // A metric selector and the scaling behavior are passed through.
    const tuned = await renderOk(CHART, [
      ...WORKERS,
      "--set", "workers.autoscaling.enabled=true,workers.autoscaling.metric.name=gitmesh_queue_depth_total,workers.autoscaling.metric.matchLabels.release=gitmesh-server",
      "--set", "workers.autoscaling.behavior.scaleDown.stabilizationWindowSeconds=60",
    ]);
    validateAll(tuned.manifests);
    const hpa = find(tuned.manifests, "HorizontalPodAutoscaler", WORKER).spec as Record<string, unknown>;
    expect(hpa.metrics).toEqual([{ type: "External", external: { metric: { name: "gitmesh_queue_depth_total", selector: { matchLabels: { release: "gitmesh-server" } } }, target: { type: "AverageValue", averageValue: "8" } } }]);
    expect(hpa.behavior).toEqual({ scaleDown: { stabilizationWindowSeconds: 60 } });
    // Without workers, autoscaling values render nothing.
    const off = await renderOk(CHART, [...BASE, "--set", "workers.autoscaling.enabled=true"]);
    expect(off.manifests.some((m) => m.object.kind === "HorizontalPodAutoscaler")).toBe(false);
  });

  it("autoscaling with KEDA: a ScaledObject with a Prometheus trigger on the max per job type (not the sum over pods), no HPA of the chart's own", async () => {
    const KEDA = [...WORKERS, "--set", "workers.autoscaling.enabled=true,workers.autoscaling.keda.enabled=true,workers.autoscaling.keda.serverAddress=http://prometheus-server.monitoring.svc"];
    const { manifests } = await renderOk(CHART, [...KEDA, "--set", "workers.autoscaling.minReplicas=0,workers.autoscaling.maxReplicas=6", "--set", "workers.autoscaling.behavior.scaleUp.stabilizationWindowSeconds=0"]);
    validateAll(manifests.filter((m) => m.object.kind !== "ScaledObject"));
    expect(manifests.some((m) => m.object.kind === "HorizontalPodAutoscaler")).toBe(false);
    expect(find(manifests, "Deployment", WORKER).spec).not.toHaveProperty("replicas");
    const so = find(manifests, "ScaledObject", WORKER);
    expect(so.apiVersion).toBe("keda.sh/v1alpha1");
    expectScaledObjectShape(so);
    expect(so.spec).toEqual({
      scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: WORKER },
      minReplicaCount: 0,
      maxReplicaCount: 6,
      pollingInterval: 30,
      cooldownPeriod: 300,
      advanced: { horizontalPodAutoscalerConfig: { behavior: { scaleUp: { stabilizationWindowSeconds: 0 } } } },
      triggers: [{
        type: "prometheus",
        metricType: "AverageValue",
        metadata: {
          serverAddress: "http://prometheus-server.monitoring.svc",
          query: 'sum(max by (type) (gitmesh_pipeline_queue_depth{namespace="gitmesh"}))',
          threshold: "8",
        },
      }],
    });
    const custom = await renderOk(CHART, [...KEDA, "--set-string", 'workers.autoscaling.keda.query=sum(max by (type) (gitmesh_pipeline_queue_depth{kubernetes_namespace="gitmesh"}))']);
    const trigger = (find(custom.manifests, "ScaledObject", WORKER).spec as { triggers: { metadata: Record<string, string> }[] }).triggers[0]!;
    expect(trigger.metadata.query).toBe('sum(max by (type) (gitmesh_pipeline_queue_depth{kubernetes_namespace="gitmesh"}))');
    const shown = await notes(CHART, KEDA);
    expect(shown.stdout).toContain("kubectl -n gitmesh get scaledobject gitmesh-server-worker");
  });

  it("autoscaling with KEDA: triggers of one's own replace the Prometheus one (the Redis lists scaler on the BullMQ wait lists, as in the README)", async () => {
    const redisTriggers = (listLength: string) => `workers:
  enabled: true
  autoscaling:
    enabled: true
    keda:
      enabled: true
      triggers:
        - type: redis
          metadata:
            address: gitmesh-server-redis.gitmesh.svc:6379
            listName: "gitmesh:bull:workspace:wait"
            listLength: ${listLength}
        - type: redis
          metadata:
            address: gitmesh-server-redis.gitmesh.svc:6379
            listName: "gitmesh:bull:cluster:wait"
            listLength: ${listLength}
`;
    const { manifests } = await renderOk(CHART, [...BASE, "-f", valuesFile("redis-triggers.yaml", redisTriggers('"8"'))]);
    const so = find(manifests, "ScaledObject", WORKER);
    expectScaledObjectShape(so);
    expect((so.spec as { triggers: unknown }).triggers).toEqual([
      { type: "redis", metadata: { address: "gitmesh-server-redis.gitmesh.svc:6379", listName: "gitmesh:bull:workspace:wait", listLength: "8" } },
      { type: "redis", metadata: { address: "gitmesh-server-redis.gitmesh.svc:6379", listName: "gitmesh:bull:cluster:wait", listLength: "8" } },
    ]);
    // KEDA's CRD takes trigger metadata as strings only: the schema says so at render time.
    const numeric = await render(CHART, [...BASE, "-f", valuesFile("redis-numeric.yaml", redisTriggers("8"))]);
    expect(numeric.code).toBe(1);
    expect(numeric.stderr).toContain("at '/workers/autoscaling/keda/triggers/0/metadata/listLength': got number, want string");
  });

  it("refuses autoscaling values that cannot work, with the value to change", async () => {
    const cases: [string[], string][] = [
      [["--set", "workers.autoscaling.enabled=true,workers.autoscaling.minReplicas=0"], "workers.autoscaling.minReplicas=0 needs workers.autoscaling.keda.enabled=true"],
      [["--set", "workers.autoscaling.enabled=true,workers.autoscaling.minReplicas=5,workers.autoscaling.maxReplicas=3"], "workers.autoscaling.minReplicas (5) is above maxReplicas (3)"],
      [["--set", "workers.autoscaling.enabled=true,workers.autoscaling.keda.enabled=true"], "workers.autoscaling.keda.serverAddress is required"],
      [["--set", "workers.autoscaling.keda.enabled=true,workers.autoscaling.keda.serverAddress=http://prom"], "workers.autoscaling.keda.enabled needs workers.autoscaling.enabled=true"],
    ];
    for (const [args, message] of cases) {
      const r = await render(CHART, [...WORKERS, ...args]);
      expect(r.code, message).toBe(1);
      expect(r.stderr).toContain(message);
    }
  });

  it("PodDisruptionBudgets: one per Deployment that can have more than one pod, selecting only its own pods", async () => {
    const pdbs = (manifests: readonly Manifest[]) => manifests.filter((m) => m.object.kind === "PodDisruptionBudget").map((m) => m.object.metadata.name).sort();
    // One server replica, no workers: no budget (minAvailable 1 would block every drain, maxUnavailable 1 protects nothing).
    expect(pdbs((await renderOk(CHART, BASE)).manifests)).toEqual([]);
    const { manifests } = await renderOk(CHART, [...WORKERS, "--set", "replicas=3"]);
    validateAll(manifests);
    expect(pdbs(manifests)).toEqual(["gitmesh-server", WORKER]);
    for (const [pdb, dep, other] of [["gitmesh-server", "gitmesh-server", WORKER], [WORKER, WORKER, "gitmesh-server"]] as const) {
      const spec = find(manifests, "PodDisruptionBudget", pdb).spec as { maxUnavailable: number; unhealthyPodEvictionPolicy: string; selector: { matchLabels: Record<string, string> } };
      expect(spec.maxUnavailable).toBe(1);
      // A pod that is not ready (a worker cut off from Redis) never holds a drain up.
      expect(spec.unhealthyPodEvictionPolicy).toBe("AlwaysAllow");
      const labelsOf = (name: string) => (find(manifests, "Deployment", name).spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
      expect(matches(spec.selector.matchLabels, labelsOf(dep)), pdb).toBe(true);
      expect(matches(spec.selector.matchLabels, labelsOf(other)), pdb).toBe(false);
    }
    // One worker: no budget for it; autoscaled up to several: a budget (maxUnavailable never blocks a drain).
    expect(pdbs((await renderOk(CHART, [...WORKERS, "--set", "workers.replicas=1"])).manifests)).toEqual([]);
    expect(pdbs((await renderOk(CHART, [...WORKERS, "--set", "workers.replicas=1,workers.autoscaling.enabled=true"])).manifests)).toEqual([WORKER]);
    // Off by choice.
    expect(pdbs((await renderOk(CHART, [...WORKERS, "--set", "replicas=3,podDisruptionBudget.enabled=false,workers.podDisruptionBudget.enabled=false"])).manifests)).toEqual([]);
  });

  it("PodDisruptionBudgets: minAvailable (a number or a percentage, rounded up) replaces maxUnavailable and must leave a pod to disrupt", async () => {
    const spec = async (args: string[], name: string) => {
      const { manifests } = await renderOk(CHART, [...WORKERS, ...args]);
      validateAll(manifests);
      return find(manifests, "PodDisruptionBudget", name).spec as Record<string, unknown>;
    };
    expect(await spec(["--set", "replicas=3,podDisruptionBudget.minAvailable=2"], "gitmesh-server")).toMatchObject({ minAvailable: 2 });
    expect(await spec(["--set", "replicas=3,podDisruptionBudget.minAvailable=2"], "gitmesh-server")).not.toHaveProperty("maxUnavailable");
    expect(await spec(["--set", "replicas=2,podDisruptionBudget.minAvailable=50%"], "gitmesh-server")).toMatchObject({ minAvailable: "50%" });
    expect(await spec(["--set", "replicas=4,podDisruptionBudget.maxUnavailable=25%"], "gitmesh-server")).toMatchObject({ maxUnavailable: "25%" });
    expect(await spec(["--set", "workers.replicas=4,workers.podDisruptionBudget.minAvailable=3"], WORKER)).toMatchObject({ minAvailable: 3 });
    const refused: [string, string][] = [
      ["replicas=3,podDisruptionBudget.minAvailable=3", "podDisruptionBudget.minAvailable=3 allows no voluntary disruption with 3 pod(s)"],
      // 60% of 2 rounds up to 2: nothing could be drained.
      ["replicas=2,podDisruptionBudget.minAvailable=60%", "podDisruptionBudget.minAvailable=60% allows no voluntary disruption with 2 pod(s)"],
      ["workers.replicas=2,workers.podDisruptionBudget.minAvailable=2", "workers.podDisruptionBudget.minAvailable=2 allows no voluntary disruption with 2 pod(s)"],
      // Autoscaled: checked against the fewest workers, here 2 (not the 10 there may be).
      ["workers.autoscaling.enabled=true,workers.autoscaling.minReplicas=2,workers.podDisruptionBudget.minAvailable=2", "workers.podDisruptionBudget.minAvailable=2 allows no voluntary disruption with 2 pod(s)"],
      // KEDA down to zero: one worker is the fewest that a drain can meet.
      ["workers.autoscaling.enabled=true,workers.autoscaling.keda.enabled=true,workers.autoscaling.keda.serverAddress=http://prom,workers.autoscaling.minReplicas=0,workers.podDisruptionBudget.minAvailable=1", "workers.podDisruptionBudget.minAvailable=1 allows no voluntary disruption with 1 pod(s)"],
    ];
    for (const [set, message] of refused) {
      const r = await render(CHART, [...WORKERS, "--set", set]);
      expect(r.code, set).toBe(1);
      expect(r.stderr).toContain(message);
    }
  });

  it("NOTES name the worker Deployment and where the queue depth is", async () => {
    const off = await notes(CHART, BASE);
    expect(off.stdout).not.toContain("worker");
    const on = await notes(CHART, WORKERS);
    expect(on.code).toBe(0);
    expect(on.stdout).toContain("deployment/gitmesh-server-worker, 2 replicas");
    expect(on.stdout).toContain("kubectl -n gitmesh rollout status deployment/gitmesh-server-worker");
    expect(on.stdout).toContain("the server translates 0 jobs per type itself");
    expect(on.stdout).toContain("gitmesh_pipeline_queue_depth{type}");
    const hpa = await notes(CHART, [...WORKERS, "--set", "workers.autoscaling.enabled=true"]);
    expect(hpa.stdout).toContain("deployment/gitmesh-server-worker, 1 to 10 replicas");
    expect(hpa.stdout).toContain("kubectl get --raw /apis/external.metrics.k8s.io/v1beta1/namespaces/gitmesh/gitmesh_pipeline_queue_depth");
  });

  it.each([
    [["--set", "translationWorkers=-1"], "at '/translationWorkers': 'anyOf' failed\n  - at '/translationWorkers': value must be 'auto'\n  - at '/translationWorkers': minimum: got -1, want 0"],
    [["--set", "translationWorkers=65"], "at '/translationWorkers': maximum: got 65, want 64"],
    [["--set", "translationWorkers=some"], "at '/translationWorkers': got string, want integer"],
    [["--set", "workers.concurrency=0"], "at '/workers/concurrency': minimum: got 0, want 1"],
    [["--set", "workers.concurrency=65"], "at '/workers/concurrency': maximum: got 65, want 64"],
    [["--set", "workers.jobLockSeconds=0"], "at '/workers/jobLockSeconds': minimum: got 0, want 1"],
    [["--set", "workers.shutdownTimeoutSeconds=-1"], "at '/workers/shutdownTimeoutSeconds': minimum: got -1, want 0"],
    [["--set", "workers.replicas=0"], "at '/workers/replicas': minimum: got 0, want 1"],
    [["--set", "workers.enabled=yes"], "at '/workers/enabled': got string, want boolean"],
    [["--set", "workers.replica=3"], "at '/workers': additional properties 'replica' not allowed"],
    [["--set", "workers.autoscaling.targetQueueDepthPerWorker=0"], "at '/workers/autoscaling/targetQueueDepthPerWorker': minimum: got 0, want 1"],
    [["--set", "workers.autoscaling.maxReplicas=0"], "at '/workers/autoscaling/maxReplicas': minimum: got 0, want 1"],
    [["--set", "workers.autoscaling.keda.serverAddress=prometheus:9090"], "at '/workers/autoscaling/keda/serverAddress': 'prometheus:9090' does not match pattern"],
    [["--set", "workers.autoscaling.behavior.scaleSideways.x=1"], "at '/workers/autoscaling/behavior': additional properties 'scaleSideways' not allowed"],
    // maxUnavailable 0 would block every drain.
    [["--set", "podDisruptionBudget.maxUnavailable=0"], "at '/podDisruptionBudget/maxUnavailable': 'anyOf' failed\n  - at '/podDisruptionBudget/maxUnavailable': minimum: got 0, want 1"],
    [["--set", "workers.podDisruptionBudget.maxUnavailable=0%"], "at '/workers/podDisruptionBudget/maxUnavailable': '0%' does not match pattern '^([1-9][0-9]?|100)%$'"],
    [["--set", "podDisruptionBudget.minAvailable=half"], "at '/podDisruptionBudget/minAvailable': 'half' does not match pattern"],
    [["--set", "workers.podDisruptionBudget.maxAvailable=1"], "at '/workers/podDisruptionBudget': additional properties 'maxAvailable' not allowed"],
  ])("rejects values failing values.schema.json: %j", async (args, message) => {
    const r = await render(CHART, [...WORKERS, ...args]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("gitmesh-server:");
    expect(r.stderr).toContain(message);
  });
});
