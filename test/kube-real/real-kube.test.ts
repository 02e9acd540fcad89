/* eslint-disable @typescript-eslint/no-unsafe-class-instance-assignment, @typescript-eslint/no-explicit-any --
   client-node's model "classes" are plain data shapes that its own docs fill with object literals, and
   the objects read back from the server are untyped JSON. */
/**
 * The real control plane of test/helpers/real-kube.ts (etcd + kube-apiserver built from their Go
 * modules): the admin may do everything, a ServiceAccount bound by the agent chart's rendered RBAC
 * gets exactly what the chart grants (the server's own 403 otherwise), Istio's CRDs are served and
 * take a server-side apply, and stopping — or the death of the process that started it — leaves no
 * process behind. Expectations are the Kubernetes API documentation's (RBAC, authentication,
 * server-side apply), not the emulator's.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { istioCrdObjects, startRealKube, type RealKube, type ServiceAccountAccess } from "../helpers/real-kube.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
// The agent chart as `helm template` renders it with its defaults (the chart tests' golden).
const AGENT_RENDER = join(ROOT, "test", "charts", "golden", "agent-defaults.yaml");
const RBAC_KINDS = new Set(["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"]);

const agentRbac = (): any[] =>
  parseAllDocuments(readFileSync(AGENT_RENDER, "utf8"))
    .map((d) => d.toJS())
    .filter((o) => o !== null && RBAC_KINDS.has(o.kind));

// A process that exited but was not reaped yet (a zombie, state Z) counts as gone.
const alive = (pid: number): boolean => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

const vs = (name: string, host: string): any => ({
  apiVersion: "networking.istio.io/v1",
  kind: "VirtualService",
  metadata: { name, namespace: "apps" },
  spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
});

let kube: RealKube;
let agent: ServiceAccountAccess;
const startedAt = Date.now();
let startMs = 0;

beforeAll(async () => {
  kube = await startRealKube();
  startMs = Date.now() - startedAt;
  agent = await kube.serviceAccountKubeConfig("gitmesh", "gitmesh-agent", agentRbac());
}, 180_000);

afterAll(async () => {
  await kube.stop();
});

describe("real kube-apiserver: admin", () => {
  it("starts (etcd, kube-apiserver, CRDs) and reports its version", async () => {
    console.log(`real kube: ready with Istio CRDs in ${startMs} ms`);
    const v = await kube.request("GET", "/version");
    expect(v.status).toBe(200);
    expect(v.body.gitVersion).toMatch(/^v1\.36\.3/);
  });

  it("authenticates the static token as gitmesh-admin in system:masters, which may do everything", async () => {
    const who = await kube.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", { body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" } });
    expect(who.status).toBe(201);
    expect(who.body.status.userInfo.username).toBe("gitmesh-admin");
    expect(who.body.status.userInfo.groups).toContain("system:masters");
    const all = await kube.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      body: { apiVersion: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview", spec: { resourceAttributes: { verb: "*", group: "*", resource: "*" } } },
    });
    expect(all.body.status.allowed).toBe(true);
  });

  it("hands out a client-node KubeConfig that verifies the serving certificate", async () => {
    const core = kube.kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "admin-check" } } });
    await core.createNamespacedSecret({ namespace: "admin-check", body: { metadata: { name: "s" }, stringData: { k: "v" } } });
    const s = await core.readNamespacedSecret({ namespace: "admin-check", name: "s" });
    expect(Buffer.from(s.data!.k!, "base64").toString()).toBe("v");
    expect(existsSync(kube.kubeconfigPath)).toBe(true);
    expect(readFileSync(kube.kubeconfigPath, "utf8")).toContain(kube.url);
  });

  it("refuses a request without a valid token: 401 for a wrong token", async () => {
    const r = await kube.request("GET", "/api/v1/namespaces", { token: "not-a-token" });
    expect(r.status).toBe(401);
    expect(r.body.reason).toBe("Unauthorized");
  });
});

describe("real kube-apiserver: Istio CRDs", () => {
  const crds = istioCrdObjects();

  it("serves every kind of Istio's CRD file in every served version", async () => {
    expect(crds.length).toBeGreaterThanOrEqual(14);
    for (const crd of crds) {
      for (const v of crd.spec.versions.filter((x: any) => x.served)) {
        const r = await kube.request("GET", `/apis/${crd.spec.group}/${v.name}/${crd.spec.names.plural}`);
        expect(r.status, `${crd.spec.names.plural}.${crd.spec.group}/${v.name}`).toBe(200);
        expect(r.body.kind).toBe(`${crd.spec.names.kind}List`);
      }
    }
  });

  it("takes a server-side apply of a VirtualService: stored, managed by the applier (operation Apply); a conflicting manager gets 409", async () => {
    await kube.apply([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "apps" } }]);
    const custom = kube.kc.makeApiClient(CustomObjectsApi);
    const r = await kube.request("PATCH", "/apis/networking.istio.io/v1/namespaces/apps/virtualservices/web", {
      body: JSON.stringify(vs("web", "web.apps.svc.cluster.local")),
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: "alice" },
    });
    expect(r.status, r.text).toBe(201);
    const got = (await custom.getNamespacedCustomObject({ group: "networking.istio.io", version: "v1", namespace: "apps", plural: "virtualservices", name: "web" }));
    expect(got.spec.hosts).toEqual(["web.apps.svc.cluster.local"]);
    expect(got.metadata.managedFields.map((m: any) => [m.manager, m.operation])).toEqual([["alice", "Apply"]]);
    const conflict = await kube.request("PATCH", "/apis/networking.istio.io/v1/namespaces/apps/virtualservices/web", {
      body: JSON.stringify(vs("web", "other.apps.svc.cluster.local")),
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: "bob" },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body.reason).toBe("Conflict");
    expect(conflict.body.details.causes.map((c: any) => c.field)).toContain(".spec.hosts");
  });

  it("validates against the CRD schema: a wrong type is 422 Invalid naming the field", async () => {
    const bad = vs("bad", "bad.apps.svc.cluster.local");
    bad.spec.hosts = "not-a-list";
    const r = await kube.request("POST", "/apis/networking.istio.io/v1/namespaces/apps/virtualservices", { body: bad });
    expect(r.status).toBe(422);
    expect(r.body.reason).toBe("Invalid");
    expect(r.text).toContain("spec.hosts");
  });
});

describe("real kube-apiserver: a ServiceAccount under the agent chart's RBAC", () => {
  it("is authenticated by its TokenRequest token as the ServiceAccount", async () => {
    expect(agent.user).toBe("system:serviceaccount:gitmesh:gitmesh-agent");
    const who = await kube.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      token: agent.token,
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    expect(who.status).toBe(201);
    expect(who.body.status.userInfo.username).toBe(agent.user);
    expect(who.body.status.userInfo.groups).toEqual(expect.arrayContaining(["system:serviceaccounts", "system:serviceaccounts:gitmesh", "system:authenticated"]));
  });

  it("is allowed what the chart grants: list and watch Istio kinds cluster-wide, apply a VirtualService, read its relay secrets", async () => {
    const custom = agent.kc.makeApiClient(CustomObjectsApi);
    const listed = (await custom.listClusterCustomObject({ group: "networking.istio.io", version: "v1", plural: "virtualservices" }));
    expect(listed.items.map((i: any) => i.metadata.name)).toContain("web");
    const applied = await kube.request("PATCH", "/apis/networking.istio.io/v1/namespaces/apps/virtualservices/by-agent", {
      token: agent.token,
      body: JSON.stringify(vs("by-agent", "agent.apps.svc.cluster.local")),
      contentType: "application/apply-patch+yaml",
      query: { fieldManager: "gitmesh-agent" },
    });
    expect(applied.status, applied.text).toBe(201);
    // get on a named relay secret is granted: the answer is the secret's absence, not a refusal.
    const secret = await kube.request("GET", "/api/v1/namespaces/gitmesh/secrets/relay-root-tls-secret", { token: agent.token });
    expect(secret.status, secret.text).toBe(404);
    const core = agent.kc.makeApiClient(CoreV1Api);
    expect((await core.listNamespace()).items.length).toBeGreaterThan(0);
  });

  it("is denied what the chart does not grant, with the server's 403 Forbidden text", async () => {
    const list = await kube.request("GET", "/api/v1/namespaces/gitmesh/secrets", { token: agent.token });
    expect(list.status).toBe(403);
    expect(list.body.reason).toBe("Forbidden");
    expect(list.body.message).toBe(`secrets is forbidden: User "${agent.user}" cannot list resource "secrets" in API group "" in the namespace "gitmesh"`);
    const other = await kube.request("GET", "/api/v1/namespaces/gitmesh/secrets/someone-elses", { token: agent.token });
    expect(other.status).toBe(403);
    expect(other.body.message).toBe(`secrets "someone-elses" is forbidden: User "${agent.user}" cannot get resource "secrets" in API group "" in the namespace "gitmesh"`);
    const del = await kube.request("DELETE", "/api/v1/namespaces/admin-check", { token: agent.token });
    expect(del.status).toBe(403);
    expect(del.body.message).toBe(`namespaces "admin-check" is forbidden: User "${agent.user}" cannot delete resource "namespaces" in API group "" in the namespace "admin-check"`);
    const crb = await kube.request("GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", { token: agent.token });
    expect(crb.status).toBe(403);
    expect(crb.body.message).toBe(`clusterrolebindings.rbac.authorization.k8s.io is forbidden: User "${agent.user}" cannot list resource "clusterrolebindings" in API group "rbac.authorization.k8s.io" at the cluster scope`);
  });
});

describe("real kube-apiserver: stopping", () => {
  it("stop() kills etcd and kube-apiserver and removes the temp dir", async () => {
    const other = await startRealKube({ istioCrds: false });
    const pids = other.pids;
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(alive(pid)).toBe(true);
    const dir = dirname(other.kubeconfigPath);
    await other.stop();
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
    expect(existsSync(dir)).toBe(false);
  }, 120_000);

  it("the death of the process that started them (SIGKILL: no exit hook runs) takes etcd and kube-apiserver along", async () => {
    const script = [
      `import { startRealKube } from ${JSON.stringify(join(ROOT, "test", "helpers", "real-kube.ts"))};`,
      "const k = await startRealKube({ istioCrds: false });",
      "console.log(JSON.stringify(k.pids));",
      "setInterval(() => {}, 1000);",
    ].join("\n");
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const pids = await new Promise<number[]>((resolve, reject) => {
      child.stdout.on("data", () => {
        const line = out.split("\n").find((l) => l.startsWith("["));
        if (line !== undefined) resolve(JSON.parse(line) as number[]);
      });
      child.once("exit", (code) => reject(new Error(`the starter exited (${code}) before printing pids:\n${out}\n${err}`)));
    });
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(alive(pid)).toBe(true);
    child.kill("SIGKILL");
    const deadline = Date.now() + 10_000;
    while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const pid of pids) expect(alive(pid), `pid ${pid}`).toBe(false);
  }, 120_000);
});
