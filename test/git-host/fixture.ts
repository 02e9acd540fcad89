/**
 * A configuration repository made with the git CLI from examples/repo-layout, and a way to run the
 * real CLI entry (`main`) with an environment of the test's choosing (the way the CLI reads it).
 */
import { execFileSync } from "node:child_process";
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createCapturingIo } from "../../src/cli/io.js";
import { main } from "../../src/cli/main.js";

export const EXAMPLE = join(import.meta.dirname, "..", "..", "examples", "repo-layout");
export const DISCOVERY = join(import.meta.dirname, "..", "..", "examples", "discovery");
const TIMEOUT_FILE = "workspaces/gateways/retry-timeout-httpbin.yaml";
export const BROKEN_FILE = "workspaces/gateways/broken.yaml";

export const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", ...args], { cwd, encoding: "utf8" }).trim();

export interface MeshRepo {
  readonly dir: string;
  /** Without the bookinfo-backends workspace: c0 → c1 adds many resources (a long report). */
  readonly c0: string;
  /** examples/repo-layout as it is. */
  readonly c1: string;
  /** httpbin's request timeout 7s, then 9s. */
  readonly c2: string;
  readonly c3: string;
  /** c3 plus a RouteTable with an error. */
  readonly broken: string;
}

/** Commits on main: c0, c1, c2, c3, broken (HEAD). */
export function makeMeshRepo(dir: string): MeshRepo {
  git(dir, "init", "-q");
  cpSync(EXAMPLE, dir, { recursive: true });
  rmSync(join(dir, "workspaces", "bookinfo-backends"), { recursive: true });
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "gateways and frontends");
  const c0 = git(dir, "rev-parse", "HEAD");
  cpSync(EXAMPLE, dir, { recursive: true });
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "backends");
  const c1 = git(dir, "rev-parse", "HEAD");
  const file = join(dir, TIMEOUT_FILE);
  const original = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const t of ["7s", "9s"]) {
    writeFileSync(file, original.replace("requestTimeout: 5s", `requestTimeout: ${t}`));
    git(dir, "commit", "-qam", `httpbin timeout ${t}`);
    out.push(git(dir, "rev-parse", "HEAD"));
  }
  writeFileSync(join(dir, BROKEN_FILE), "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata:\n  name: broken\n  namespace: istio-gateways\nspec:\n  hosts: 5\n");
  git(dir, "add", "-A");
  git(dir, "commit", "-qm", "broken route table");
  const broken = git(dir, "rev-parse", "HEAD");
  return { dir, c0, c1, c2: out[0]!, c3: out[1]!, broken };
}

export interface CliRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** `gitmesh <args>` through the real entry, with `env` as the environment the CLI reads. */
export async function gitmesh(env: Record<string, string | undefined>, args: readonly string[]): Promise<CliRun> {
  const io = { ...createCapturingIo(), env };
  const code = await main(args, io);
  return { code, out: io.stdout(), err: io.stderr() };
}
