/**
 * The agent's narrow view of the Kubernetes API (controller-runtime style): a reader, a writer, and
 * a field-owner wrapper so that every server-side apply carries the same field manager. Everything
 * the agent does to a cluster goes through these interfaces; client-node stays behind them.
 * Objects crossing these interfaces are PLAIN JSON (what `kubectl get -o json` prints), never
 * client-node model instances.
 */
import { ApiException, createConfiguration, KubernetesObjectApi, PatchStrategy, ServerConfiguration, V1DeleteOptions, V1Preconditions, type KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { createApplyTransport } from "./kube-apply.js";
import { createConnectionPool, type ConnectionPool, type ConnectionPoolOptions } from "./kube-connections.js";

/** A Kubernetes object as plain JSON. */
export type KubeObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>; resourceVersion?: string; [k: string]: unknown };
};

/** Where a kind lives in the REST API. */
export interface KindRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
  /** Only in these namespaces (listed and watched per namespace, for kinds the agent may touch in a few namespaces only). */
  readonly namespaces?: readonly string[];
}

const core = (kind: string, plural: string, namespaced = true): KindRef => ({ apiVersion: "v1", kind, plural, namespaced });
const apps = (kind: string, plural: string): KindRef => ({ apiVersion: "apps/v1", kind, plural, namespaced: true });
const net = (kind: string, plural: string): KindRef => ({ apiVersion: "networking.istio.io/v1", kind, plural, namespaced: true });
const sec = (kind: string, plural: string): KindRef => ({ apiVersion: "security.istio.io/v1", kind, plural, namespaced: true });

/** Kinds discovery reads (ConfigMaps only in the control plane's namespace, see discovery.ts). */
export const KINDS = {
  Namespace: core("Namespace", "namespaces", false),
  Node: core("Node", "nodes", false),
  Service: core("Service", "services"),
  Pod: core("Pod", "pods"),
  ConfigMap: core("ConfigMap", "configmaps"),
  Secret: core("Secret", "secrets"),
  Deployment: apps("Deployment", "deployments"),
  StatefulSet: apps("StatefulSet", "statefulsets"),
  DaemonSet: apps("DaemonSet", "daemonsets"),
} as const;

/** The Istio kinds gitmesh writes (and discovers), in dependency order: what others refer to first. */
export const ISTIO_KINDS: readonly KindRef[] = [
  net("Gateway", "gateways"),
  net("ServiceEntry", "serviceentries"),
  net("WorkloadEntry", "workloadentries"),
  net("DestinationRule", "destinationrules"),
  net("Sidecar", "sidecars"),
  sec("PeerAuthentication", "peerauthentications"),
  sec("RequestAuthentication", "requestauthentications"),
  sec("AuthorizationPolicy", "authorizationpolicies"),
  // EnvoyFilters (CSRFPolicy) patch the routes of VirtualServices: after them. Istio serves them as v1alpha3 only.
  net("VirtualService", "virtualservices"),
  { apiVersion: "networking.istio.io/v1alpha3", kind: "EnvoyFilter", plural: "envoyfilters", namespaced: true },
];

const cluster = (apiVersion: string, kind: string, plural: string): KindRef => ({ apiVersion, kind, plural, namespaced: false });

/**
 * What an Istio installation consists of (IstioLifecycleManager / GatewayLifecycleManager output,
 * src/translate/LIFECYCLE.md), in apply order: the Sail operator's control planes first, then what
 * a gateway needs before its Deployment. Written only by an agent that manages Istio's installation
 * (`--manage-istio-install`, chart lifecycle.enabled).
 */
export const INSTALL_KINDS: readonly KindRef[] = [
  cluster("sailoperator.io/v1", "Istio", "istios"),
  cluster("sailoperator.io/v1", "IstioCNI", "istiocnis"),
  cluster("sailoperator.io/v1", "IstioRevisionTag", "istiorevisiontags"),
  core("ServiceAccount", "serviceaccounts"),
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", plural: "roles", namespaced: true },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", plural: "rolebindings", namespaced: true },
  core("Service", "services"),
  apps("Deployment", "deployments"),
  { apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler", plural: "horizontalpodautoscalers", namespaced: true },
  { apiVersion: "policy/v1", kind: "PodDisruptionBudget", plural: "poddisruptionbudgets", namespaced: true },
];

/** Parent kinds whose output installs Istio (the label `gitmesh.io/parent-kind` the server puts on every object). */
const INSTALL_PARENTS: ReadonlySet<string> = new Set(["IstioLifecycleManager", "GatewayLifecycleManager"]);

/** Whether an output object belongs to an Istio installation rather than to Istio's configuration. */
export function isInstallObject(o: { apiVersion: string; metadata: { labels?: Record<string, string> } }): boolean {
  return o.apiVersion.startsWith("sailoperator.io/") || INSTALL_PARENTS.has(o.metadata.labels?.["gitmesh.io/parent-kind"] ?? "");
}

/** Parent kinds whose output is the rate limiter's configuration (rate-limit.ts: ConfigMaps beside the rate limiter). */
const RATE_LIMIT_CONFIG_PARENTS: ReadonlySet<string> = new Set(["RateLimitServerConfig"]);

/** Whether an output object is a rate limiter's configuration (written only in the namespaces the agent is given for it). */
export function isRateLimitConfig(o: { kind: string; metadata: { labels?: Record<string, string> } }): boolean {
  return o.kind === "ConfigMap" && RATE_LIMIT_CONFIG_PARENTS.has(o.metadata.labels?.["gitmesh.io/parent-kind"] ?? "");
}

/** Whether an output object is OPA-Envoy's policy modules for glooAuth OPA (opa-auth.ts: ConfigMaps beside OPA-Envoy, under the same ConfigMap grant). */
export function isOpaPolicyConfig(o: { kind: string; metadata: { labels?: Record<string, string> } }): boolean {
  return o.kind === "ConfigMap" && o.metadata.labels?.["gitmesh.io/parent-kind"] === "ExtAuthPolicy" && o.metadata.labels["openpolicyagent.org/policy"] === "rego";
}

/** The kinds an agent writes (and owns, prunes, repairs), in apply order, given what it was allowed beyond Istio's configuration. */
export function writableKinds(options: { readonly manageIstioInstall?: boolean; readonly rateLimitConfigNamespaces?: readonly string[] }): readonly KindRef[] {
  const namespaces = options.rateLimitConfigNamespaces ?? [];
  return [...(options.manageIstioInstall === true ? INSTALL_KINDS : []), ...(namespaces.length > 0 ? [{ ...core("ConfigMap", "configmaps"), namespaces }] : []), ...ISTIO_KINDS];
}

/** REST path of a collection (for watches): `/apis/apps/v1/deployments`, `/api/v1/namespaces/x/configmaps`. */
export function collectionPath(ref: KindRef, namespace?: string): string {
  const base = ref.apiVersion.includes("/") ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
  return ref.namespaced && namespace !== undefined ? `${base}/namespaces/${namespace}/${ref.plural}` : `${base}/${ref.plural}`;
}

export function objectKey(o: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }): string {
  return `${o.apiVersion}/${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
}

/** Reads. */
export interface KubeReader {
  get(ref: KindRef, namespace: string | undefined, name: string): Promise<KubeObject | undefined>;
  list(ref: KindRef, options?: { namespace?: string; labelSelector?: string }): Promise<{ items: KubeObject[]; resourceVersion: string }>;
}

/** Writes, without a field manager of their own (see FieldOwnerWriter). */
export interface KubeWriter {
  /** Server-side apply; `dryRun`: validated and answered by the API server, not stored (default false). */
  apply(obj: KubeObject, options: { fieldManager: string; force: boolean; dryRun?: boolean }): Promise<KubeObject>;
  create(obj: KubeObject, options: { fieldManager: string }): Promise<KubeObject>;
  replace(obj: KubeObject, options: { fieldManager: string }): Promise<KubeObject>;
  /**
   * JSON merge patch (RFC 7386: lists replaced whole) of the object `patch` names (apiVersion, kind,
   * metadata.name/namespace; a metadata.uid or resourceVersion in it is a precondition). An Update
   * operation: it removes fields whatever manager owns them, which a server-side apply cannot.
   */
  mergePatch(patch: KubeObject, options: { fieldManager: string }): Promise<KubeObject>;
  /** false when the object is absent; `uid` is a precondition (409 Conflict when the live object has another uid). */
  delete(ref: KindRef, namespace: string | undefined, name: string, options?: DeleteOptions): Promise<boolean>;
}

export interface DeleteOptions {
  /** Delete only the object with this uid (DeleteOptions.preconditions.uid). */
  readonly uid?: string;
}

/** A writer bound to one field manager: every write the agent makes carries `gitmesh-agent`. */
export interface FieldOwnerWriter {
  readonly fieldManager: string;
  apply(obj: KubeObject, options?: { force?: boolean }): Promise<KubeObject>;
  create(obj: KubeObject): Promise<KubeObject>;
  replace(obj: KubeObject): Promise<KubeObject>;
  mergePatch(patch: KubeObject): Promise<KubeObject>;
  delete(ref: KindRef, namespace: string | undefined, name: string, options?: DeleteOptions): Promise<boolean>;
}

export const FIELD_MANAGER = "gitmesh-agent";

/** Wraps a writer so that every write carries `fieldManager`; applies force ownership by default (the agent owns its objects). */
export function withFieldOwner(writer: KubeWriter, fieldManager: string = FIELD_MANAGER): FieldOwnerWriter {
  return {
    fieldManager,
    apply: (obj, options) => writer.apply(obj, { fieldManager, force: options?.force ?? true }),
    create: (obj) => writer.create(obj, { fieldManager }),
    replace: (obj) => writer.replace(obj, { fieldManager }),
    mergePatch: (patch) => writer.mergePatch(patch, { fieldManager }),
    delete: (ref, namespace, name, options) => writer.delete(ref, namespace, name, options),
  };
}

/** HTTP status of a client-node error (undefined for network errors). */
export function statusOf(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const e = err as { statusCode?: unknown; code?: unknown } | undefined;
  if (typeof e?.statusCode === "number") return e.statusCode;
  if (typeof e?.code === "number") return e.code;
  return undefined;
}

/** The server's message in a client-node error (the Status `message`), without headers or bodies. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiException) {
    const body: unknown = err.body;
    let parsed: unknown = body;
    if (typeof body === "string") {
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = undefined;
      }
    }
    const msg = (parsed as { message?: unknown } | undefined)?.message;
    return `HTTP ${String(err.code)}${typeof msg === "string" ? `: ${msg}` : ""}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/** Plain JSON copy (client-node model instances → API JSON; Dates → RFC 3339). */
export function toPlain(o: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(o)) as Record<string, unknown>;
}

function withKind(o: unknown, ref: KindRef): KubeObject {
  const p = toPlain(o);
  p.apiVersion = ref.apiVersion;
  p.kind = ref.kind;
  return p as KubeObject;
}

export interface KubeClientOptions {
  /**
   * Connections to the API server (kube-connections.ts): kept alive, at most `maxSockets` at once
   * (default 64), shared by every request of this client. Default: a pool of its own.
   */
  readonly connections?: ConnectionPool | ConnectionPoolOptions;
}

/** KubernetesObjectApi over a configuration of our own (its default-namespace setup is protected). */
class ObjectApi extends KubernetesObjectApi {
  static over(kc: KubeConfig, pool: ConnectionPool): ObjectApi {
    const server = kc.getCurrentCluster()?.server;
    if (server === undefined) throw new Error("the kubeconfig has no current cluster");
    const api = new ObjectApi(
      createConfiguration({
        baseServer: new ServerConfiguration(server, {}),
        authMethods: { default: kc },
        // After the KubeConfig's authentication built this request's agent: send it over the pool instead.
        promiseMiddleware: [
          {
            pre: (ctx) => {
              const agent = pool.agentFor(ctx.getAgent());
              if (agent !== undefined) ctx.setAgent(agent);
              return Promise.resolve(ctx);
            },
            post: (res) => Promise.resolve(res),
          },
        ],
      }),
    );
    api.setDefaultNamespace(kc);
    return api;
  }

  /** The object's REST path (discovery tells the plural and whether it is namespaced; cached per apiVersion). */
  pathOf(spec: KubernetesObject): Promise<string> {
    return this.specUriPath(spec, "patch");
  }
}

/** Reader and writer over client-node's KubernetesObjectApi (one per KubeConfig), over kept-alive, bounded connections. */
export function createKubeClient(kc: KubeConfig, options: KubeClientOptions = {}): KubeReader & KubeWriter & { readonly connections: ConnectionPool } {
  const pool = options.connections !== undefined && "agentFor" in options.connections ? options.connections : createConnectionPool(options.connections);
  const api = ObjectApi.over(kc, pool);
  const thin = createApplyTransport(kc, pool);
  const refOf = (obj: KubeObject): KindRef => ({ apiVersion: obj.apiVersion, kind: obj.kind, plural: "", namespaced: obj.metadata.namespace !== undefined });
  const spec = (obj: KubeObject) => obj as unknown as KubernetesObject;
  const target = (ref: KindRef, namespace: string | undefined, name: string): KubeObject => ({
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
  });
  return {
    connections: pool,
    async get(ref, namespace, name) {
      try {
        const o = await api.read(target(ref, namespace, name) as unknown as Parameters<typeof api.read>[0]); // eslint-disable-line @typescript-eslint/no-unnecessary-type-assertion -- tsc (exactOptionalPropertyTypes) needs it
        return withKind(o, ref);
      } catch (err) {
        if (statusOf(err) === 404) return undefined;
        throw err;
      }
    },
    async list(ref, options = {}) {
      const res = await api.list(ref.apiVersion, ref.kind, options.namespace, undefined, undefined, undefined, undefined, options.labelSelector);
      return { items: res.items.map((i) => withKind(i, ref)), resourceVersion: res.metadata?.resourceVersion ?? "" };
    },
    async apply(obj, { fieldManager, force, dryRun = false }) {
      // Applies go straight over node:http(s) (kube-apply.ts); a cluster behind a proxy through client-node.
      const path = await api.pathOf(spec(obj));
      const sent = thin.apply(path, JSON.stringify(obj), { fieldManager, force, dryRun });
      if (sent !== undefined) {
        const o = (await sent) as Record<string, unknown>;
        o.apiVersion = obj.apiVersion;
        o.kind = obj.kind;
        return o as KubeObject;
      }
      const o = await api.patch(spec(obj), undefined, dryRun ? "All" : undefined, fieldManager, force, PatchStrategy.ServerSideApply);
      return withKind(o, refOf(obj));
    },
    async create(obj, { fieldManager }) {
      return withKind(await api.create(spec(obj), undefined, undefined, fieldManager), refOf(obj));
    },
    async replace(obj, { fieldManager }) {
      return withKind(await api.replace(spec(obj), undefined, undefined, fieldManager), refOf(obj));
    },
    async mergePatch(patch, { fieldManager }) {
      return withKind(await api.patch(spec(patch), undefined, undefined, fieldManager, undefined, PatchStrategy.MergePatch), refOf(patch));
    },
    async delete(ref, namespace, name, options) {
      try {
        let body: V1DeleteOptions | undefined;
        if (options?.uid !== undefined) {
          body = new V1DeleteOptions();
          body.preconditions = new V1Preconditions();
          body.preconditions.uid = options.uid;
        }
        await api.delete(spec(target(ref, namespace, name)), undefined, undefined, undefined, undefined, undefined, body);
        return true;
      } catch (err) {
        if (statusOf(err) === 404) return false;
        throw err;
      }
    },
  };
}
