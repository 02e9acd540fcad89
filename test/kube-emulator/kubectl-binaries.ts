/**
 * The kubectl binaries on this machine: $KUBECTL when set (only that one), else every versioned
 * `kubectl.1.NN` next to `kubectl` on PATH (the Google Cloud SDK ships several minors; the `kubectl`
 * there is a dispatcher that picks one) and `kubectl` itself when its minor is not among them. Each is tested separately: kubectl ≥ 1.32 sends
 * protobuf bodies for built-in kinds, older ones JSON.
 */
import { execFileSync } from "node:child_process";
import { accessSync, constants, readdirSync, realpathSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";

export interface KubectlBinary {
  /** `1.33`, or the dispatcher's reported minor, e.g. `1.32 (kubectl)`. */
  readonly label: string;
  readonly path: string;
}

function executable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function clientMinor(path: string): string {
  try {
    const out = execFileSync(path, ["version", "--client", "-o", "json"], { encoding: "utf8", timeout: 20_000, env: { PATH: process.env.PATH ?? "", HOME: "/tmp" } });
    const v = (JSON.parse(out) as { clientVersion?: { major?: string; minor?: string } }).clientVersion;
    return `${v?.major ?? "?"}.${(v?.minor ?? "?").replace(/\D+$/, "")}`;
  } catch {
    return "?";
  }
}

export function findKubectls(): KubectlBinary[] {
  const fromEnv = process.env.KUBECTL;
  if (fromEnv !== undefined && fromEnv !== "") return executable(fromEnv) ? [{ label: `${clientMinor(fromEnv)} ($KUBECTL)`, path: fromEnv }] : [];
  const onPath = (process.env.PATH ?? "").split(delimiter).map((d) => join(d, "kubectl")).find(executable);
  if (onPath === undefined) return [];
  const out: KubectlBinary[] = [];
  const dir = dirname(realpathSync(onPath));
  const versioned = readdirSync(dir)
    .map((f) => /^kubectl\.(\d+)\.(\d+)$/.exec(f))
    .filter((m) => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]) || Number(a[2]) - Number(b[2]));
  for (const m of versioned) {
    const p = join(dir, m[0]);
    if (executable(p)) out.push({ label: `${m[1]!}.${m[2]!}`, path: p });
  }
  // `kubectl` itself, unless it is one of the versioned binaries again (a dispatcher picking a minor).
  const minor = clientMinor(onPath);
  if (!out.some((b) => b.label === minor)) out.unshift({ label: `${minor} (kubectl on PATH)`, path: onPath });
  return out;
}
