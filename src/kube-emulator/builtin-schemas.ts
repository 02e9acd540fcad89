/**
 * The list semantics of the built-in kinds the emulator serves, as Kubernetes' OpenAPI publishes
 * them: which lists are merged by key (`x-kubernetes-list-type: map` + `-list-map-keys` for
 * server-side apply; `x-kubernetes-patch-merge-key` + `-patch-strategy: merge` for strategic merge
 * patch), which are sets, and the key defaults structured-merge-diff uses (`protocol: TCP`).
 * Lists not named here are atomic (replaced as a whole), as in Kubernetes. Only the list-bearing
 * paths are described; type validation of built-in kinds is in validation.ts.
 */
import type { Schema } from "./schema.js";

const obj = (properties: Record<string, Schema>): Schema => ({ type: "object", properties });

/** A list merged by key in both SSA (`keys`) and strategic merge patch (`mergeKey`, default the first key). */
const mapList = (keys: readonly string[], items: Schema = {}, mergeKey: string = keys[0]!, strategy = "merge"): Schema => ({
  type: "array",
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": keys,
  "x-kubernetes-patch-merge-key": mergeKey,
  "x-kubernetes-patch-strategy": strategy,
  items: { type: "object", ...items },
});

const PROTOCOL_TCP: Schema = { type: "string", default: "TCP" };

/** A set of scalars (`finalizers`): SSA owns each value, SMP unions them. */
const set: Schema = { type: "array", "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge", items: { type: "string" } };

const conditions = mapList(["type"]);

const OBJECT_META = obj({
  finalizers: set,
  ownerReferences: mapList(["uid"]),
});

const CONTAINER = obj({
  ports: mapList(["containerPort", "protocol"], { properties: { protocol: PROTOCOL_TCP } }, "containerPort"),
  env: mapList(["name"]),
  volumeMounts: mapList(["mountPath"]),
  volumeDevices: mapList(["devicePath"]),
});

const POD_SPEC = obj({
  containers: mapList(["name"], CONTAINER),
  initContainers: mapList(["name"], CONTAINER),
  ephemeralContainers: mapList(["name"], CONTAINER),
  volumes: mapList(["name"], {}, "name", "merge,retainKeys"),
  imagePullSecrets: mapList(["name"]),
  hostAliases: mapList(["ip"]),
  topologySpreadConstraints: mapList(["topologyKey", "whenUnsatisfiable"], {}, "topologyKey"),
  schedulingGates: mapList(["name"]),
  resourceClaims: mapList(["name"], {}, "name", "merge,retainKeys"),
});

const POD_TEMPLATE = obj({ metadata: OBJECT_META, spec: POD_SPEC });

const withMeta = (rest: Record<string, Schema>): Schema => obj({ metadata: OBJECT_META, ...rest });

const WORKLOAD = withMeta({ spec: obj({ template: POD_TEMPLATE }), status: obj({ conditions }) });

/** Keyed by `<group>/<Kind>` (core group: `/Kind`). */
export const BUILT_IN_SCHEMAS: Readonly<Record<string, Schema>> = {
  "/Pod": withMeta({ spec: POD_SPEC, status: obj({ conditions }) }),
  "/Service": withMeta({
    spec: obj({ ports: mapList(["port", "protocol"], { properties: { protocol: PROTOCOL_TCP } }, "port") }),
    status: obj({ conditions }),
  }),
  "/ServiceAccount": withMeta({ secrets: mapList(["name"]) }),
  "/Namespace": withMeta({ status: obj({ conditions }) }),
  "/Node": withMeta({ status: obj({ conditions, addresses: { type: "array", "x-kubernetes-patch-merge-key": "type", "x-kubernetes-patch-strategy": "merge" } }) }),
  "/Secret": withMeta({}),
  "/ConfigMap": withMeta({}),
  "/Endpoints": withMeta({}),
  "apps/Deployment": WORKLOAD,
  "apps/StatefulSet": WORKLOAD,
  "apps/DaemonSet": WORKLOAD,
  "coordination.k8s.io/Lease": withMeta({}),
  "rbac.authorization.k8s.io/Role": withMeta({}),
  "rbac.authorization.k8s.io/RoleBinding": withMeta({}),
  "autoscaling/HorizontalPodAutoscaler": withMeta({ status: obj({ conditions }) }),
  "policy/PodDisruptionBudget": withMeta({ status: obj({ conditions }) }),
};

/** The metadata part alone, for kinds without a schema (custom resources get it from their CRD plus this). */
export const OBJECT_META_SCHEMA: Schema = OBJECT_META;
