/* eslint-disable @typescript-eslint/no-explicit-any -- objects read back from the server are untyped JSON */
/**
 * The kubectl conformance scenarios of issue #18, written from kubectl's and the API's documentation
 * — server-side dry run (diff, delete), client-side apply / set image / edit (strategic merge patch
 * on a Deployment), server-side apply of keyed lists, typed-patch errors, categories, finalizers and
 * namespace termination, field selectors — against any API server: calibration.test.ts runs them
 * with every kubectl minor against the emulator and against a real kube-apiserver. They run in order
 * (later ones use what earlier ones created) in the namespace `conf`.
 */
import { chmod, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "vitest";

export interface KubectlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface KubectlTarget {
  /** A scratch directory of this target (kubeconfig, HOME, files). */
  readonly dir: string;
  kubectl(args: readonly string[], extraEnv?: NodeJS.ProcessEnv): Promise<KubectlRun>;
  /** The live object, read over HTTP as the admin (undefined when it does not exist). */
  live(apiVersion: string, kind: string, namespace: string, name: string): Promise<any>;
  /** Records an answer of the server for the calibration's table of differences. */
  observe(what: string, value: unknown): void;
}

export interface KubectlScenario {
  readonly name: string;
  run(t: KubectlTarget): Promise<void>;
}

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

async function ok(t: KubectlTarget, ...args: string[]): Promise<string> {
  const r = await t.kubectl(["-n", "conf", ...args]);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

async function file(t: KubectlTarget, name: string, text: string): Promise<string> {
  const p = join(t.dir, name);
  await writeFile(p, text);
  return p;
}

async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const KUBECTL_SCENARIOS: readonly KubectlScenario[] = [
  {
    name: "client-side apply, set image and edit of a Deployment merge containers by name: ports, env and mounts stay, no $setElementOrder stored",
    async run(t) {
      await ok(t, "create", "namespace", "conf");
      await ok(t, "apply", "-f", await file(t, "d1.yaml", deployment("app:1")));
      await ok(t, "apply", "-f", await file(t, "d2.yaml", deployment("app:2")));
      await ok(t, "set", "image", "deployment/web", "side=side:2");
      const editor = await file(t, "editor.sh", "#!/bin/sh\nsed -i 's/image: app:2/image: app:3/' \"$1\"\n");
      await chmod(editor, 0o755);
      const edited = await t.kubectl(["-n", "conf", "edit", "deployment/web"], { KUBE_EDITOR: editor, EDITOR: editor });
      expect(edited.code, edited.stderr).toBe(0);
      const spec = (await t.live("apps/v1", "Deployment", "conf", "web")).spec.template.spec;
      expect(JSON.stringify(spec)).not.toContain("$setElementOrder");
      // Only what was written: the server's defaults (imagePullPolicy, terminationMessagePath, …) are not compared.
      expect(spec.containers.map((c: any) => ({ name: c.name, image: c.image, ports: c.ports, env: c.env, volumeMounts: c.volumeMounts }))).toEqual([
        { name: "app", image: "app:3", ports: [expect.objectContaining({ containerPort: 8080 })], env: [{ name: "MODE", value: "prod" }], volumeMounts: [{ name: "data", mountPath: "/data" }] },
        { name: "side", image: "side:2", ports: undefined, env: undefined, volumeMounts: undefined },
      ]);
    },
  },
  {
    name: "scale goes through the /scale subresource and changes replicas only",
    async run(t) {
      await ok(t, "scale", "deployment", "web", "--replicas=3");
      const d = await t.live("apps/v1", "Deployment", "conf", "web");
      expect(d.spec.replicas).toBe(3);
      expect(d.spec.template.spec.containers[0].image).toBe("app:3");
      await ok(t, "scale", "deployment", "web", "--replicas=1", "--current-replicas=3");
    },
  },
  {
    name: "diff --server-side and delete --dry-run=server change nothing",
    async run(t) {
      const before = await t.live("apps/v1", "Deployment", "conf", "web");
      const diff = await t.kubectl(["-n", "conf", "diff", "--server-side", "--force-conflicts", "-f", await file(t, "d4.yaml", deployment("app:4"))]);
      expect(diff.code, diff.stderr).toBe(1); // 1: differences found
      expect(diff.stdout).toContain("app:4");
      expect(await ok(t, "delete", "deployment", "web", "--dry-run=server")).toContain("deleted (server dry run)");
      const after = await t.live("apps/v1", "Deployment", "conf", "web");
      expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
      expect(after.spec.template.spec.containers[0].image).toBe("app:3");
    },
  },
  {
    name: "server-side apply merges ServiceEntry ports by name across field managers; get by category (istio-io, all) lists it",
    async run(t) {
      await ok(t, "apply", "--server-side", "--field-manager=one", "-f", await file(t, "se1.yaml", serviceEntry("{name: https, number: 443, protocol: TLS}")));
      await ok(t, "apply", "--server-side", "--field-manager=two", "-f", await file(t, "se2.yaml", serviceEntry("{name: http, number: 80, protocol: HTTP}")));
      expect((await t.live("networking.istio.io/v1", "ServiceEntry", "conf", "ext")).spec.ports.map((p: any) => p.name).sort()).toEqual(["http", "https"]);
      expect(await ok(t, "get", "istio-io", "-o", "name")).toContain("serviceentry.networking.istio.io/ext");
      // `all`: the built-in workloads and Services (not ConfigMaps, not Istio kinds).
      const all = await ok(t, "get", "all", "-o", "name");
      expect(all).toContain("deployment.apps/web");
      expect(all).not.toContain("serviceentry");
      expect(await ok(t, "get", "serviceentries.v1beta1.networking.istio.io", "ext", "-o", "jsonpath={.apiVersion}")).toBe("networking.istio.io/v1beta1");
    },
  },
  {
    name: "server-side apply of an unknown field or a wrong type fails making the typed patch (HTTP 500, whatever the validation mode); a bad label value is refused",
    async run(t) {
      // The server turns an apply patch into a typed object of the schema before validating it:
      // what does not fit fails there, with an internal error, not as a validation error.
      const bad = await t.kubectl(["-n", "conf", "apply", "--server-side", "-f", await file(t, "bad.yaml", serviceEntry("{name: x, number: 1}").replace("resolution: DNS", "resolution: DNS\n  bogus: 1"))]);
      t.observe("unknown field", bad.stderr.trim());
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain("Error from server: failed to create typed patch object (conf/ext; networking.istio.io/v1, Kind=ServiceEntry): .spec.bogus: field not declared in schema");
      const wrong = await t.kubectl(["-n", "conf", "apply", "--server-side", "-f", await file(t, "wrong.yaml", serviceEntry("{name: x, number: 1}").replace("hosts: [ext.example.com]", "hosts: ext.example.com"))]);
      t.observe("wrong type", wrong.stderr.trim());
      expect(wrong.code).not.toBe(0);
      expect(wrong.stderr).toContain("failed to create typed patch object (conf/ext; networking.istio.io/v1, Kind=ServiceEntry): .spec.hosts: expected list, got &{ext.example.com}");
      const label = await t.kubectl(["-n", "conf", "label", "serviceentry", "ext", "tier=not valid!"]);
      expect(label.code).not.toBe(0);
      expect(label.stderr).toMatch(/Invalid value|invalid label value/);
    },
  },
  {
    name: "finalizers hold an object, a namespace terminates around it, field selectors filter by kind-specific fields",
    async run(t) {
      await ok(t, "create", "namespace", "doomed");
      await ok(t, "create", "configmap", "held", "-n", "doomed");
      await ok(t, "patch", "configmap", "held", "-n", "doomed", "--type=merge", "-p", '{"metadata":{"finalizers":["example.com/hold"]}}');
      await ok(t, "delete", "namespace", "doomed", "--wait=false");
      expect(await ok(t, "get", "namespace", "doomed", "-o", "jsonpath={.status.phase}")).toBe("Terminating");
      // The namespace controller deletes the contents: the held ConfigMap gets its deletionTimestamp.
      await eventually("the held ConfigMap marked for deletion", async () => (await ok(t, "get", "configmap", "held", "-n", "doomed", "-o", "jsonpath={.metadata.deletionTimestamp}")) !== "");
      await ok(t, "patch", "configmap", "held", "-n", "doomed", "--type=merge", "-p", '{"metadata":{"finalizers":null}}');
      await eventually("the namespace gone", async () => {
        const gone = await t.kubectl(["get", "namespace", "doomed"]);
        return gone.code !== 0 && gone.stderr.includes("NotFound");
      });
      await ok(t, "create", "secret", "generic", "typed", "--type=example.com/x", "--from-literal=a=b");
      expect(await ok(t, "get", "secrets", "--field-selector=type=example.com/x", "-o", "name")).toBe("secret/typed\n");
    },
  },
];
