/**
 * `gitmesh kube-emulator` as a real process: prints its URL and a kubeconfig path, serves the seed
 * file, stops on SIGTERM; a bad seed file gives file:line diagnostics and exit status 1.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";

const main = new URL("../../src/cli/main.ts", import.meta.url).pathname;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kube-emulator-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function run(args: string[]): { child: ChildProcess; stdout: () => string; stderr: () => string; exit: Promise<number | null> } {
  const child = spawn(process.execPath, ["--import", "tsx", main, "kube-emulator", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exit };
}

describe("gitmesh kube-emulator", () => {
  it("serves the seed file and writes a kubeconfig that points at it", async () => {
    const seed = join(dir, "seed.yaml");
    await writeFile(seed, "apiVersion: v1\nkind: Namespace\nmetadata: {name: istio-system}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: istiod, namespace: istio-system}\nspec: {ports: [{port: 15012}]}\n");
    const kubeconfig = join(dir, "kc.yaml");
    const p = run(["--port", "0", "--seed", seed, "--kubeconfig", kubeconfig]);
    try {
      const deadline = Date.now() + 30_000;
      while (!p.stdout().includes("kubeconfig:") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(p.stdout())?.[1];
      expect(url, p.stdout() + p.stderr()).toBeDefined();
      expect(p.stdout()).toContain("seeded 2 objects");
      expect(p.stdout()).toContain(`kubeconfig: ${kubeconfig}`);
      const cfg = parse(await readFile(kubeconfig, "utf8"));
      expect(cfg.clusters[0].cluster.server).toBe(url);
      const svc = (await (await fetch(`${url}/api/v1/namespaces/istio-system/services/istiod`)).json()) as { spec: unknown };
      expect(svc.spec).toMatchObject({ ports: [{ port: 15012, protocol: "TCP" }], type: "ClusterIP" });
    } finally {
      p.child.kill("SIGTERM");
    }
    expect(await p.exit).toBe(0);
  });

  it("reports a bad seed file with file:line and exits 1", async () => {
    const seed = join(dir, "bad.yaml");
    await writeFile(seed, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\nkind: [unclosed\n");
    const p = run(["--seed", seed]);
    expect(await p.exit).toBe(1);
    expect(p.stderr()).toContain(`${seed}:5:1: error KUBE_SEED_UNKNOWN_KIND`);
    expect(p.stderr()).toContain(`${seed}:10:1: error KUBE_SEED_YAML_SYNTAX`); // the unclosed [ is found at the end of the file
  });

  it("rejects a bad port as a usage error (exit 2)", async () => {
    const p = run(["--port", "seventy"]);
    expect(await p.exit).toBe(2);
    expect(p.stderr()).toContain("--port must be an integer");
  });
});
