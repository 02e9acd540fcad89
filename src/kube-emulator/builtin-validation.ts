/**
 * Validation of the built-in kinds, in the two stages a real API server has:
 *
 * 1. Decoding (400 BadRequest): the object must fit the kind's OpenAPI types — taken from
 *    @kubernetes/client-node's generated models (`attributeTypeMap`: every field's JSON name and
 *    type, generated from Kubernetes' OpenAPI). A wrong type is `json: cannot unmarshal …`;
 *    `byte` fields must be base64; `Time` must be RFC 3339 and `MicroTime` exactly
 *    `2006-01-02T15:04:05.000000Z07:00`. Unknown fields are dropped (and reported, for the
 *    `fieldValidation` warning or Strict refusal).
 * 2. Validation (422 Invalid): the rules clients trip over — label and annotation keys and values,
 *    object names by kind (RFC 1123 labels for Services and Namespaces), Secret and ConfigMap keys, Secret type
 *    immutability and the keys its type requires, a workload's selector matching its template,
 *    container names and images, Service ports.
 *
 * What Kubernetes validates beyond this is not emulated (see README).
 */
import * as clientNode from "@kubernetes/client-node";
import { isObject, type Json, type JsonObject } from "./patch.js";
import type { ResourceKind } from "./kinds.js";
import type { StatusCause } from "./status.js";

interface Attribute {
  readonly baseName: string;
  readonly type: string;
  readonly format: string;
}

/** The client-node model of each built-in kind, by `<group>/<Kind>`. */
const MODEL_OF: Readonly<Record<string, string>> = {
  "/Namespace": "V1Namespace",
  "/Node": "V1Node",
  "/Service": "V1Service",
  "/Pod": "V1Pod",
  "/Secret": "V1Secret",
  "/ConfigMap": "V1ConfigMap",
  "/Endpoints": "V1Endpoints",
  "/ServiceAccount": "V1ServiceAccount",
  "apps/Deployment": "V1Deployment",
  "apps/StatefulSet": "V1StatefulSet",
  "apps/DaemonSet": "V1DaemonSet",
  "coordination.k8s.io/Lease": "V1Lease",
  "rbac.authorization.k8s.io/Role": "V1Role",
  "rbac.authorization.k8s.io/RoleBinding": "V1RoleBinding",
  "autoscaling/HorizontalPodAutoscaler": "V2HorizontalPodAutoscaler",
  "policy/PodDisruptionBudget": "V1PodDisruptionBudget",
};

const models = clientNode as unknown as Record<string, unknown>;
const attributeCache = new Map<string, ReadonlyMap<string, Attribute> | undefined>();

function attributesOf(model: string): ReadonlyMap<string, Attribute> | undefined {
  if (attributeCache.has(model)) return attributeCache.get(model);
  const cls = models[model] as { getAttributeTypeMap?: () => Attribute[] } | undefined;
  const list = typeof cls?.getAttributeTypeMap === "function" ? cls.getAttributeTypeMap() : undefined;
  const map = list === undefined ? undefined : new Map(list.map((a) => [a.baseName, a]));
  attributeCache.set(model, map);
  return map;
}

/** Quantity maps: client-node types their values as strings, Kubernetes also takes JSON numbers. */
const QUANTITY_MAPS = new Set(["limits", "requests", "capacity", "allocatable", "overhead", "hard", "used", "allocatedResources"]);

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export interface DecodeCheck {
  /** The first decoding error (400), as the Go JSON decoder words it. */
  readonly error?: string;
  /** Unknown fields, already removed from the object (`spec.foo`). */
  readonly unknown: string[];
}

function jsonType(v: Json): string {
  if (Array.isArray(v)) return "array";
  if (v === null) return "null";
  if (typeof v === "object") return "object";
  return typeof v;
}

const goTypes: Record<string, string> = { string: "string", boolean: "bool", "number:int32": "int32", "number:int64": "int64", "number:double": "float64", number: "int32" };

/**
 * Checks (and prunes) a built-in object against its model's types. Returns the decoding error and
 * the unknown fields; `obj` loses its unknown fields in place.
 */
export function decodeBuiltIn(kind: ResourceKind, obj: JsonObject): DecodeCheck {
  const model = MODEL_OF[`${kind.group}/${kind.kind}`];
  const unknown: string[] = [];
  if (model === undefined) return { unknown };
  let error: string | undefined;
  const fail = (message: string): void => {
    error ??= message;
  };
  const walk = (v: Json, type: string, format: string, path: string, struct: string, field: string): void => {
    if (v === null || error !== undefined) return;
    const at = `Go struct field ${struct}.${path} of type`;
    const array = /^Array<(.+)>$/.exec(type);
    const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
    if (array !== null) {
      if (!Array.isArray(v)) return fail(`json: cannot unmarshal ${jsonType(v)} into ${at} []${array[1]!.replace(/^V\d\w*?(?=[A-Z])/, "")}`);
      v.forEach((el) => walk(el, array[1]!, "", path, struct, field));
      return;
    }
    if (map !== null) {
      if (!isObject(v)) return fail(`json: cannot unmarshal ${jsonType(v)} into ${at} map[string]${map[1] === "string" ? "string" : map[1]!}`);
      for (const [k, val] of Object.entries(v)) {
        if (map[1] === "string" && QUANTITY_MAPS.has(field) && typeof val === "number") continue;
        if (map[1] === "string" && format === "byte" && typeof val === "string" && !BASE64.test(val)) {
          return fail(`illegal base64 data at input byte ${firstBadBase64(val)}`);
        }
        walk(val, map[1]!, "", `${path}[${k}]`, struct, field);
      }
      return;
    }
    switch (type) {
      case "string":
        if (typeof v !== "string") fail(`json: cannot unmarshal ${jsonType(v)} into ${at} string`);
        return;
      case "boolean":
        if (typeof v !== "boolean") fail(`json: cannot unmarshal ${jsonType(v)} into ${at} bool`);
        return;
      case "number": {
        const goType = goTypes[`number:${format}`] ?? "int32";
        if (typeof v !== "number") fail(`json: cannot unmarshal ${jsonType(v)} into ${at} ${goType}`);
        else if (goType !== "float64" && !Number.isInteger(v)) fail(`json: cannot unmarshal number ${v} into ${at} ${goType}`);
        return;
      }
      case "Date":
      case "V1MicroTime": {
        const micro = type === "V1MicroTime" || format === "date-time-micro";
        const layout = micro ? "2006-01-02T15:04:05.000000Z07:00" : "2006-01-02T15:04:05Z07:00";
        if (typeof v !== "string") fail(`json: cannot unmarshal ${jsonType(v)} into ${at} ${micro ? "v1.MicroTime" : "v1.Time"}`);
        else if (!(micro ? MICRO_TIME : RFC3339).test(v) || Number.isNaN(Date.parse(v))) fail(`parsing time ${JSON.stringify(v)} as ${JSON.stringify(layout)}: cannot parse`);
        return;
      }
      case "IntOrString":
        if (typeof v !== "string" && !(typeof v === "number" && Number.isInteger(v))) fail(`json: cannot unmarshal ${jsonType(v)} into ${at} intstr.IntOrString`);
        return;
      case "any":
      case "object":
        return;
      default: {
        const attrs = attributesOf(type);
        if (attrs === undefined) return;
        if (!isObject(v)) return fail(`json: cannot unmarshal ${jsonType(v)} into ${at} ${type.replace(/^V\d\w*?(?=[A-Z])/, "")}`);
        for (const [k, val] of Object.entries(v)) {
          const a = attrs.get(k);
          const childPath = path === "" ? k : `${path}.${k}`;
          if (a === undefined) {
            Reflect.deleteProperty(v, k);
            unknown.push(childPath);
            continue;
          }
          walk(val, a.type, a.format, childPath, path === "" ? type.replace(/^V\d\w*?(?=[A-Z])/, "") : struct, k);
        }
      }
    }
  };
  walk(obj, model, "", "", model.replace(/^V\d\w*?(?=[A-Z])/, ""), "");
  return { ...(error === undefined ? {} : { error: `${kind.kind} in version "${kind.version}" cannot be handled as a ${kind.kind}: ${error}` }), unknown };
}

function firstBadBase64(v: string): number {
  for (let i = 0; i < v.length; i++) if (!/[A-Za-z0-9+/=]/.test(v.charAt(i))) return i;
  return v.length;
}

// --- stage 2: the validation rules clients meet

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

function qualifiedNameErrors(key: string): string | undefined {
  const slash = key.indexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) return "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
  }
  if (name.length === 0) return "name part must be non-empty";
  if (name.length > 63) return "name part must be no more than 63 bytes";
  if (!QUALIFIED_NAME.test(name)) return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
  return undefined;
}

/** Metadata rules every kind shares: label keys and values, annotation keys. */
export function validateMetadata(meta: JsonObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const labels = meta.labels;
  if (isObject(labels)) {
    for (const [k, v] of Object.entries(labels)) {
      const e = qualifiedNameErrors(k);
      if (e !== undefined) causes.push({ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(k)}: ${e}`, field: "metadata.labels" });
      if (typeof v === "string") {
        // IsValidLabelValue: one error per rule broken (length, then format), as separate causes.
        if (v.length > 63) causes.push({ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(v)}: must be no more than 63 bytes`, field: "metadata.labels" });
        if (!LABEL_VALUE.test(v)) {
          causes.push({
            reason: "FieldValueInvalid",
            message: `Invalid value: ${JSON.stringify(v)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
            field: "metadata.labels",
          });
        }
      }
    }
  }
  const annotations = meta.annotations;
  if (isObject(annotations)) {
    let size = 0;
    for (const [k, v] of Object.entries(annotations)) {
      const e = qualifiedNameErrors(k.toLowerCase());
      if (e !== undefined) causes.push({ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(k)}: ${e}`, field: "metadata.annotations" });
      size += k.length + (typeof v === "string" ? v.length : 0);
    }
    if (size > 256 * 1024) causes.push({ reason: "FieldValueTooLong", message: "Too long: must have at most 262144 bytes", field: "metadata.annotations" });
  }
  return causes;
}

/** The name rule of a kind, as its validation applies it. */
export function nameError(kind: ResourceKind, name: string): string | undefined {
  const builtIn = kind.builtIn === true;
  // Services: an RFC 1123 label since Kubernetes 1.34's relaxed Service name validation (a leading
  // digit is fine), no dots.
  if (builtIn && kind.kind === "Service" && name.includes(".")) return "must not contain dots";
  if (builtIn && (kind.kind === "Namespace" || kind.kind === "Service")) {
    return name.length <= 63 && DNS1123_LABEL.test(name) ? undefined : "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  }
  if (builtIn && kind.group === "rbac.authorization.k8s.io") {
    return name === "." || name === ".." || /[/%]/.test(name) ? `may not be '.' or '..' and may not contain '/' or '%'` : undefined;
  }
  return name.length <= 253 && DNS1123_SUBDOMAIN.test(name) ? undefined : "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
}

const SECRET_REQUIRED_KEYS: Readonly<Record<string, readonly string[]>> = {
  "kubernetes.io/tls": ["tls.crt", "tls.key"],
  "kubernetes.io/dockerconfigjson": [".dockerconfigjson"],
  "kubernetes.io/dockercfg": [".dockercfg"],
  "kubernetes.io/basic-auth": [],
  "kubernetes.io/ssh-auth": ["ssh-privatekey"],
};

function configKeys(data: Json | undefined, field: string, causes: StatusCause[]): void {
  if (!isObject(data)) return;
  for (const k of Object.keys(data)) {
    if (k.length > 253 || !CONFIG_KEY.test(k) || k === "." || k === "..") {
      causes.push({
        reason: "FieldValueInvalid",
        message: `Invalid value: ${JSON.stringify(k)}: a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
        field: `${field}[${k}]`,
      });
    }
  }
}

function podSpecCauses(spec: Json | undefined, path: string, causes: StatusCause[]): void {
  if (!isObject(spec)) {
    causes.push({ reason: "FieldValueRequired", message: "Required value", field: path });
    return;
  }
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    causes.push({ reason: "FieldValueRequired", message: "Required value", field: `${path}.containers` });
    return;
  }
  const seen = new Set<string>();
  containers.forEach((c, i) => {
    const at = `${path}.containers[${i}]`;
    if (!isObject(c)) return;
    const name = typeof c.name === "string" ? c.name : "";
    if (name === "") causes.push({ reason: "FieldValueRequired", message: "Required value", field: `${at}.name` });
    else if (!DNS1123_LABEL.test(name) || name.length > 63) {
      causes.push({ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`, field: `${at}.name` });
    } else if (seen.has(name)) causes.push({ reason: "FieldValueDuplicate", message: `Duplicate value: ${JSON.stringify(name)}`, field: `${at}.name` });
    seen.add(name);
    if (typeof c.image !== "string" || c.image.trim() === "") causes.push({ reason: "FieldValueRequired", message: "Required value", field: `${at}.image` });
    if (Array.isArray(c.ports)) {
      c.ports.forEach((p, j) => {
        if (isObject(p) && (typeof p.containerPort !== "number" || p.containerPort < 1 || p.containerPort > 65535)) {
          causes.push({ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(p.containerPort ?? 0)}: must be between 1 and 65535, inclusive`, field: `${at}.ports[${j}].containerPort` });
        }
      });
    }
  });
}

function selectorMatches(selector: Json | undefined, labels: Json | undefined): boolean {
  if (!isObject(selector)) return false;
  const l = isObject(labels) ? labels : {};
  const match = isObject(selector.matchLabels) ? selector.matchLabels : {};
  if (Object.entries(match).some(([k, v]) => l[k] !== v)) return false;
  const exprs = Array.isArray(selector.matchExpressions) ? selector.matchExpressions : [];
  return exprs.every((e) => {
    if (!isObject(e) || typeof e.key !== "string") return false;
    const values = Array.isArray(e.values) ? e.values : [];
    const has = Object.hasOwn(l, e.key);
    switch (e.operator) {
      case "In":
        return has && values.includes(l[e.key]!);
      case "NotIn":
        return !has || !values.includes(l[e.key]!);
      case "Exists":
        return has;
      case "DoesNotExist":
        return !has;
      default:
        return false;
    }
  });
}

/** Kind-specific 422 rules for a built-in object about to be stored (`live` on an update). */
export function validateBuiltIn(kind: ResourceKind, obj: JsonObject, live: JsonObject | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  const key = `${kind.group}/${kind.kind}`;
  switch (key) {
    case "/Secret": {
      configKeys(obj.data, "data", causes);
      configKeys(obj.stringData, "stringData", causes);
      const type = typeof obj.type === "string" ? obj.type : "Opaque";
      if (live !== undefined && (typeof live.type === "string" ? live.type : "Opaque") !== type) {
        causes.push({ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(type)}: field is immutable`, field: "type" });
      }
      const data = isObject(obj.data) ? obj.data : {};
      for (const k of SECRET_REQUIRED_KEYS[type] ?? []) {
        if (!Object.hasOwn(data, k)) causes.push({ reason: "FieldValueRequired", message: "Required value", field: `data[${k}]` });
      }
      break;
    }
    case "/ConfigMap":
      configKeys(obj.data, "data", causes);
      configKeys(obj.binaryData, "binaryData", causes);
      break;
    case "/Pod":
      podSpecCauses(obj.spec, "spec", causes);
      break;
    case "apps/Deployment":
    case "apps/StatefulSet":
    case "apps/DaemonSet": {
      const spec = isObject(obj.spec) ? obj.spec : {};
      const template = isObject(spec.template) ? spec.template : undefined;
      if (!isObject(spec.selector)) causes.push({ reason: "FieldValueRequired", message: "Required value", field: "spec.selector" });
      else if (template !== undefined && !selectorMatches(spec.selector, isObject(template.metadata) ? template.metadata.labels : undefined)) {
        causes.push({
          reason: "FieldValueInvalid",
          message: `Invalid value: ${JSON.stringify(isObject(template.metadata) ? (template.metadata.labels ?? {}) : {})}: \`selector\` does not match template \`labels\``,
          field: "spec.template.metadata.labels",
        });
      }
      if (template === undefined) causes.push({ reason: "FieldValueRequired", message: "Required value", field: "spec.template" });
      else podSpecCauses(template.spec, "spec.template.spec", causes);
      if (typeof spec.replicas === "number" && spec.replicas < 0) {
        causes.push({ reason: "FieldValueInvalid", message: `Invalid value: ${spec.replicas}: must be greater than or equal to 0`, field: "spec.replicas" });
      }
      break;
    }
    case "/Service": {
      const spec = isObject(obj.spec) ? obj.spec : {};
      const type = typeof spec.type === "string" ? spec.type : "ClusterIP";
      const ports = Array.isArray(spec.ports) ? spec.ports : [];
      const headless = spec.clusterIP === "None";
      if (ports.length === 0 && type !== "ExternalName" && !headless) causes.push({ reason: "FieldValueRequired", message: "Required value", field: "spec.ports" });
      ports.forEach((p, i) => {
        if (!isObject(p)) return;
        if (typeof p.port !== "number" || p.port < 1 || p.port > 65535) {
          causes.push({ reason: "FieldValueInvalid", message: `Invalid value: ${JSON.stringify(p.port ?? 0)}: must be between 1 and 65535, inclusive`, field: `spec.ports[${i}].port` });
        }
        if (ports.length > 1 && (typeof p.name !== "string" || p.name === "")) causes.push({ reason: "FieldValueRequired", message: "Required value", field: `spec.ports[${i}].name` });
      });
      if (!["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"].includes(type)) {
        causes.push({ reason: "FieldValueNotSupported", message: `Unsupported value: ${JSON.stringify(type)}: supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`, field: "spec.type" });
      }
      break;
    }
    default:
      break;
  }
  return causes;
}
