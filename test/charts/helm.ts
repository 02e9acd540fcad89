/**
 * Test helper: the real `helm` (tools/helm, helm.sh/helm/v3 built by scripts/build-tools.mjs; a
 * missing build fails with the command that builds it). Every run gets its own HELM_CACHE_HOME,
 * HELM_CONFIG_HOME and HELM_DATA_HOME in a temporary directory, removed afterwards, so nothing is read
 * from or written to the user's ~ (repositories, plugins, registry logins); KUBECONFIG points nowhere
 * unless the caller gives one.
 *
 *   await renderOk("gitmesh-agent", ["--name", "agent", "--namespace", "gitmesh", "--set", "…"]);  // helm template agent charts/gitmesh-agent …
 *   await lint("gitmesh-server", ["--set", "git.url=…"]);                                       // helm lint --strict charts/gitmesh-server …
 *   await notes("gitmesh-server", [...]);                                                       // NOTES.txt as `helm install` prints it
 *
 * `--name NAME` in args is the release name, helm's NAME argument (default: helm's `release-name`).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseDocument } from "yaml";
import { toolBinary } from "../helpers/tools.js";
import { startKube } from "../helpers/kube.js";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CHARTS = join(ROOT, "charts");
const TRUE = existsSync("/usr/bin/true") ? "/usr/bin/true" : "/bin/true";

/** The helm binary built from tools/helm (throws with `node scripts/build-tools.mjs helm` when missing). */
export function helmBinary(): string {
  return toolBinary("helm", "helm");
}

export interface HelmResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface HelmOptions {
  /** Extra environment (e.g. KUBECONFIG); HELM_* homes are always private. */
  readonly env?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
}

/** Runs helm with `args` in a private Helm home; never throws for a non-zero exit. */
export async function helm(args: readonly string[], options: HelmOptions = {}): Promise<HelmResult> {
  const bin = helmBinary();
  const home = await mkdtemp(join(tmpdir(), "gitmesh-helm-"));
  // The caller's environment minus anything that would point helm at the user's own setup.
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("HELM_") && k !== "KUBECONFIG"));
  Object.assign(env, {
    HOME: home,
    HELM_CACHE_HOME: join(home, "cache"),
    HELM_CONFIG_HOME: join(home, "config"),
    HELM_DATA_HOME: join(home, "data"),
    KUBECONFIG: join(home, "no-kubeconfig"),
    ...options.env,
  });
  try {
    return await new Promise<HelmResult>((resolvePromise, reject) => {
      const child = spawn(bin, args, { env, stdio: ["ignore", "pipe", "pipe"], timeout: options.timeoutMs ?? 120_000 });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on("data", (c: Buffer) => out.push(c));
      child.stderr.on("data", (c: Buffer) => err.push(c));
      child.on("error", reject);
      child.on("close", (code, signal) =>
        resolvePromise({ code: code ?? (signal === null ? -1 : 128), stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }),
      );
    });
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}

/** charts/<chart>, or `chart` itself when it is an absolute path. */
export function chartDir(chart: string): string {
  return chart.startsWith("/") ? chart : join(CHARTS, chart);
}

/** Splits `--name NAME` (the release name) from the other helm flags. */
function releaseAndFlags(args: readonly string[]): { release: string; flags: string[] } {
  const flags = [...args];
  const i = flags.indexOf("--name");
  if (i < 0) return { release: "release-name", flags };
  const release = flags[i + 1];
  if (release === undefined) throw new Error("--name needs a release name");
  flags.splice(i, 2);
  return { release, flags };
}

/** `helm template NAME charts/<chart> …flags`. */
export async function render(chart: string, args: readonly string[] = []): Promise<HelmResult> {
  const { release, flags } = releaseAndFlags(args);
  return helm(["template", release, chartDir(chart), ...flags]);
}

export interface Manifest {
  readonly source: string;
  readonly object: Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
}

/** Splits a render into manifests, each with the template it came from. Throws on YAML errors. */
export function parseManifests(text: string): Manifest[] {
  const out: Manifest[] = [];
  for (const chunk of text.split(/^---[ \t]*$/m)) {
    if (chunk.trim() === "") continue;
    const source = /^# Source: (\S+)$/m.exec(chunk)?.[1] ?? "";
    const doc = parseDocument(chunk);
    if (doc.errors.length > 0) throw new Error(`invalid YAML in render of ${source}: ${doc.errors.map((e) => e.message).join("; ")}`);
    const object = doc.toJS() as Manifest["object"] | null;
    if (object === null) continue;
    out.push({ source, object });
  }
  return out;
}

/** Renders and fails loudly (with helm's stderr) unless it succeeds. */
export async function renderOk(chart: string, args: readonly string[] = []): Promise<{ text: string; manifests: Manifest[] }> {
  const r = await render(chart, args);
  if (r.code !== 0) throw new Error(`helm template of ${chart} failed (${String(r.code)}):\n${r.stderr}`);
  return { text: r.stdout, manifests: parseManifests(r.stdout) };
}

/** `helm lint --strict charts/<chart> …flags` (no release name: lint uses its own). */
export async function lint(chart: string, args: readonly string[] = []): Promise<HelmResult> {
  const { flags } = releaseAndFlags(args);
  return helm(["lint", "--strict", chartDir(chart), ...flags]);
}

/**
 * The chart's NOTES as `helm install` renders them. `helm template` never prints NOTES.txt, and
 * `helm install --dry-run=client` still checks that a cluster answers, asks it for its API versions
 * and maps every rendered object to a served kind (a KEDA ScaledObject would need KEDA's CRD). So
 * helm is pointed at a Kubernetes API emulator started for the call, and a post-renderer that keeps
 * no object (`true`): the NOTES are rendered from the values by the same engine, before and apart
 * from the manifests; nothing is created (a client dry run renders with no cluster lookups).
 */
export async function notes(chart: string, args: readonly string[] = []): Promise<HelmResult> {
  const { release, flags } = releaseAndFlags(args);
  const kube = await startKube();
  const dir = await mkdtemp(join(tmpdir(), "gitmesh-helm-notes-"));
  try {
    const kubeconfig = join(dir, "kubeconfig");
    await writeFile(kubeconfig, kube.emulator.kubeconfig({}));
    const r = await helm(["install", release, chartDir(chart), "--dry-run=client", "--post-renderer", TRUE, "--output", "json", ...flags], { env: { KUBECONFIG: kubeconfig } });
    if (r.code !== 0) return r;
    const rel = JSON.parse(r.stdout) as { info?: { notes?: string } };
    return { code: 0, stdout: rel.info?.notes ?? "", stderr: r.stderr };
  } finally {
    await kube.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
