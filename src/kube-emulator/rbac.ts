/**
 * Optional RBAC enforcement, for tests that check a chart's Roles against the requests a client
 * really makes. Bearer tokens map to user names (a ServiceAccount is
 * `system:serviceaccount:<ns>:<name>`); Role, ClusterRole, RoleBinding and ClusterRoleBinding
 * objects (as a chart renders them) grant verbs. Evaluated like Kubernetes' RBAC authorizer: a
 * request is allowed when any rule of any bound role matches its verb, API group, resource and
 * (when the rule lists resourceNames) name; ClusterRoles bound by a RoleBinding apply in that
 * namespace only. Discovery, /version, /openapi and health paths are open to every authenticated
 * user (system:discovery). A denied request gets 403 Forbidden in the real Status format; a
 * missing or unknown token gets 401 Unauthorized.
 */
import { isObject, type Json, type JsonObject } from "./patch.js";
import { KubeApiError, qualifiedResource, StatusReason } from "./status.js";

export interface RbacOptions {
  /** Bearer token → user name (e.g. `system:serviceaccount:gitmesh:gitmesh-agent`). */
  readonly tokens: Readonly<Record<string, string>>;
  /** Role, ClusterRole, RoleBinding and ClusterRoleBinding objects (rbac.authorization.k8s.io/v1). */
  readonly objects: readonly Record<string, unknown>[];
}

/** What a request asks to do, as the RBAC authorizer sees it. */
export interface RequestAttributes {
  readonly user: string;
  readonly verb: string;
  readonly group: string;
  readonly resource: string;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
}

/** A request RBAC denied, as the emulator records it for tests. */
export interface ForbiddenRequest extends RequestAttributes {
  readonly method: string;
  readonly path: string;
}

interface Rule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames: readonly string[];
}

const text = (v: Json | undefined): string => (typeof v === "string" ? v : "");
const strings = (v: Json | undefined): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

function rulesOf(role: JsonObject): Rule[] {
  const rules = Array.isArray(role.rules) ? role.rules.filter(isObject) : [];
  return rules.map((r) => ({ apiGroups: strings(r.apiGroups), resources: strings(r.resources), verbs: strings(r.verbs), resourceNames: strings(r.resourceNames) }));
}

const matchesAny = (list: readonly string[], value: string) => list.includes("*") || list.includes(value);

function allows(rule: Rule, a: RequestAttributes): boolean {
  if (!matchesAny(rule.verbs, a.verb) || !matchesAny(rule.apiGroups, a.group) || !matchesAny(rule.resources, a.resource)) return false;
  if (rule.resourceNames.length === 0) return true;
  return a.name !== undefined && rule.resourceNames.includes(a.name);
}

function subjectMatches(subject: JsonObject, user: string): boolean {
  if (subject.kind === "User") return subject.name === user;
  if (subject.kind === "ServiceAccount") return user === `system:serviceaccount:${text(subject.namespace)}:${text(subject.name)}`;
  return false; // groups are not modelled
}

export interface Authorizer {
  /** The user of a bearer token; throws 401 when the token is missing or unknown. */
  authenticate(authorization: string | undefined): string;
  allowed(a: RequestAttributes): boolean;
}

export function createAuthorizer(options: RbacOptions): Authorizer {
  const objects: JsonObject[] = options.objects.filter(isObject);
  const meta = (o: JsonObject) => (isObject(o.metadata) ? o.metadata : {});
  const clusterRoles = new Map<string, Rule[]>();
  const roles = new Map<string, Rule[]>(); // "<ns>/<name>"
  for (const o of objects) {
    const m = meta(o);
    if (o.kind === "ClusterRole") clusterRoles.set(text(m.name), rulesOf(o));
    if (o.kind === "Role") roles.set(`${text(m.namespace)}/${text(m.name)}`, rulesOf(o));
  }
  const bindings = objects.filter((o) => o.kind === "RoleBinding" || o.kind === "ClusterRoleBinding");

  return {
    authenticate(authorization) {
      const m = /^Bearer\s+(.+)$/i.exec(authorization ?? "");
      const user = m ? options.tokens[m[1]!.trim()] : undefined;
      if (user === undefined) throw new KubeApiError(401, StatusReason.Unauthorized, "Unauthorized");
      return user;
    },
    allowed(a) {
      for (const b of bindings) {
        const subjects = Array.isArray(b.subjects) ? b.subjects.filter(isObject) : [];
        if (!subjects.some((s) => subjectMatches(s, a.user))) continue;
        const ref = isObject(b.roleRef) ? b.roleRef : {};
        const bindingNs = meta(b).namespace;
        let rules: Rule[] | undefined;
        if (ref.kind === "ClusterRole") rules = clusterRoles.get(text(ref.name));
        else if (ref.kind === "Role" && b.kind === "RoleBinding") rules = roles.get(`${text(bindingNs)}/${text(ref.name)}`);
        if (rules === undefined) continue;
        // A RoleBinding grants only in its own namespace; a ClusterRoleBinding everywhere.
        if (b.kind === "RoleBinding" && a.namespace !== bindingNs) continue;
        if (rules.some((r) => allows(r, a))) return true;
      }
      return false;
    },
  };
}

/** The 403 the real API server answers (same message shape). */
export function forbidden(a: RequestAttributes): KubeApiError {
  const res = qualifiedResource(a.resource, a.group);
  const what = a.name === undefined ? `${res} is forbidden` : `${res} "${a.name}" is forbidden`;
  const where = a.namespace === undefined ? "at the cluster scope" : `in the namespace "${a.namespace}"`;
  return new KubeApiError(403, StatusReason.Forbidden, `${what}: User "${a.user}" cannot ${a.verb} resource "${a.resource}" in API group "${a.group}" ${where}`, {
    ...(a.name === undefined ? {} : { name: a.name }),
    ...(a.group === "" ? {} : { group: a.group }),
    kind: a.resource,
  });
}
