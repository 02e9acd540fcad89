// The emulator's optional RBAC enforcement: tokens → users, rendered Roles/ClusterRoles/bindings →
// verbs, real 401/403 Status answers, and a record of denials.
import { afterEach, describe, expect, it } from "vitest";
import { startKube, type StartedKube } from "../helpers/kube.js";

let kube: StartedKube | undefined;
afterEach(async () => {
  await kube?.stop();
  kube = undefined;
});

const SA = "system:serviceaccount:gitmesh:agent";
const objects = [
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", metadata: { name: "read-ns" }, rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get", "list", "watch"] }] },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: "read-ns" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "read-ns" }, subjects: [{ kind: "ServiceAccount", name: "agent", namespace: "gitmesh" }] },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: { name: "own", namespace: "gitmesh" },
    rules: [
      { apiGroups: [""], resources: ["secrets"], resourceNames: ["mine"], verbs: ["get"] },
      { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
    ],
  },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "own", namespace: "gitmesh" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "own" }, subjects: [{ kind: "ServiceAccount", name: "agent", namespace: "gitmesh" }] },
];

/** A raw request, as client-node would send it. */
async function call(method: string, path: string, token: string, body?: unknown): Promise<{ code: number; body: Record<string, unknown> }> {
  const r = await fetch(`${kube!.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { code: r.status, body: (await r.json()) as Record<string, unknown> };
}

describe("kube-emulator RBAC", () => {
  it("allows what the bound roles grant (resourceNames, namespace scope) and answers 403 in the real format otherwise", async () => {
    kube = await startKube({
      seed: [
        { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
        { apiVersion: "v1", kind: "Namespace", metadata: { name: "other" } },
        { apiVersion: "v1", kind: "Secret", metadata: { name: "mine", namespace: "gitmesh" } },
        { apiVersion: "v1", kind: "Secret", metadata: { name: "theirs", namespace: "gitmesh" } },
        { apiVersion: "v1", kind: "Secret", metadata: { name: "mine", namespace: "other" } },
      ],
      rbac: { tokens: { "sa-token": SA }, objects },
    });
    const sa = (method: string, path: string, body?: unknown) => call(method, path, "sa-token", body);
    expect((await sa("GET", "/api/v1/namespaces")).code).toBe(200);
    expect((await sa("GET", "/api/v1/namespaces/gitmesh/secrets/mine")).code).toBe(200);
    expect(await sa("GET", "/api/v1/namespaces/gitmesh/secrets/theirs")).toEqual({
      code: 403,
      body: {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: `secrets "theirs" is forbidden: User "${SA}" cannot get resource "secrets" in API group "" in the namespace "gitmesh"`,
        reason: "Forbidden",
        details: { name: "theirs", kind: "secrets" },
        code: 403,
      },
    });
    // a Role grants only in its namespace
    expect((await sa("GET", "/api/v1/namespaces/other/secrets/mine")).code).toBe(403);
    // list is a different verb than get
    expect(await sa("GET", "/api/v1/namespaces/gitmesh/secrets")).toMatchObject({ code: 403, body: { message: `secrets is forbidden: User "${SA}" cannot list resource "secrets" in API group "" in the namespace "gitmesh"` } });
    const lease = { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { name: "l", namespace: "gitmesh" }, spec: { holderIdentity: "x" } };
    expect((await sa("POST", "/apis/coordination.k8s.io/v1/namespaces/gitmesh/leases", lease)).code).toBe(201);
    expect((await sa("PUT", "/apis/coordination.k8s.io/v1/namespaces/gitmesh/leases/l", lease)).code).toBe(403);
    expect(await sa("DELETE", "/api/v1/namespaces/other")).toMatchObject({ code: 403, body: { message: `namespaces "other" is forbidden: User "${SA}" cannot delete resource "namespaces" in API group "" at the cluster scope` } });
    expect(kube.emulator.forbidden().map((f) => `${f.verb} ${f.resource} ${f.namespace ?? "-"}/${f.name ?? "-"}`)).toEqual([
      "get secrets gitmesh/theirs",
      "get secrets other/mine",
      "list secrets gitmesh/-",
      "update leases gitmesh/l",
      "delete namespaces -/other",
    ]);
    // discovery is open to every authenticated user; an unknown token is 401
    expect((await fetch(`${kube.url}/apis`, { headers: { authorization: "Bearer sa-token" } })).status).toBe(200);
    expect((await fetch(`${kube.url}/api/v1/namespaces`, { headers: { authorization: "Bearer nope" } })).status).toBe(401);
  });

  it("a uid in an update or apply is a precondition, as on a real API server", async () => {
    kube = await startKube({ seed: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default" }, data: { a: "1" } }] });
    const live = await call("GET", "/api/v1/namespaces/default/configmaps/c", "any");
    const meta = live.body.metadata as { uid: string };
    const wrong = { ...live.body, metadata: { ...meta, uid: "00000000-0000-0000-0000-000000000000" } };
    expect(await call("PUT", "/api/v1/namespaces/default/configmaps/c", "any", wrong)).toMatchObject({
      code: 409,
      body: { reason: "Conflict", message: `Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object meta: ${meta.uid}` },
    });
    expect((await call("PUT", "/api/v1/namespaces/default/configmaps/c", "any", { ...live.body, data: { a: "2" } })).code).toBe(200);
    const apply = (uid: string) =>
      fetch(`${kube!.url}/api/v1/namespaces/default/configmaps/c?fieldManager=t&force=true`, {
        method: "PATCH",
        headers: { "content-type": "application/apply-patch+yaml" },
        body: JSON.stringify({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "default", uid }, data: { a: "3" } }),
      });
    expect((await apply("other")).status).toBe(409);
    expect((await apply(meta.uid)).status).toBe(200);
    // DELETE with preconditions.uid
    const del = (uid: string) => fetch(`${kube!.url}/api/v1/namespaces/default/configmaps/c`, { method: "DELETE", headers: { "content-type": "application/json" }, body: JSON.stringify({ preconditions: { uid } }) });
    expect((await del("other")).status).toBe(409);
    expect((await del(meta.uid)).status).toBe(200);
  });
});
