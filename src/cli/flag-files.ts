/**
 * Files named by flags (`--token-file`, `--ca-file`, `--prometheus-token-file`, …), read the one way
 * every command reads them: a file that cannot be read is a usage error naming the flag, the file and
 * the system's code (never its content), and a token file holds exactly one token.
 *
 *   const ca = await readFlagFile("--ca-file", flags.caFile);                 // undefined: not given
 *   const token = await readTokenFile("--token-file", flags.tokenFile);      // one word, trimmed
 *   const token = await tokenFromFlags(flags, env, { token: "GITMESH_TOKEN", tokenFile: "GITMESH_TOKEN_FILE" });
 */
import { readFile } from "node:fs/promises";
import { UsageError } from "./io.js";

/** Where a value may also come from: the environment variable named after the flag. */
export interface FlagSource {
  /** The flag, e.g. `--ca-file`. */
  readonly flag: string;
  /** The environment variable that sets it too, named in the error. */
  readonly env?: string;
}

const sourceOf = (s: string | FlagSource): FlagSource => (typeof s === "string" ? { flag: s } : s);
const named = (s: FlagSource) => (s.env === undefined ? s.flag : `${s.flag} (or ${s.env})`);

/** The text of the file a flag names (undefined when not given); unreadable: a usage error with the code. */
export async function readFlagFile(source: string | FlagSource, file: string | undefined): Promise<string | undefined> {
  if (file === undefined) return undefined;
  const s = sourceOf(source);
  return readFile(file, "utf8").catch((err: unknown) => {
    throw new UsageError(`cannot read ${named(s)} ${file}: ${(err as { code?: string }).code ?? "error"}`);
  });
}

/**
 * The token a file holds: one word, surrounding whitespace (a trailing newline) dropped. Empty, or
 * several words, is a usage error: sent as is it would be refused by the server, or split a header.
 */
export async function readTokenFile(source: string | FlagSource, file: string | undefined): Promise<string | undefined> {
  const text = await readFlagFile(source, file);
  if (text === undefined) return undefined;
  const token = text.trim();
  if (token === "" || /\s/.test(token)) throw new UsageError(`${named(sourceOf(source))} ${file ?? ""} must hold one token (one word)`);
  return token;
}

/**
 * A command's API token: `--token`, else `--token-file`, else the token variable, else the token-file
 * variable (an empty variable counts as unset); undefined when none is given.
 */
export async function tokenFromFlags(flags: { readonly token?: string; readonly tokenFile?: string }, env: Readonly<Record<string, string | undefined>>, vars: { readonly token: string; readonly tokenFile: string }): Promise<string | undefined> {
  if (flags.token !== undefined) return flags.token.trim() || undefined;
  if (flags.tokenFile !== undefined) return readTokenFile("--token-file", flags.tokenFile);
  const fromEnv = env[vars.token]?.trim();
  if (fromEnv) return fromEnv;
  const file = env[vars.tokenFile] || undefined;
  return readTokenFile({ flag: "--token-file", env: vars.tokenFile }, file);
}
