/* eslint-disable @typescript-eslint/no-explicit-any -- objects read back from the emulator are untyped JSON */
/**
 * The real kubectl against the emulator: api-resources, get, get -w, apply --server-side (with a
 * conflict and --force-conflicts), create of built-in kinds (protobuf bodies from kubectl ≥ 1.32), delete.
 *
 * Runs once per kubectl binary found (kubectl-binaries.ts: `kubectl` on PATH and every versioned
 * `kubectl.1.NN` beside it, or only $KUBECTL). kubectl is required: CI installs Debian's
 * `kubernetes-client` package in .ci/run. Without kubectl this suite FAILS with instructions instead of skipping.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { findKubectls, type KubectlBinary } from "./kubectl-binaries.js";

const binaries = findKubectls();

it("finds kubectl", () => {
  if (binaries.length === 0) {
    throw new Error(
      "kubectl not found on PATH (or $KUBECTL). Install it: `apt-get install kubernetes-client` (Debian/Ubuntu; .ci/run does this) " +
        "or set KUBECTL=/path/to/kubectl. This suite checks that the real kubectl works against the kube-emulator.",
    );
  }
});

const manifest = (subset: string): string => `apiVersion: v1
kind: Namespace
metadata:
  name: bookinfo
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: reviews
  namespace: bookinfo
  labels:
    app: reviews
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews, subset: ${subset}}
`;

describe.each(binaries)("kubectl $label against the emulator", ({ label, path: kubectlPath }: KubectlBinary) => {
  let kube: StartedKube;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    kube = await startKube();
    dir = await mkdtemp(join(tmpdir(), "kubectl-test-"));
    await kube.emulator.writeKubeconfig(join(dir, "kubeconfig"));
    // A private HOME keeps kubectl's discovery cache out of the user's ~/.kube.
    env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, KUBECONFIG: join(dir, "kubeconfig") };
  });
  afterAll(async () => {
    await kube.stop();
    await rm(dir, { recursive: true, force: true });
  });

  function kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      execFile(kubectlPath, args, { env, timeout: 30_000 }, (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
        resolve({ code, stdout, stderr });
      });
    });
  }

  async function ok(...args: string[]): Promise<string> {
    const r = await kubectl(...args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
    return r.stdout;
  }

  it("api-resources lists the core, apps, coordination and Istio kinds", async () => {
    const out = await ok("api-resources");
    expect(out).toMatch(/^virtualservices\s+vs\s+networking\.istio\.io\/v1\s+true\s+VirtualService$/m);
    expect(out).toMatch(/^authorizationpolicies\s+ap\s+security\.istio\.io\/v1\s+true\s+AuthorizationPolicy$/m);
    expect(out).toMatch(/^leases\s+coordination\.k8s\.io\/v1\s+true\s+Lease$/m);
    expect(out).toMatch(/^namespaces\s+ns\s+v1\s+false\s+Namespace$/m);
  });

  it("apply --server-side creates, re-applies, conflicts for another manager, and --force-conflicts wins", async () => {
    await writeFile(join(dir, "v1.yaml"), manifest("v1"));
    await writeFile(join(dir, "v2.yaml"), manifest("v2"));
    expect(await ok("apply", "--server-side", "-f", join(dir, "v1.yaml"))).toContain("virtualservice.networking.istio.io/reviews serverside-applied");
    const vs = JSON.parse(await ok("get", "vs", "reviews", "-n", "bookinfo", "-o", "json"));
    expect(vs.spec.http[0].route[0].destination.subset).toBe("v1");
    // (kubectl ≥ 1.21 hides managedFields in its output; read them from the emulator.)
    const live = kube.emulator.get("networking.istio.io/v1", "VirtualService", "bookinfo", "reviews")!;
    const managers = ((live.metadata as { managedFields: { manager: string; operation: string }[] }).managedFields).map((m) => `${m.manager}/${m.operation}`);
    expect(managers).toEqual(["kubectl/Apply"]);

    const conflict = await kubectl("apply", "--server-side", "--field-manager", "intruder", "-f", join(dir, "v2.yaml"));
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain('Apply failed with 1 conflict: conflict with "kubectl": .spec.http');

    await ok("apply", "--server-side", "--field-manager", "intruder", "--force-conflicts", "-f", join(dir, "v2.yaml"));
    const forced = JSON.parse(await ok("get", "vs", "reviews", "-n", "bookinfo", "-o", "json"));
    expect(forced.spec.http[0].route[0].destination.subset).toBe("v2");
  });

  it("get prints a table and -o yaml round-trips the object", async () => {
    const table = await ok("get", "virtualservices", "-n", "bookinfo");
    expect(table).toMatch(/^NAME\s+AGE/m);
    expect(table).toMatch(/^reviews\s+\d+s/m);
    expect(await ok("get", "vs", "-A", "-l", "app=reviews", "-o", "name")).toBe("virtualservice.networking.istio.io/reviews\n");
    expect(await ok("get", "vs", "-A", "-l", "app!=reviews", "-o", "name")).toBe("");
    const missing = await kubectl("get", "configmap", "nope", "-n", "default");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('configmaps "nope" not found');
  });

  it("get -w prints watch events as they happen", async () => {
    const child = spawn(kubectlPath, ["get", "configmaps", "-n", "default", "-w", "--output-watch-events"], { env });
    const lines: string[] = [];
    let buffer = "";
    child.stdout.on("data", (d: Buffer) => {
      buffer += d.toString();
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      lines.push(...parts);
    });
    const events = (): string[] => lines.map((l) => /^(ADDED|MODIFIED|DELETED)\s+(\S+)/.exec(l)).filter((m) => m !== null).map((m) => `${m[1]} ${m[2]}`);
    try {
      await waitFor(() => kube.emulator.openWatches() > 0, "kubectl's watch to open");
      await ok("create", "configmap", "watched", "-n", "default", "--from-literal=a=1");
      await ok("patch", "configmap", "watched", "-n", "default", "--type=merge", "-p", '{"data":{"a":"2"}}');
      await ok("delete", "configmap", "watched", "-n", "default");
      await waitFor(() => events().length >= 3, "three events from kubectl get -w");
      expect(events()).toEqual(["ADDED watched", "MODIFIED watched", "DELETED watched"]);
    } finally {
      child.kill();
    }
  });

  it("create of built-in kinds (protobuf bodies from kubectl >= 1.32) stores what a JSON client would", async () => {
    await ok("create", "namespace", "made");
    await ok("create", "configmap", "c", "-n", "made", "--from-literal=a=b");
    await ok("create", "secret", "generic", "s", "-n", "made", "--from-literal=p=q");
    await ok("create", "deployment", "d", "-n", "made", "--image=nginx:1", "--port=80", "--replicas=0");
    await ok("create", "service", "clusterip", "svc", "-n", "made", "--tcp=80:8080");
    await ok("create", "role", "r", "-n", "made", "--verb=get", "--resource=pods");
    await ok("create", "rolebinding", "rb", "-n", "made", "--role=r", "--user=bob");
    await ok("run", "p", "-n", "made", "--image=nginx", "--env=A=B", "--", "sleep", "1");
    const get = (apiVersion: string, kind: string, name: string): Record<string, any> => kube.emulator.get(apiVersion, kind, "made", name) as Record<string, any>;
    expect(get("v1", "ConfigMap", "c").data).toEqual({ a: "b" });
    expect(get("v1", "Secret", "s")).toMatchObject({ data: { p: "cQ==" }, type: "Opaque" });
    const d = get("apps/v1", "Deployment", "d");
    expect(d.spec.replicas).toBe(0);
    expect(d.spec.template.spec.containers).toEqual([{ name: "nginx", image: "nginx:1", ports: [{ containerPort: 80 }], resources: {} }]);
    expect(get("v1", "Service", "svc").spec.ports).toEqual([{ name: "80-8080", port: 80, protocol: "TCP", targetPort: 8080 }]);
    expect(get("rbac.authorization.k8s.io/v1", "Role", "r").rules).toEqual([{ verbs: ["get"], apiGroups: [""], resources: ["pods"] }]);
    expect(get("rbac.authorization.k8s.io/v1", "RoleBinding", "rb").subjects).toEqual([{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "bob" }]);
    expect(get("v1", "Pod", "p").spec.containers[0]).toMatchObject({ name: "p", args: ["sleep", "1"], env: [{ name: "A", value: "B" }] });
  });

  it("sends the body format of its minor (protobuf from 1.32 on, JSON before) and the emulator takes it", async () => {
    const minor = /^1\.(\d+)\b/.exec(label);
    expect(minor, `kubectl minor of "${label}"`).not.toBeNull();
    // -v=8 logs the request headers; --validate=false keeps the OpenAPI download out of the log.
    const r = await kubectl("create", "configmap", "wire", "-n", "default", "--from-literal=k=v", "--validate=false", "-v=8");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("configmap/wire created");
    // The first Content-Type after the POST line is the request's (the answer's is logged after it).
    const post = r.stderr.slice(r.stderr.indexOf("POST"));
    expect(/Content-Type: (application\/vnd\.kubernetes\.protobuf|application\/json)/.exec(post)?.[1]).toBe(Number(minor![1]) >= 32 ? "application/vnd.kubernetes.protobuf" : "application/json");
    expect(post).toMatch(/201 Created/);
    expect(kube.emulator.get("v1", "ConfigMap", "default", "wire")?.data).toEqual({ k: "v" });
  });

  it("delete removes the object (and a namespace its contents)", async () => {
    expect(await ok("delete", "vs", "reviews", "-n", "bookinfo")).toContain('virtualservice.networking.istio.io "reviews" deleted');
    expect(kube.emulator.get("networking.istio.io/v1", "VirtualService", "bookinfo", "reviews")).toBeUndefined();
    await ok("create", "configmap", "inner", "-n", "bookinfo");
    await ok("delete", "namespace", "bookinfo", "--wait=false");
    expect(kube.emulator.list("v1", "ConfigMap", "bookinfo")).toEqual([]);
    const gone = await kubectl("delete", "vs", "reviews", "-n", "default");
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain("NotFound");
  });
});

async function waitFor(cond: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
