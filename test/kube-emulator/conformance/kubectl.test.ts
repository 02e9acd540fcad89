/* eslint-disable @typescript-eslint/no-explicit-any -- objects read back from the emulator are untyped JSON */
/**
 * Conformance of the kube-emulator, checked with every kubectl minor on the machine
 * (../kubectl-binaries.ts): the scenarios of issue #18 written from kubectl's and the API's
 * documentation — server-side dry run (diff, delete), client-side apply / set image / edit
 * (strategic merge patch on a Deployment), server-side apply of keyed lists, field validation,
 * categories, finalizers and namespace termination, field selectors. Each kubectl gets its own emulator.
 */
import { execFile } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startKube, type StartedKube } from "../../helpers/kube.js";
import { findKubectls, type KubectlBinary } from "../kubectl-binaries.js";

const binaries = findKubectls();

it("finds kubectl binaries", () => {
  expect(binaries.length, "no kubectl on PATH (apt-get install kubernetes-client) or $KUBECTL").toBeGreaterThan(0);
});

const deployment = (image: string): string => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: conf}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: ${image}
        ports: [{containerPort: 8080}]
        env: [{name: MODE, value: prod}]
        volumeMounts: [{name: data, mountPath: /data}]
      - name: side
        image: side:1
      volumes: [{name: data, emptyDir: {}}]
`;

const serviceEntry = (port: string): string => `apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: ext, namespace: conf}
spec:
  hosts: [ext.example.com]
  resolution: DNS
  ports: [${port}]
`;

describe.each(binaries)("kubectl $label: conformance", ({ path: kubectlPath }: KubectlBinary) => {
  let kube: StartedKube;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    kube = await startKube({ seed: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "conf" } }] });
    dir = await mkdtemp(join(tmpdir(), "kubectl-conformance-"));
    await kube.emulator.writeKubeconfig(join(dir, "kubeconfig"), { namespace: "conf" });
    env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, KUBECONFIG: join(dir, "kubeconfig") };
  });
  afterAll(async () => {
    await kube.stop();
    await rm(dir, { recursive: true, force: true });
  });

  function kubectl(args: readonly string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      execFile(kubectlPath, args, { env: { ...env, ...extraEnv }, timeout: 30_000 }, (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : typeof err.code === "number" ? err.code : 1, stdout, stderr });
      });
    });
  }
  async function ok(...args: string[]): Promise<string> {
    const r = await kubectl(args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
    return r.stdout;
  }
  const file = async (name: string, text: string): Promise<string> => {
    const p = join(dir, name);
    await writeFile(p, text);
    return p;
  };
  const live = (apiVersion: string, kind: string, name: string): any => kube.emulator.get(apiVersion, kind, "conf", name);

  it("client-side apply, set image and edit of a Deployment merge containers by name: ports, env and mounts stay, no $setElementOrder stored", async () => {
    await ok("apply", "-f", await file("d1.yaml", deployment("app:1")));
    await ok("apply", "-f", await file("d2.yaml", deployment("app:2")));
    await ok("set", "image", "deployment/web", "side=side:2");
    const editor = await file("editor.sh", "#!/bin/sh\nsed -i 's/image: app:2/image: app:3/' \"$1\"\n");
    await chmod(editor, 0o755);
    const edited = await kubectl(["edit", "deployment/web"], { KUBE_EDITOR: editor, EDITOR: editor });
    expect(edited.code, edited.stderr).toBe(0);
    const spec = live("apps/v1", "Deployment", "web").spec.template.spec;
    expect(JSON.stringify(spec)).not.toContain("$setElementOrder");
    expect(spec.containers).toEqual([
      { name: "app", image: "app:3", ports: [{ containerPort: 8080 }], env: [{ name: "MODE", value: "prod" }], volumeMounts: [{ name: "data", mountPath: "/data" }] },
      { name: "side", image: "side:2" },
    ]);
  });

  it("scale goes through the /scale subresource and changes replicas only", async () => {
    await ok("scale", "deployment", "web", "--replicas=3");
    const d = live("apps/v1", "Deployment", "web");
    expect(d.spec.replicas).toBe(3);
    expect(d.spec.template.spec.containers[0].image).toBe("app:3");
    await ok("scale", "deployment", "web", "--replicas=1", "--current-replicas=3");
  });

  it("diff --server-side and delete --dry-run=server change nothing", async () => {
    const before = live("apps/v1", "Deployment", "web");
    const diff = await kubectl(["diff", "--server-side", "--force-conflicts", "-f", await file("d4.yaml", deployment("app:4"))]);
    expect(diff.code, diff.stderr).toBe(1); // 1: differences found
    expect(diff.stdout).toContain("app:4");
    expect(await ok("delete", "deployment", "web", "--dry-run=server")).toContain("deleted (server dry run)");
    const after = live("apps/v1", "Deployment", "web");
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
    expect(after.spec.template.spec.containers[0].image).toBe("app:3");
  });

  it("server-side apply merges ServiceEntry ports by name across field managers; get by category (istio-io, all) lists it", async () => {
    await ok("apply", "--server-side", "--field-manager=one", "-f", await file("se1.yaml", serviceEntry("{name: https, number: 443, protocol: TLS}")));
    await ok("apply", "--server-side", "--field-manager=two", "-f", await file("se2.yaml", serviceEntry("{name: http, number: 80, protocol: HTTP}")));
    expect(live("networking.istio.io/v1", "ServiceEntry", "ext").spec.ports.map((p: any) => p.name).sort()).toEqual(["http", "https"]);
    expect(await ok("get", "istio-io", "-o", "name")).toContain("serviceentry.networking.istio.io/ext");
    // `all`: the built-in workloads and Services (not ConfigMaps, not Istio kinds).
    const all = await ok("get", "all", "-o", "name");
    expect(all).toContain("deployment.apps/web");
    expect(all).not.toContain("serviceentry");
    expect(await ok("get", "serviceentries.v1beta1.networking.istio.io", "ext", "-o", "jsonpath={.apiVersion}")).toBe("networking.istio.io/v1beta1");
  });

  it("refuses an unknown field (kubectl validates strictly) and a wrong type", async () => {
    const bad = await kubectl(["apply", "--server-side", "-f", await file("bad.yaml", serviceEntry("{name: x, number: 1}").replace("resolution: DNS", "resolution: DNS\n  bogus: 1"))]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/unknown field "spec\.bogus"/);
    const wrong = await kubectl(["apply", "--server-side", "-f", await file("wrong.yaml", serviceEntry("{name: x, number: 1}").replace("hosts: [ext.example.com]", "hosts: ext.example.com"))]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain("spec.hosts");
    const label = await kubectl(["label", "serviceentry", "ext", "tier=not valid!"]);
    expect(label.code).not.toBe(0);
    expect(label.stderr).toMatch(/Invalid value|invalid label value/);
  });

  it("finalizers hold an object, a namespace terminates around it, field selectors filter by kind-specific fields", async () => {
    await ok("create", "namespace", "doomed");
    await ok("create", "configmap", "held", "-n", "doomed");
    await ok("patch", "configmap", "held", "-n", "doomed", "--type=merge", "-p", '{"metadata":{"finalizers":["example.com/hold"]}}');
    await ok("delete", "namespace", "doomed", "--wait=false");
    expect(await ok("get", "namespace", "doomed", "-o", "jsonpath={.status.phase}")).toBe("Terminating");
    expect(await ok("get", "configmap", "held", "-n", "doomed", "-o", "jsonpath={.metadata.deletionTimestamp}")).not.toBe("");
    await ok("patch", "configmap", "held", "-n", "doomed", "--type=merge", "-p", '{"metadata":{"finalizers":null}}');
    const gone = await kubectl(["get", "namespace", "doomed"]);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain("NotFound");
    await ok("create", "secret", "generic", "typed", "--type=example.com/x", "--from-literal=a=b");
    expect(await ok("get", "secrets", "--field-selector=type=example.com/x", "-o", "name")).toBe("secret/typed\n");
  });
});
