/**
 * Step `parse`: the output version's entries → the objects the agent means to own, the certificate
 * requests, the output options; everything it cannot use is an error for that entry (the rest goes
 * on). Never throws: bad JSON, a non-object, an object for another cluster or of a kind the agent
 * does not write is a per-entry error.
 */
import { describeError } from "../../core/index.js";
import { isInstallObject, isOpaPolicyConfig, isRateLimitConfig, objectKey, type KindRef, type KubeObject } from "../kube.js";
import { describe, forApply, LABEL_CLUSTER } from "./objects.js";
import { DONE, type ApplyContext, type Delivery, type IgnoreDifference, type StepResult } from "./types.js";

/**
 * Reserved output entry with options for the agent; never applied. JSON
 * `{ "allowMassDeletion"?: boolean, "ignoreDifferences"?: [{ "group"?, "kind", "namespace"?, "name"?, "jsonPointers": string[] }] }`.
 */
export const OUTPUT_OPTIONS_KEY = "gitmesh.io/output-options";
export const ISSUED_CERTIFICATE = { apiVersion: "internal.gitmesh.io/v1", kind: "IssuedCertificate" } as const;

const decoder = new TextDecoder();

/** The output options entry: mass deletion allowed, ignoreDifferences rules, and what was wrong with it. */
export function parseOptions(value: unknown): { allowMassDeletion: boolean; ignore: IgnoreDifference[]; problems: string[] } {
  const problems: string[] = [];
  const o = (value !== null && typeof value === "object" ? value : {}) as { allowMassDeletion?: unknown; ignoreDifferences?: unknown };
  const ignore: IgnoreDifference[] = [];
  if (o.ignoreDifferences !== undefined) {
    if (!Array.isArray(o.ignoreDifferences)) problems.push("ignoreDifferences must be a list");
    else
      for (const [i, r] of (o.ignoreDifferences as unknown[]).entries()) {
        const rule = r as Partial<Record<keyof IgnoreDifference, unknown>> | null;
        const str = (v: unknown) => v === undefined || typeof v === "string";
        if (
          rule === null ||
          typeof rule !== "object" ||
          typeof rule.kind !== "string" ||
          !str(rule.group) ||
          !str(rule.namespace) ||
          !str(rule.name) ||
          !Array.isArray(rule.jsonPointers) ||
          !rule.jsonPointers.every((p) => typeof p === "string" && p.startsWith("/"))
        ) {
          problems.push(`ignoreDifferences[${i}] needs kind and jsonPointers (strings starting with "/"); group, namespace, name are optional strings`);
          continue;
        }
        ignore.push(rule as IgnoreDifference);
      }
  }
  return { allowMassDeletion: o.allowMassDeletion === true, ignore, problems };
}

export interface ParseOptions {
  readonly cluster: string;
  readonly kinds: readonly KindRef[];
  readonly manageIstioInstall: boolean;
}

/**
 * Why this agent does not write `obj` (undefined: it does). One rule: an object is applied only when
 * its kind — in its namespace, for kinds given some namespaces only — is one the agent owns, lists,
 * prunes and repairs; anything else would be written once and then never pruned nor repaired. The
 * message says how to opt in where there is a way.
 */
export function notWritable(obj: KubeObject, options: ParseOptions): string | undefined {
  const { cluster, kinds } = options;
  const ns = obj.metadata.namespace ?? "";
  if (kinds.some((k) => k.apiVersion === obj.apiVersion && k.kind === obj.kind && (k.namespaces === undefined || k.namespaces.includes(ns)))) return undefined;
  const parent = obj.metadata.labels?.["gitmesh.io/parent-kind"];
  if (isInstallObject(obj)) {
    return (
      `${describe(obj)} installs Istio (from ${parent ?? "a lifecycle manager"}); this agent manages Istio's configuration only, so it is not applied. ` +
      `To let gitmesh install Istio in cluster "${cluster}", install the agent with lifecycle.enabled=true (flag --manage-istio-install), which also grants the RBAC it needs`
    );
  }
  if (isRateLimitConfig(obj)) {
    return (
      `${describe(obj)} is a rate limiter's configuration (from ${parent ?? "RateLimitServerConfig"}); this agent writes it only in the namespaces it is given, so it is not applied. ` +
      `To let gitmesh configure the rate limiter in namespace "${ns}" of cluster "${cluster}", add it to the agent's rateLimit.configNamespaces (flag --rate-limit-config-namespaces), which also grants the RBAC it needs there`
    );
  }
  if (isOpaPolicyConfig(obj)) {
    return (
      `${describe(obj)} is OPA-Envoy's policy modules (from ${parent ?? "ExtAuthPolicy"} glooAuth OPA); this agent writes ConfigMaps only in the namespaces of its ConfigMap grant, so it is not applied. ` +
      `To let gitmesh load them into OPA-Envoy in namespace "${ns}" of cluster "${cluster}", add the namespace to the agent's rateLimit.configNamespaces (flag --rate-limit-config-namespaces), which grants ConfigMaps there`
    );
  }
  return `${describe(obj)}: this agent does not write ${obj.kind} (${obj.apiVersion})${ns === "" ? "" : ` in namespace "${ns}"`}, so it is not applied (an object it wrote could never be pruned or repaired)`;
}

function isKubeObject(o: unknown): o is KubeObject {
  if (o === null || typeof o !== "object") return false;
  const x = o as { apiVersion?: unknown; kind?: unknown; metadata?: unknown };
  const meta = x.metadata as { name?: unknown } | null | undefined;
  return typeof x.apiVersion === "string" && typeof x.kind === "string" && typeof meta === "object" && meta !== null && typeof meta.name === "string";
}

/** Step parse. Returns the ignoreDifferences rules in force for this output (none without an options entry). */
export function parseOutput(d: Delivery, options: ParseOptions): { step: StepResult; ignoreRules: IgnoreDifference[] } {
  let ignoreRules: IgnoreDifference[] = [];
  for (const [key, bytes] of d.output.resources) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(decoder.decode(bytes));
    } catch (err) {
      d.errors.push({ key, message: `not valid JSON: ${describeError(err)}` });
      continue;
    }
    if (key === OUTPUT_OPTIONS_KEY) {
      const opts = parseOptions(parsed);
      d.allowMassDeletion = opts.allowMassDeletion;
      ignoreRules = opts.ignore;
      for (const p of opts.problems) d.errors.push({ key, message: p });
      continue;
    }
    if (!isKubeObject(parsed)) {
      d.errors.push({ key, message: "not a Kubernetes object (apiVersion, kind and metadata.name are required)" });
      continue;
    }
    const obj = parsed;
    const target = obj.metadata.labels?.[LABEL_CLUSTER];
    if (target !== undefined && target !== options.cluster) {
      d.errors.push({ key, message: `object is labelled for cluster "${target}", this agent serves "${options.cluster}"; not applied` });
      continue;
    }
    if (obj.apiVersion === ISSUED_CERTIFICATE.apiVersion && obj.kind === ISSUED_CERTIFICATE.kind) {
      d.certificateRequests.push(obj);
      continue;
    }
    const refused = notWritable(obj, options);
    if (refused !== undefined) {
      d.errors.push({ key, message: refused });
      continue;
    }
    d.wanted.set(objectKey(obj), { relayKey: key, obj: forApply(obj, options.cluster) });
  }
  return { step: DONE, ignoreRules };
}

/**
 * Step plan: parse the output, then make it what drift repair compares against (our own applies
 * match it). An incomplete output adds to what was desired; a complete one replaces it.
 */
export function planOutput(ctx: ApplyContext, d: Delivery): StepResult {
  const { step, ignoreRules } = parseOutput(d, ctx);
  ctx.ignoreRules = ignoreRules;
  const next = new Map(d.output.complete ? [] : ctx.desired);
  for (const [k, { obj }] of d.wanted) next.set(k, obj);
  ctx.desired = next;
  return step;
}
