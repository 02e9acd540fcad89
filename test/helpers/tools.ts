/**
 * Test helper: where the Go test tools (tools/<name>, built by scripts/build-tools.mjs into a cache
 * outside the repository) are. A tool that is not built fails the test with the command that builds
 * it: a real part is never skipped.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const MANIFEST = join(ROOT, ".tmp", "tools.json");

interface ManifestEntry {
  readonly dir: string;
  readonly built: boolean;
  readonly binaries: Record<string, string>;
}

/** The path of binary `bin` of tools/<tool>; throws naming the build command when it is missing. */
export function toolBinary(tool: string, bin: string): string {
  const retry = `node scripts/build-tools.mjs ${tool}`;
  if (!existsSync(MANIFEST)) throw new Error(`the Go test tools are not built (no .tmp/tools.json): run  ${retry}  (npm test does it)`);
  const manifest = JSON.parse(readFileSync(MANIFEST, "utf8")) as Record<string, ManifestEntry | undefined>;
  const entry = manifest[tool];
  const path = entry?.binaries[bin];
  if (entry === undefined || path === undefined) throw new Error(`tools/${tool} has no binary ${bin} in .tmp/tools.json: run  ${retry}`);
  if (!entry.built || !existsSync(path)) throw new Error(`tools/${tool} (${bin}) is not built: run  ${retry}`);
  return path;
}
