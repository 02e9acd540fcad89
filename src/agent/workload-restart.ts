/**
 * RootTrustPolicy `autoRestartPods`: after the agent wrote a new `cacerts` for a mesh, restart what
 * must pick it up — istiod of that mesh first, then every Deployment, StatefulSet and DaemonSet in the
 * namespaces injected by that mesh — the way `kubectl rollout restart` does: set
 * `spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"]` (a server-side apply
 * patch with its own field manager, so nothing else of the workload is touched or owned).
 *
 * Rate limit: one restart round per mesh per `minIntervalMs` (default 10 minutes); a round asked for
 * sooner runs when the interval has passed (one pending round at most). Between istiod and the
 * workloads the restarter waits (at most `istiodRolloutTimeoutMs`) until istiod's rollout is done, so
 * new pods get certificates from the new CA.
 *
 * RBAC: `list` on namespaces and workloads (discovery has it cluster-wide) and `patch` on apps
 * deployments, statefulsets and daemonsets — the agent chart grants `patch` only with
 * `autoRestartPods: true`, and only where needed: istiod's Deployments by name in the Istio namespace
 * (istio.istiodDeployments) and the workloads of `istio.restartNamespaces` (a Role in each; RBAC cannot
 * narrow a patch to one annotation, nor by label). `namespaces` is that list: an injected namespace
 * outside it is named in a warning and left alone, never attempted.
 */
import { describeError, type Logger } from "../core/index.js";
import { KINDS, type FieldOwnerWriter, type KubeObject, type KubeReader, type KindRef } from "./kube.js";

export const RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt";
export const RESTART_FIELD_MANAGER = "gitmesh-agent-restart";

export interface WorkloadRestarterOptions {
  readonly reader: KubeReader;
  /** A writer bound to RESTART_FIELD_MANAGER (withFieldOwner(client, RESTART_FIELD_MANAGER)). */
  readonly writer: FieldOwnerWriter;
  /** The only namespaces whose workloads may be restarted (chart istio.restartNamespaces); absent: every injected namespace. */
  readonly namespaces?: readonly string[];
  /** Smallest time between two restart rounds of one mesh (default 600 000 ms). */
  readonly minIntervalMs?: number;
  /** How long to wait for istiod's rollout before restarting workloads (default 120 000 ms; 0 = do not wait). */
  readonly istiodRolloutTimeoutMs?: number;
  /** Poll interval while waiting for istiod (default 2000 ms). */
  readonly pollMs?: number;
  readonly now?: () => number;
  readonly logger: Logger;
}

/** A mesh whose workloads pick up its `cacerts`. */
export interface MeshRef {
  /** istiod's namespace (where `cacerts` is). */
  readonly namespace: string;
  /** Istio revision ("" = default). */
  readonly revision: string;
}

export interface RestartRound {
  readonly mesh: MeshRef;
  /** "<Kind>/<namespace>/<name>" in the order they were restarted (istiod first). */
  readonly restarted: readonly string[];
  readonly errors: readonly string[];
  /** Injected namespaces left alone: outside `namespaces` (chart istio.restartNamespaces). */
  readonly skipped?: readonly string[];
}

export interface WorkloadRestarter {
  /** Asks for a restart round of a mesh; resolves when it ran (now, or after the rate-limit interval). */
  request(mesh: MeshRef): Promise<RestartRound>;
  /** Cancels pending rounds (the agent stops). */
  stop(): void;
}

const WORKLOAD_KINDS: readonly KindRef[] = [KINDS.Deployment, KINDS.StatefulSet, KINDS.DaemonSet];

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export function createWorkloadRestarter(options: WorkloadRestarterOptions): WorkloadRestarter {
  const log = options.logger;
  const now = options.now ?? Date.now;
  const minIntervalMs = options.minIntervalMs ?? 600_000;
  const rolloutTimeoutMs = options.istiodRolloutTimeoutMs ?? 120_000;
  const pollMs = options.pollMs ?? 2000;
  const last = new Map<string, number>();
  const pending = new Map<string, { timer: NodeJS.Timeout; promise: Promise<RestartRound> }>();
  let stopped = false;

  async function patch(kind: KindRef, obj: KubeObject, at: string): Promise<void> {
    await options.writer.apply({
      apiVersion: kind.apiVersion,
      kind: kind.kind,
      metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace! },
      spec: { template: { metadata: { annotations: { [RESTARTED_AT_ANNOTATION]: at } } } },
    });
  }

  async function rolledOut(namespace: string, name: string): Promise<boolean> {
    const d = await options.reader.get(KINDS.Deployment, namespace, name);
    if (!d) return true;
    const status = (d.status ?? {}) as { observedGeneration?: number; updatedReplicas?: number; availableReplicas?: number };
    const replicas = ((d.spec ?? {}) as { replicas?: number }).replicas ?? 1;
    const generation = typeof (d.metadata as { generation?: unknown }).generation === "number" ? ((d.metadata as { generation?: number }).generation ?? 0) : 0;
    return (status.observedGeneration ?? 0) >= generation && (status.updatedReplicas ?? 0) >= replicas && (status.availableReplicas ?? 0) >= replicas;
  }

  const isIstiodOf = (mesh: MeshRef) => (d: KubeObject) => {
    const labels = d.metadata.labels ?? {};
    if (labels.app !== "istiod") return false;
    const rev = labels["istio.io/rev"] ?? "default";
    return mesh.revision === "" ? rev === "default" : rev === mesh.revision;
  };

  const injectedBy = (mesh: MeshRef) => (ns: KubeObject) => {
    const labels = ns.metadata.labels ?? {};
    const rev = labels["istio.io/rev"];
    if (rev !== undefined) return rev === (mesh.revision === "" ? "default" : mesh.revision);
    return labels["istio-injection"] === "enabled" && (mesh.revision === "" || mesh.revision === "default");
  };

  async function round(mesh: MeshRef): Promise<RestartRound> {
    const restarted: string[] = [];
    const errors: string[] = [];
    const at = new Date(now()).toISOString();
    const attempt = async (kind: KindRef, obj: KubeObject) => {
      const key = `${kind.kind}/${obj.metadata.namespace ?? ""}/${obj.metadata.name}`;
      try {
        await patch(kind, obj, at);
        restarted.push(key);
      } catch (err) {
        errors.push(`${key}: ${describeError(err)}`);
      }
    };
    // 1. istiod of this mesh.
    const istiods = (await options.reader.list(KINDS.Deployment, { namespace: mesh.namespace })).items.filter(isIstiodOf(mesh));
    for (const d of istiods) await attempt(KINDS.Deployment, d);
    if (rolloutTimeoutMs > 0) {
      const deadline = now() + rolloutTimeoutMs;
      for (const d of istiods) {
        while (!stopped && !(await rolledOut(mesh.namespace, d.metadata.name).catch(() => false)) && now() < deadline) await sleep(pollMs);
      }
      if (now() >= deadline) log.warn("istiod did not finish its rollout in time; restarting the workloads anyway", { mesh: mesh.namespace, revision: mesh.revision, timeoutMs: rolloutTimeoutMs });
    }
    // 2. workloads of the namespaces this mesh injects.
    const injected = (await options.reader.list(KINDS.Namespace)).items.filter(injectedBy(mesh)).map((n) => n.metadata.name).filter((n) => n !== mesh.namespace).sort();
    const allowed = options.namespaces === undefined ? undefined : new Set(options.namespaces);
    const namespaces = allowed === undefined ? injected : injected.filter((n) => allowed.has(n));
    const outside = injected.filter((n) => !namespaces.includes(n));
    if (outside.length > 0) log.warn("injected namespaces outside istio.restartNamespaces were not restarted: restart their workloads yourself, or add them to istio.restartNamespaces", { mesh: mesh.namespace, revision: mesh.revision, namespaces: outside.join(",") });
    for (const ns of namespaces) {
      for (const kind of WORKLOAD_KINDS) {
        const items = (await options.reader.list(kind, { namespace: ns })).items.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
        for (const obj of items) await attempt(kind, obj);
      }
    }
    if (errors.length > 0) log.error("some workloads could not be restarted for the new cacerts", { mesh: mesh.namespace, revision: mesh.revision, errors: errors.length, first: errors[0] });
    log.info("restarted workloads for the new Istio intermediate CA", { mesh: mesh.namespace, revision: mesh.revision, restarted: restarted.length, istiod: istiods.length });
    return { mesh, restarted, errors, ...(outside.length > 0 ? { skipped: outside } : {}) };
  }

  return {
    request(mesh) {
      stopped = false;
      const key = `${mesh.namespace}/${mesh.revision}`;
      const queued = pending.get(key);
      if (queued) return queued.promise;
      const prev = last.get(key);
      const wait = prev === undefined ? 0 : Math.max(0, prev + minIntervalMs - now());
      const run = () => {
        pending.delete(key);
        last.set(key, now());
        return round(mesh);
      };
      if (wait === 0) {
        last.set(key, now());
        return round(mesh);
      }
      log.info("restart of workloads for the new cacerts deferred by the rate limit", { mesh: mesh.namespace, revision: mesh.revision, inMs: wait });
      let timer!: NodeJS.Timeout;
      const promise = new Promise<RestartRound>((resolve, reject) => {
        timer = setTimeout(() => {
          if (stopped) return resolve({ mesh, restarted: [], errors: ["agent stopped"] });
          run().then(resolve, reject);
        }, wait);
        timer.unref();
      });
      pending.set(key, { timer, promise });
      return promise;
    },
    stop() {
      stopped = true;
      for (const p of pending.values()) clearTimeout(p.timer);
      pending.clear();
    },
  };
}
