/**
 * Test helper: builds tools/helm-render with Debian's Go (offline, GOPATH mode against
 * /usr/share/gocode, where golang-github-masterminds-sprig-dev and
 * golang-github-xeipuuv-gojsonschema-dev install their sources) and runs it like `helm template`.
 */
import { execFile } from "node:child_process";
import { mkdirSync, renameSync, statSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parseDocument } from "yaml";

const run = promisify(execFile);
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CHARTS = join(ROOT, "charts");
const TOOL_DIR = join(ROOT, "tools", "helm-render");
const BIN = join(ROOT, ".tmp", "helm-render");

function newestSource(): number {
  return Math.max(...readdirSync(TOOL_DIR).map((f) => statSync(join(TOOL_DIR, f)).mtimeMs));
}

/** Builds the renderer into .tmp/ unless an up-to-date binary is there; returns its path. */
export async function buildRenderer(): Promise<string> {
  try {
    if (statSync(BIN).mtimeMs >= newestSource()) return BIN;
  } catch {
    // not built yet
  }
  mkdirSync(join(ROOT, ".tmp"), { recursive: true });
  // Build to a private name then rename: test files run in parallel workers.
  const tmp = `${BIN}.${String(process.pid)}`;
  try {
    await run("go", ["build", "-o", tmp, "./tools/helm-render"], {
      cwd: ROOT,
      env: { ...process.env, GO111MODULE: "off", GOPATH: "/usr/share/gocode", GOCACHE: join(ROOT, ".tmp", "gocache"), GOFLAGS: "" },
    });
  } catch (err) {
    const e = err as { code?: string; stderr?: string };
    if (e.code === "ENOENT") {
      throw new Error("go is not installed: apt-get install golang-go golang-github-masterminds-sprig-dev golang-github-xeipuuv-gojsonschema-dev (see .ci/run)");
    }
    throw new Error(`building tools/helm-render failed:\n${e.stderr ?? String(err)}`);
  }
  renameSync(tmp, BIN);
  return BIN;
}

export interface RenderResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the renderer on charts/<chart> (or an absolute chart path) with helm-template-like args. */
export async function render(chart: string, args: readonly string[] = []): Promise<RenderResult> {
  const bin = await buildRenderer();
  const dir = chart.startsWith("/") ? chart : join(CHARTS, chart);
  try {
    const { stdout, stderr } = await run(bin, [...args, dir], { maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === "number" ? e.code : -1, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
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

/** Renders and fails loudly (with the renderer's stderr) unless it succeeds. */
export async function renderOk(chart: string, args: readonly string[] = []): Promise<{ text: string; manifests: Manifest[] }> {
  const r = await render(chart, args);
  if (r.code !== 0) throw new Error(`render of ${chart} failed (${String(r.code)}):\n${r.stderr}`);
  return { text: r.stdout, manifests: parseManifests(r.stdout) };
}
