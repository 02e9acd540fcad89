import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { createCapturingIo } from "../../src/cli/io.js";
import { asParagraphs, COMMANDS } from "../../src/cli/main.js";

const bin = fileURLToPath(new URL("../../bin/gitmesh.js", import.meta.url));
const version = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
const gitmesh = (...args: string[]) => {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: "utf8" });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

describe("gitmesh command (lazy sub-commands)", () => {
  it("the top-level summary of each command is the summary the command itself registers", async () => {
    for (const entry of COMMANDS) {
      const program = new Command();
      (await entry.load())(program, createCapturingIo());
      const registered = program.commands.find((c) => c.name() === entry.name);
      expect(registered, entry.name).toBeDefined();
      expect(entry.summary, entry.name).toBe(registered?.summary());
    }
  });

  it("a duration flag that is not a positive number is a usage error (exit 2) naming the flag, before anything starts", () => {
    for (const [cmd, value] of [["demo", "abc"], ["check", "abc"], ["demo", "-5"], ["check", "0"]] as const) {
      const r = gitmesh(cmd, "--timeout", value);
      expect(r.code, `${cmd} --timeout ${value}`).toBe(2);
      expect(r.err).toContain(`--timeout must be a number of seconds > 0 (e.g. --timeout 30), got "${value}"`);
      expect(r.out + r.err).not.toMatch(/NaN|internal error|at .*\.ts:\d+/);
    }
  });

  it("the top-level help the build keeps (.build/help.txt, printed by the launcher) is the CLI's own, and the same on a wide terminal", () => {
    const kept = readFileSync(new URL("../../.build/help.txt", import.meta.url), "utf8");
    // The CLI from its sources on a terminal 200 columns wide (a pseudo-terminal made by util-linux `script`).
    const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;
    const wide = spawnSync("script", ["-qec", `stty cols 200; ${quote(process.execPath)} ${quote(bin)} --help`, "/dev/null"], { encoding: "utf8", env: { ...process.env, GITMESH_FROM_SOURCE: "1" } });
    expect(wide.status).toBe(0);
    expect(wide.stdout.replace(/\r/g, "")).toBe(kept);
    expect(gitmesh("--help").out).toBe(kept);
  });

  it("help paragraphs wrap once, at 80 columns when piped (no line break of the source text left in them)", () => {
    expect(asParagraphs("one\ntwo\n\nthree\n  example\n- item\n--flag")).toBe("one two\n\nthree\n  example\n- item --flag");
    for (const cmd of ["validate", "server", "diff", "check", "agent"]) {
      const r = gitmesh(cmd, "--help");
      expect(r.code, cmd).toBe(0);
      const [, ...rest] = r.out.split("\n\n");
      const description = rest.slice(0, rest.findIndex((p) => /^(Arguments|Options):/.test(p)));
      for (const paragraph of description) {
        const lines = paragraph.split("\n");
        // Wrapped by commander: a line ends only where the next word would not fit in 80 columns (a
        // break left from the source text would end it early).
        lines.slice(0, -1).forEach((line, i) => {
          const nextWord = lines[i + 1]!.trimStart().split(" ")[0]!;
          expect(line.length + 1 + nextWord.length, `${cmd}: "${line}" / "${nextWord}"`).toBeGreaterThan(80);
        });
        for (const line of lines) expect(line.length, `${cmd}: "${line}"`).toBeLessThanOrEqual(80);
      }
    }
    expect(gitmesh("validate", "--help").out).toContain("<dir>/gitmesh.yaml) and report YAML syntax errors, schema violations,");
  });

  it("--version and --help answer without loading the commands, and list every command", () => {
    const v = gitmesh("--version");
    expect(v.code).toBe(0);
    expect(v.out.trim()).toBe(version);
    const h = gitmesh("--help");
    expect(h.code).toBe(0);
    for (const c of COMMANDS) expect(h.out).toMatch(new RegExp(`^  ${c.name} `, "m"));
    expect(h.out).toMatch(/Exit codes \(every command\): 0 done; 1 failed .*\n2 usage .*; 130 interrupted/);
  });

  it("a command's own help shows its options (loaded on demand), also through `help <command>`", () => {
    const direct = gitmesh("validate", "--help");
    expect(direct.code).toBe(0);
    expect(direct.out).toContain("Usage: gitmesh validate");
    expect(direct.out).toContain("--output");
    const viaHelp = gitmesh("help", "validate");
    expect(viaHelp.out).toContain("Usage: gitmesh validate");
  });

  it("a mistyped command is a usage error with a suggestion", () => {
    const r = gitmesh("valdate", "examples/repo-layout");
    expect(r.code).toBe(2);
    expect(r.err).toContain("unknown command 'valdate'");
    expect(r.err).toContain("Did you mean validate?");
  });
});

describe("gitmesh output into a closed pipe", () => {
  it("ends quietly when the reader has gone away (validate --codes | head)", async () => {
    // The read end is closed before the command writes: every write gets EPIPE.
    const child = spawn(process.execPath, [bin, "validate", "--codes"], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(stderr).toBe("");
    expect(code).toBe(0);
  });
});
