// Files named by flags, read one way by every command (src/cli/flag-files.ts): through the command
// processes a user runs. A token file holds one token; a file that cannot be read is a usage error (exit
// 2) naming the flag, the file and the system's code; a token never appears in what is printed. The
// token is read before any request, so no server is needed to see the answers.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const bin = fileURLToPath(new URL("../../bin/gitmesh.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "gitmesh-flag-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SECRET = "s3cr3t-token-value-0123456789";
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text, { mode: 0o600 });
  return p;
};
const gitmesh = (args: string[], env: Record<string, string> = {}) => {
  // Nothing of the caller's environment names a token here.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^GITMESH_/.test(k)));
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", env: { ...base, ...env }, timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
// A port nothing listens on: were the token accepted, the command would fail to connect (exit 1), not exit 2.
const SERVER = "http://127.0.0.1:9";

describe("files named by flags", () => {
  const twoWords = file("two-words", `Bearer ${SECRET}\n`);
  const empty = file("empty", "\n\n");
  const missing = join(dir, "nope");

  it("every command that takes an API token refuses a token file with two words or none, and names the unreadable one, without printing the token", () => {
    const commands: string[][] = [["check", "--server", SERVER], ["insights", "--server", SERVER], ["suspend", "cluster1", "--server", SERVER], ["resume", "--all", "--server", SERVER]];
    for (const cmd of commands) {
      const split = gitmesh([...cmd, "--token-file", twoWords]);
      expect(split.code, cmd.join(" ")).toBe(2);
      expect(split.err).toContain(`--token-file ${twoWords} must hold one token (one word)`);
      expect(split.out + split.err).not.toContain(SECRET);
      const none = gitmesh([...cmd, "--token-file", empty]);
      expect(none.code, cmd.join(" ")).toBe(2);
      expect(none.err).toContain("must hold one token");
      const gone = gitmesh([...cmd, "--token-file", missing]);
      expect(gone.code, cmd.join(" ")).toBe(2);
      expect(gone.err).toContain(`cannot read --token-file ${missing}: ENOENT`);
    }
  }, 120_000);

  it("the token-file variable is read the same way and named in the error; a token given is used (the request is what fails)", () => {
    const viaEnv = gitmesh(["check", "--server", SERVER], { GITMESH_API_TOKEN_FILE: missing });
    expect(viaEnv.code).toBe(2);
    expect(viaEnv.err).toContain(`cannot read --token-file (or GITMESH_API_TOKEN_FILE) ${missing}: ENOENT`);
    const good = gitmesh(["check", "--server", SERVER, "--token-file", file("good", `${SECRET}\n`), "--timeout", "2"]);
    expect(good.code).toBe(1);
    expect(good.err).toContain("cannot read http://127.0.0.1:9/api/status");
    expect(good.out + good.err).not.toContain(SECRET);
  }, 60_000);

  it("an unreadable --ca-file is a usage error naming the flag and the code", () => {
    for (const cmd of [["check"], ["insights"], ["suspend", "cluster1"]]) {
      const r = gitmesh([...cmd, "--server", "https://127.0.0.1:9", "--token-file", file("t", "abc\n"), "--ca-file", missing]);
      expect(r.code, cmd.join(" ")).toBe(2);
      expect(r.err).toContain(`cannot read --ca-file ${missing}: ENOENT`);
    }
  }, 60_000);
});
