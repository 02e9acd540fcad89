/**
 * Conformance of the kube-emulator, checked by a client the project never uses: the official
 * Kubernetes Python client (Debian `python3-kubernetes`). The checks live in
 * python_client_checks.py (written from the Kubernetes API documentation); this file starts an
 * emulator, runs them all in one Python process and reports each as its own test.
 *
 * Requires /usr/bin/python3 with the `kubernetes` module (`apt-get install python3-kubernetes`;
 * PYTHON=/path/to/python3 picks another interpreter). Without it this suite FAILS with
 * instructions instead of skipping.
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startKube, type StartedKube } from "../../helpers/kube.js";

const python = process.env.PYTHON ?? "/usr/bin/python3";
const script = fileURLToPath(new URL("./python_client_checks.py", import.meta.url));

interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly error?: string;
  readonly trace?: string;
  readonly ms: number;
}

function listChecks(): { names: string[]; problem?: string } {
  try {
    execFileSync(python, ["-c", "import kubernetes"], { stdio: "pipe" });
  } catch {
    return { names: [], problem: `${python} cannot import the kubernetes module: install Debian's python3-kubernetes (apt-get install -y python3-kubernetes) or set PYTHON` };
  }
  const out = execFileSync(python, [script, "--list"], { encoding: "utf8" });
  return { names: out.split("\n").filter((l) => l !== "") };
}

const { names, problem } = listChecks();
let kube: StartedKube;
let dir: string;
const results = new Map<string, CheckResult>();

beforeAll(async () => {
  if (problem !== undefined) throw new Error(problem);
  kube = await startKube();
  dir = await mkdtemp(join(tmpdir(), "python-conformance-"));
  const kubeconfig = join(dir, "kubeconfig");
  await kube.emulator.writeKubeconfig(kubeconfig);
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(python, [script, "--kubeconfig", kubeconfig], { timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (err, out, stderr) => {
      if (err !== null) reject(new Error(`${python} ${script} failed: ${err.message}\n${stderr}`));
      else resolve(out);
    });
  });
  for (const line of stdout.split("\n")) {
    if (line.trim() === "") continue;
    const r = JSON.parse(line) as CheckResult;
    results.set(r.name, r);
  }
}, 150_000);

afterAll(async () => {
  if (problem === undefined) await kube.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("official Python client (python3-kubernetes) against the emulator", () => {
  it("has checks to run", () => {
    expect(problem).toBeUndefined();
    expect(names.length).toBeGreaterThan(0);
  });
  it.each(names)("%s", (name) => {
    const r = results.get(name);
    expect(r, `no result for "${name}"`).toBeDefined();
    if (!r!.ok) throw new Error(`${r!.error ?? "failed"}\n${r!.trace ?? ""}`);
  });
});
