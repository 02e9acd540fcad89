/**
 * Golden cases: test/fixtures/translate/<case>/ holds
 *   input.yaml (or input/ with several .yaml files)  — Gloo objects, loaded by src/config's loader
 *   discovery.yaml (DiscoverySnapshot documents, one per cluster) or discovery/<cluster>/… (snapshots or Kubernetes manifests)
 *   output.yaml       — every rendered resource of every cluster (`# cluster: <name>` before each document)
 *   diagnostics.txt   — every diagnostic (loader + translation), one formatted line each
 * UPDATE_GOLDEN=1 rewrites output.yaml and diagnostics.txt from the current translation.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { parseAllDocuments } from "yaml";
import { loadDesiredState, type DesiredState, type SourceFile } from "../../src/config/index.js";
import { canonicalYaml, formatDiagnostic, sortDiagnostics, type Diagnostic } from "../../src/core/index.js";
import { discoveryFromFiles, normalizeSnapshot, type DiscoverySnapshot } from "../../src/discovery/index.js";
import { translateAll, type TranslationResult } from "../../src/translate/index.js";

export const FIXTURES = new URL("../fixtures/translate/", import.meta.url).pathname;

export interface GoldenCase {
  readonly name: string;
  readonly dir: string;
  readonly desired: DesiredState;
  readonly discovery: Map<string, DiscoverySnapshot>;
  readonly inputDiagnostics: readonly Diagnostic[];
}

export function caseNames(): string[] {
  return readdirSync(FIXTURES)
    .filter((n) => statSync(join(FIXTURES, n)).isDirectory())
    .sort();
}

function walk(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : [join(dir, n)]));
}

export function loadCase(name: string, order: (files: SourceFile[]) => SourceFile[] = (f) => f): GoldenCase {
  const dir = join(FIXTURES, name);
  const inputs = existsSync(join(dir, "input")) ? walk(join(dir, "input")).map((p) => ({ path: relative(dir, p), content: readFileSync(p, "utf8") })) : [{ path: "input.yaml", content: readFileSync(join(dir, "input.yaml"), "utf8") }];
  const loaded = loadDesiredState(order(inputs));
  let discovery: Map<string, DiscoverySnapshot>;
  const diags: Diagnostic[] = [...loaded.diagnostics];
  if (existsSync(join(dir, "discovery"))) {
    const root = join(dir, "discovery");
    const r = discoveryFromFiles(walk(root).map((p) => ({ path: relative(root, p), content: readFileSync(p, "utf8") })));
    discovery = r.snapshots;
    diags.push(...r.diagnostics);
  } else {
    discovery = new Map();
    for (const doc of parseAllDocuments(readFileSync(join(dir, "discovery.yaml"), "utf8"))) {
      const raw = doc.toJS() as Record<string, unknown> & { cluster: string };
      const snap = normalizeSnapshot({ namespaces: [], services: [], workloads: [], localities: [], meshes: [], gateways: [], istioObjects: [], ...raw });
      discovery.set(raw.cluster, snap);
    }
  }
  return { name, dir, desired: loaded.state, discovery, inputDiagnostics: diags };
}

export function renderOutput(result: TranslationResult): string {
  const docs: string[] = [];
  for (const [cluster, out] of result.clusters) for (const r of out.resources) docs.push(`# cluster: ${cluster}\n${canonicalYaml(r)}`);
  return docs.join("---\n");
}

export function renderDiagnostics(list: readonly Diagnostic[]): string {
  return sortDiagnostics(list)
    .map((d) => formatDiagnostic(d) + "\n")
    .join("");
}

export function runCase(c: GoldenCase): { result: TranslationResult; output: string; diagnostics: string } {
  const result = translateAll(c.desired, c.discovery);
  return { result, output: renderOutput(result), diagnostics: renderDiagnostics([...c.inputDiagnostics, ...result.diagnostics]) };
}
