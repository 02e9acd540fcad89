/** What a CLI command may touch: its output streams, the exit code it sets, and the version. */
import { readFileSync } from "node:fs";
import type { BuildInfo } from "../core/index.js";

/** Exit codes of every command (`gitmesh --help` lists them): 130 is a start interrupted by Ctrl-C, as shells report SIGINT. */
export const ExitCode = { Ok: 0, Failed: 1, Usage: 2, Interrupted: 130 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  /** Whether stdout is a terminal (colours, progress lines). */
  readonly isTty: boolean;
  readonly version: string;
  /** Commands set this instead of calling process.exit. */
  exitCode: ExitCode;
  /** The environment commands read (process.env in the real CLI; tests pass their own). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** Thrown for bad flags or arguments: exit status 2. */
export class UsageError extends Error {
  readonly code = "UsageError";
}

/** A duration flag in seconds (`--timeout 90`, `--timeout 2.5`): a number > 0, else a usage error naming the flag. */
export function secondsFlag(flag: string, value: string): number {
  const s = value.trim() === "" ? Number.NaN : Number(value);
  if (!Number.isFinite(s) || s <= 0) throw new UsageError(`${flag} must be a number of seconds > 0 (e.g. ${flag} 30), got ${JSON.stringify(value)}`);
  return s;
}

export function createIo(): CliIo {
  return {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    isTty: process.stdout.isTTY,
    version: packageVersion(),
    exitCode: ExitCode.Ok,
    env: process.env,
  };
}

/** An in-memory IO for tests. */
export function createCapturingIo(): CliIo & { stdout: () => string; stderr: () => string } {
  let out = "";
  let err = "";
  return {
    out: (t) => (out += t),
    err: (t) => (err += t),
    isTty: false,
    version: packageVersion(),
    exitCode: ExitCode.Ok,
    stdout: () => out,
    stderr: () => err,
  };
}

/**
 * What `gitmesh_build_info` reports for this process: the package version, the commit the image was
 * built from (GITMESH_COMMIT, set by the Dockerfile's build argument; "unknown" elsewhere) and Node.js.
 */
export function processBuildInfo(env: NodeJS.ProcessEnv): BuildInfo {
  return { version: packageVersion(), commit: env.GITMESH_COMMIT?.trim() || "unknown", node: process.version };
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

/** An integer flag within [min, max], else a usage error naming the flag. */
export function integerFlag(flag: string, value: string, min: number, max: number): number {
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`${flag} must be a whole number from ${String(min)} to ${String(max)}, got ${JSON.stringify(value)}`);
  return n;
}
