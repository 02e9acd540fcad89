/**
 * Request bodies in the Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`), which
 * kubectl ≥ 1.32 sends for built-in kinds (`kubectl create configmap|secret|deployment|…`,
 * `kubectl run`): the `k8s\0` magic, a `runtime.Unknown` envelope (typeMeta, raw), and the typed
 * message in `raw`, decoded here into the object's JSON form so the rest of the emulator sees
 * what a JSON client would have sent.
 *
 * Only the messages and fields in `MESSAGES` are known (what kubectl's generators and typical
 * objects of the served kinds carry). Anything else — another kind, or a field number not in the
 * table — is answered 415 UnsupportedMediaType, as a real server answers a body it cannot decode,
 * naming what is missing; it is never dropped silently.
 *
 * Decoding follows what the real server's Go types do on the way to JSON: scalars that hold their
 * zero value are omitted (gogo-protobuf writes non-pointer fields even when empty; Go's
 * `omitempty` then leaves them out), except those marked `?` in the table (pointers in the Go
 * types: an explicit `replicas: 0` is kept); nested messages are kept even when empty (`{}`), a
 * zero `Time` is omitted (Go writes `null`).
 */
import { KubeApiError, StatusReason } from "./status.js";
import type { Json, JsonObject } from "./patch.js";

export const PROTOBUF_TYPE = "application/vnd.kubernetes.protobuf";

/**
 * Message schemas: `<field number> <json name> <type>`; types are `string`, `bytes` (base64 in
 * JSON), `int32`, `int64`, `bool`, a message name, `[]T` (repeated), `map<T>` (string keys); a
 * trailing `?` keeps a zero value (a pointer field in the Go type). `@inline` fields are embedded
 * Go structs whose fields JSON inlines. Field numbers are the Kubernetes API's protobuf wire schema.
 */
const MESSAGES: Record<string, string> = {
  // meta/v1, runtime, util/intstr, api/resource
  ObjectMeta:
    "1 name string, 2 generateName string, 3 namespace string, 4 selfLink string, 5 uid string, 6 resourceVersion string, 7 generation int64, 8 creationTimestamp Time, 9 deletionTimestamp Time, 10 deletionGracePeriodSeconds int64?, 11 labels map<string>, 12 annotations map<string>, 13 ownerReferences []OwnerReference, 14 finalizers []string",
  OwnerReference: "1 kind string, 3 name string, 4 uid string, 5 apiVersion string, 6 controller bool?, 7 blockOwnerDeletion bool?",
  LabelSelector: "1 matchLabels map<string>, 2 matchExpressions []LabelSelectorRequirement",
  LabelSelectorRequirement: "1 key string, 2 operator string, 3 values []string",
  Condition: "1 type string, 2 status string, 3 observedGeneration int64, 4 lastTransitionTime Time, 5 reason string, 6 message string",
  DeleteOptions: "1 gracePeriodSeconds int64?, 2 preconditions Preconditions, 3 orphanDependents bool?, 4 propagationPolicy string?, 5 dryRun []string",
  Preconditions: "1 uid string?, 2 resourceVersion string?",
  // core/v1
  Namespace: "1 metadata ObjectMeta, 2 spec NamespaceSpec, 3 status NamespaceStatus",
  NamespaceSpec: "1 finalizers []string",
  NamespaceStatus: "1 phase string",
  ConfigMap: "1 metadata ObjectMeta, 2 data map<string>, 3 binaryData map<bytes>, 4 immutable bool?",
  Secret: "1 metadata ObjectMeta, 2 data map<bytes>, 3 type string, 4 stringData map<string>, 5 immutable bool?",
  ServiceAccount: "1 metadata ObjectMeta, 2 secrets []ObjectReference, 3 imagePullSecrets []LocalObjectReference, 4 automountServiceAccountToken bool?",
  ObjectReference: "1 kind string, 2 namespace string, 3 name string, 4 uid string, 5 apiVersion string, 6 resourceVersion string, 7 fieldPath string",
  LocalObjectReference: "1 name string",
  Service: "1 metadata ObjectMeta, 2 spec ServiceSpec, 3 status ServiceStatus",
  ServiceSpec:
    "1 ports []ServicePort, 2 selector map<string>, 3 clusterIP string, 4 type string, 5 externalIPs []string, 7 sessionAffinity string, 8 loadBalancerIP string, 9 loadBalancerSourceRanges []string, 10 externalName string, 11 externalTrafficPolicy string, 12 healthCheckNodePort int32, 13 publishNotReadyAddresses bool, 17 ipFamilyPolicy string?, 18 clusterIPs []string, 19 ipFamilies []string, 20 allocateLoadBalancerNodePorts bool?, 21 loadBalancerClass string?, 22 internalTrafficPolicy string?, 23 trafficDistribution string?",
  ServicePort: "1 name string, 2 protocol string, 3 port int32, 4 targetPort IntOrString, 5 nodePort int32, 6 appProtocol string?",
  ServiceStatus: "1 loadBalancer LoadBalancerStatus, 2 conditions []Condition",
  LoadBalancerStatus: "",
  Endpoints: "1 metadata ObjectMeta, 2 subsets []EndpointSubset",
  EndpointSubset: "1 addresses []EndpointAddress, 2 notReadyAddresses []EndpointAddress, 3 ports []EndpointPort",
  EndpointAddress: "1 ip string, 2 targetRef ObjectReference, 3 hostname string, 4 nodeName string?",
  EndpointPort: "1 name string, 2 port int32, 3 protocol string, 4 appProtocol string?",
  Pod: "1 metadata ObjectMeta, 2 spec PodSpec, 3 status PodStatus",
  PodTemplateSpec: "1 metadata ObjectMeta, 2 spec PodSpec",
  PodSpec:
    "1 volumes []Volume, 2 containers []Container, 3 restartPolicy string, 4 terminationGracePeriodSeconds int64?, 5 activeDeadlineSeconds int64?, 6 dnsPolicy string, 7 nodeSelector map<string>, 8 serviceAccountName string, 9 serviceAccount string, 10 nodeName string, 11 hostNetwork bool, 12 hostPID bool, 13 hostIPC bool, 15 imagePullSecrets []LocalObjectReference, 16 hostname string, 17 subdomain string, 19 schedulerName string, 20 initContainers []Container, 21 automountServiceAccountToken bool?, 22 tolerations []Toleration, 24 priorityClassName string, 25 priority int32?, 27 shareProcessNamespace bool?, 29 runtimeClassName string?, 30 enableServiceLinks bool?, 31 preemptionPolicy string?",
  PodStatus: "1 phase string, 3 message string, 4 reason string, 5 hostIP string, 6 podIP string, 9 qosClass string, 11 nominatedNodeName string, 14 resize string, 17 observedGeneration int64",
  Container:
    "1 name string, 2 image string, 3 command []string, 4 args []string, 5 workingDir string, 6 ports []ContainerPort, 7 env []EnvVar, 8 resources ResourceRequirements, 9 volumeMounts []VolumeMount, 13 terminationMessagePath string, 14 imagePullPolicy string, 16 stdin bool, 17 stdinOnce bool, 18 tty bool, 20 terminationMessagePolicy string, 24 restartPolicy string?",
  ContainerPort: "1 name string, 2 hostPort int32, 3 containerPort int32, 4 protocol string, 5 hostIP string",
  EnvVar: "1 name string, 2 value string",
  ResourceRequirements: "1 limits map<Quantity>, 2 requests map<Quantity>",
  VolumeMount: "1 name string, 2 readOnly bool, 3 mountPath string, 4 subPath string, 5 mountPropagation string?, 6 subPathExpr string, 7 recursiveReadOnly string?",
  Volume: "1 name string, 2 volumeSource VolumeSource @inline",
  VolumeSource: "2 emptyDir EmptyDirVolumeSource, 6 secret SecretVolumeSource, 19 configMap ConfigMapVolumeSource",
  EmptyDirVolumeSource: "1 medium string, 2 sizeLimit Quantity",
  SecretVolumeSource: "1 secretName string, 2 items []KeyToPath, 3 defaultMode int32?, 4 optional bool?",
  ConfigMapVolumeSource: "1 localObjectReference LocalObjectReference @inline, 2 items []KeyToPath, 3 defaultMode int32?, 4 optional bool?",
  KeyToPath: "1 key string, 2 path string, 3 mode int32?",
  Toleration: "1 key string, 2 operator string, 3 value string, 4 effect string, 5 tolerationSeconds int64?",
  // apps/v1
  Deployment: "1 metadata ObjectMeta, 2 spec DeploymentSpec, 3 status DeploymentStatus",
  DeploymentSpec:
    "1 replicas int32?, 2 selector LabelSelector, 3 template PodTemplateSpec, 4 strategy DeploymentStrategy, 5 minReadySeconds int32, 6 revisionHistoryLimit int32?, 7 paused bool, 9 progressDeadlineSeconds int32?",
  DeploymentStrategy: "1 type string, 2 rollingUpdate RollingUpdateDeployment",
  RollingUpdateDeployment: "1 maxUnavailable IntOrString, 2 maxSurge IntOrString",
  DeploymentStatus:
    "1 observedGeneration int64, 2 replicas int32, 3 updatedReplicas int32, 4 availableReplicas int32, 5 unavailableReplicas int32, 7 readyReplicas int32, 8 collisionCount int32?, 9 terminatingReplicas int32?",
  // rbac/v1
  Role: "1 metadata ObjectMeta, 2 rules []PolicyRule",
  PolicyRule: "1 verbs []string, 2 apiGroups []string, 3 resources []string, 4 resourceNames []string, 5 nonResourceURLs []string",
  RoleBinding: "1 metadata ObjectMeta, 2 subjects []Subject, 3 roleRef RoleRef",
  Subject: "1 kind string, 2 apiGroup string, 3 name string, 4 namespace string",
  RoleRef: "1 apiGroup string, 2 kind string, 3 name string",
  // policy/v1
  PodDisruptionBudget: "1 metadata ObjectMeta, 2 spec PodDisruptionBudgetSpec, 3 status PodDisruptionBudgetStatus",
  PodDisruptionBudgetSpec: "1 minAvailable IntOrString, 2 selector LabelSelector, 3 maxUnavailable IntOrString, 4 unhealthyPodEvictionPolicy string?",
  PodDisruptionBudgetStatus:
    "1 observedGeneration int64, 2 disruptedPods map<Time>, 3 disruptionsAllowed int32, 4 currentHealthy int32, 5 desiredHealthy int32, 6 expectedPods int32, 7 conditions []Condition",
  // coordination.k8s.io/v1
  Lease: "1 metadata ObjectMeta, 2 spec LeaseSpec",
  LeaseSpec:
    "1 holderIdentity string?, 2 leaseDurationSeconds int32?, 3 acquireTime MicroTime, 4 renewTime MicroTime, 5 leaseTransitions int32?, 6 strategy string?, 7 preferredHolder string?",
};

interface FieldSpec {
  readonly name: string;
  readonly type: string;
  readonly repeated: boolean;
  readonly map: boolean;
  readonly keepZero: boolean;
  readonly inline: boolean;
}

const SCHEMAS = new Map<string, Map<number, FieldSpec>>();
for (const [message, text] of Object.entries(MESSAGES)) {
  const fields = new Map<number, FieldSpec>();
  for (const part of text.split(",").map((p) => p.trim()).filter((p) => p !== "")) {
    const m = /^(\d+) (\w+) (\[\])?(map<)?(\w+)>?(\?)?( @inline)?$/.exec(part);
    if (m === null) throw new Error(`kube-emulator protobuf table: cannot read "${part}" in ${message}`);
    fields.set(Number(m[1]), { name: m[2]!, repeated: m[3] !== undefined, map: m[4] !== undefined, type: m[5]!, keepZero: m[6] !== undefined, inline: m[7] !== undefined });
  }
  SCHEMAS.set(message, fields);
}

const SCALARS = new Set(["string", "bytes", "int32", "int64", "bool"]);

function unsupported(detail: string): KubeApiError {
  return new KubeApiError(
    415,
    StatusReason.UnsupportedMediaType,
    `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (kube-emulator: ${detail}; send JSON)`,
  );
}

function malformed(detail: string): KubeApiError {
  return new KubeApiError(400, StatusReason.BadRequest, `the request body could not be decoded: protobuf: ${detail}`);
}

/** A protobuf reader over one message's bytes. */
class Reader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw malformed("truncated varint");
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 63n) throw malformed("varint too long");
    }
  }

  bytes(): Uint8Array {
    const n = Number(this.varint());
    if (this.pos + n > this.buf.length) throw malformed("truncated field");
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw malformed(`unsupported wire type ${wire}`);
  }
}

type Raw = { wire: number; value: bigint | Uint8Array };

/** Splits a message into its fields, in wire order. */
function fieldsOf(buf: Uint8Array): [number, Raw][] {
  const r = new Reader(buf);
  const out: [number, Raw][] = [];
  while (!r.done) {
    const tag = Number(r.varint());
    const num = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) out.push([num, { wire, value: r.varint() }]);
    else if (wire === 2) out.push([num, { wire, value: r.bytes() }]);
    else r.skip(wire);
  }
  return out;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function scalar(type: string, raw: Raw, where: string): Json {
  if (type === "string" || type === "bytes") {
    if (!(raw.value instanceof Uint8Array)) throw malformed(`${where}: expected a length-delimited value`);
    if (type === "bytes") return Buffer.from(raw.value).toString("base64");
    try {
      return utf8.decode(raw.value);
    } catch {
      throw malformed(`${where}: invalid UTF-8`);
    }
  }
  if (typeof raw.value !== "bigint") throw malformed(`${where}: expected a varint`);
  if (type === "bool") return raw.value !== 0n;
  if (type === "int32") return Number(BigInt.asIntN(32, raw.value));
  return Number(BigInt.asIntN(64, raw.value));
}

/** Packed repeated scalars (one length-delimited run of varints). */
function packed(type: string, raw: Raw, where: string): Json[] {
  if (type === "string" || type === "bytes" || !(raw.value instanceof Uint8Array)) return [scalar(type, raw, where)];
  const r = new Reader(raw.value);
  const out: Json[] = [];
  while (!r.done) out.push(scalar(type, { wire: 0, value: r.varint() }, where));
  return out;
}

function isZero(v: Json): boolean {
  return v === "" || v === 0 || v === false;
}

function time(buf: Uint8Array, micro: boolean): Json | undefined {
  let seconds = 0;
  let nanos = 0;
  for (const [num, raw] of fieldsOf(buf)) {
    if (typeof raw.value !== "bigint") continue;
    if (num === 1) seconds = Number(BigInt.asIntN(64, raw.value));
    if (num === 2) nanos = Number(BigInt.asIntN(32, raw.value));
  }
  if (seconds === 0 && nanos === 0) return undefined;
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  return micro ? `${base}.${String(Math.floor(nanos / 1000)).padStart(6, "0")}Z` : `${base}Z`;
}

/** Decodes a value of a message type; undefined means "omit" (a zero Time). */
function value(type: string, raw: Raw, where: string): Json | undefined {
  if (SCALARS.has(type)) return scalar(type, raw, where);
  if (!(raw.value instanceof Uint8Array)) throw malformed(`${where}: expected a message`);
  switch (type) {
    case "Time":
      return time(raw.value, false);
    case "MicroTime":
      return time(raw.value, true);
    case "Quantity": {
      const s = fieldsOf(raw.value).find(([n]) => n === 1);
      return s === undefined ? "0" : scalar("string", s[1], where);
    }
    case "IntOrString": {
      let kind = 0n;
      let int = 0;
      let str = "";
      for (const [n, r] of fieldsOf(raw.value)) {
        if (n === 1 && typeof r.value === "bigint") kind = r.value;
        if (n === 2) int = scalar("int32", r, where) as number;
        if (n === 3) str = scalar("string", r, where) as string;
      }
      return kind === 1n ? str : int;
    }
    default:
      return message(type, raw.value, where);
  }
}

function message(type: string, buf: Uint8Array, where: string): JsonObject {
  const schema = SCHEMAS.get(type);
  if (schema === undefined) throw unsupported(`protobuf message ${type} is not emulated`);
  const out: JsonObject = {};
  for (const [num, raw] of fieldsOf(buf)) {
    const f = schema.get(num);
    if (f === undefined) throw unsupported(`protobuf field ${num} of ${type} (at ${where}) is not emulated`);
    const path = `${where}.${f.name}`;
    if (f.map) {
      if (!(raw.value instanceof Uint8Array)) throw malformed(`${path}: expected a map entry`);
      let key = "";
      let v: Json | undefined = f.type === "string" || f.type === "bytes" ? "" : undefined;
      for (const [n, r] of fieldsOf(raw.value)) {
        if (n === 1) key = scalar("string", r, path) as string;
        if (n === 2) v = value(f.type, r, `${path}[${key}]`);
      }
      const m = (out[f.name] ??= {}) as JsonObject;
      m[key] = v ?? null;
      continue;
    }
    if (f.repeated) {
      const list = (out[f.name] ??= []) as Json[];
      if (SCALARS.has(f.type)) list.push(...packed(f.type, raw, path));
      else {
        const v = value(f.type, raw, path);
        if (v !== undefined) list.push(v);
      }
      continue;
    }
    const v = value(f.type, raw, path);
    if (v === undefined || (SCALARS.has(f.type) && !f.keepZero && isZero(v))) {
      Reflect.deleteProperty(out, f.name);
      continue;
    }
    if (f.inline && typeof v === "object" && v !== null && !Array.isArray(v)) Object.assign(out, v);
    else out[f.name] = v;
  }
  return out;
}

const MAGIC = [0x6b, 0x38, 0x73, 0x00]; // "k8s\0"

/**
 * Decodes a protobuf request body into the object's JSON form. Throws 415 for a kind or field the
 * table does not know, 400 for bytes that are not a Kubernetes protobuf envelope.
 */
export function decodeProtobuf(body: Uint8Array): JsonObject {
  if (body.length < MAGIC.length || MAGIC.some((b, i) => body[i] !== b)) throw malformed("missing the k8s\\0 prefix");
  let apiVersion = "";
  let kind = "";
  let raw: Uint8Array | undefined;
  for (const [num, f] of fieldsOf(body.subarray(MAGIC.length))) {
    if (num === 1 && f.value instanceof Uint8Array) {
      for (const [n, r] of fieldsOf(f.value)) {
        if (n === 1) apiVersion = scalar("string", r, "typeMeta.apiVersion") as string;
        if (n === 2) kind = scalar("string", r, "typeMeta.kind") as string;
      }
    }
    if (num === 2 && f.value instanceof Uint8Array) raw = f.value;
    if (num === 3 && f.value instanceof Uint8Array && f.value.length > 0) throw unsupported("protobuf content encodings are not emulated");
  }
  if (kind === "" || raw === undefined) throw malformed("the envelope has no kind or no object");
  const obj = message(kind, raw, kind);
  return { ...(apiVersion === "" ? {} : { apiVersion }), kind, ...obj };
}
