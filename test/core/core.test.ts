import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  canonicalObject,
  canonicalYaml,
  createLogger,
  createMemoryLogger,
  describeError,
  formatDiagnostic,
  NeedsHumanError,
  reactionOf,
  RetryLaterError,
  sortDiagnostics,
  sortedKeys,
  stripCredentials,
  TransientError,
  type Diagnostic,
} from "../../src/core/index.js";

describe("canonical serialisation", () => {
  it("puts apiVersion, kind, metadata first and sorts every other key at every depth", () => {
    const a = { spec: { b: 1, a: [{ z: 1, y: 2 }] }, metadata: { name: "x", labels: { b: "1", a: "2" } }, kind: "K", apiVersion: "v1" };
    const b = { apiVersion: "v1", kind: "K", metadata: { labels: { a: "2", b: "1" }, name: "x" }, spec: { a: [{ y: 2, z: 1 }], b: 1 } };
    expect(canonicalYaml(a)).toBe(canonicalYaml(b));
    expect(canonicalYaml(a).split("\n").slice(0, 3)).toEqual(["apiVersion: v1", "kind: K", "metadata:"]);
    expect(canonicalJson({ b: undefined, a: 1 })).toBe('{"a":1}');
  });

  it("does not put apiVersion first below the top level", () => {
    expect(canonicalJson({ spec: { kind: 1, a: 2 } })).toBe('{"spec":{"a":2,"kind":1}}');
  });

  it("shares what is already canonical and copies only the levels that are not", () => {
    const leaf = { a: 1, b: [{ x: 1 }] };
    const sorted = { apiVersion: "v1", kind: "K", metadata: { name: "n" }, spec: { leaf, z: 2 } };
    expect(canonicalObject(sorted)).toBe(sorted);
    const unsorted = { apiVersion: "v1", kind: "K", metadata: { name: "n" }, spec: { z: 2, leaf } };
    const c = canonicalObject(unsorted);
    expect(c).not.toBe(unsorted);
    expect(c.spec).not.toBe(unsorted.spec);
    expect(c.spec.leaf).toBe(leaf);
    expect(c.metadata).toBe(unsorted.metadata);
    expect(JSON.stringify(c)).toBe(canonicalJson(unsorted));
    const dropped = canonicalObject({ spec: { a: 1, b: undefined } });
    expect(JSON.stringify(dropped)).toBe('{"spec":{"a":1}}');
  });

  it("sortedKeys orders one level: the object itself when in order, else a shallow copy", () => {
    const inOrder = { a: 1, b: { d: 1, c: 2 } };
    expect(sortedKeys(inOrder)).toBe(inOrder);
    const child = { d: 1, c: 2 };
    const out = sortedKeys({ b: child, a: 1, c: undefined });
    expect(Object.keys(out)).toEqual(["a", "b"]);
    expect(out.b).toBe(child);
  });
});

describe("secret redaction", () => {
  it("strips credentials from URLs", () => {
    expect(stripCredentials("fetch https://user:s3cret@git.example.com/org/repo.git failed")).toBe(
      "fetch https://git.example.com/org/repo.git failed",
    );
    expect(stripCredentials("https://ghp_token@github.com/x")).toBe("https://github.com/x");
    expect(stripCredentials("no url here")).toBe("no url here");
  });

  it("strips a password without a user name and masks secret query parameters (Redis URLs)", () => {
    expect(stripCredentials("redis://:s3cret@redis:6379/0")).toBe("redis://redis:6379/0");
    expect(stripCredentials("redis-sentinel://:s3cret@s1:26379,s2:26379/mymaster?db=2&sentinelPassword=t0p&x=1")).toBe(
      "redis-sentinel://s1:26379,s2:26379/mymaster?db=2&sentinelPassword=[redacted]&x=1",
    );
    expect(stripCredentials("https://host/x?access_token=abc&page=2")).toBe("https://host/x?access_token=[redacted]&page=2");
    expect(stripCredentials("https://host/x?q=password")).toBe("https://host/x?q=password");
  });

  it("masks secret-looking fields in log payloads", () => {
    const { logger, text } = createMemoryLogger();
    logger.info("pull from https://u:p4ss@host/r", { token: "abc123", url: "http://x:y@h/", nested: { password: "pw" }, count: 3 });
    const out = text();
    expect(out).not.toContain("abc123");
    expect(out).not.toContain("p4ss");
    expect(out).not.toContain(":y@");
    expect(out).not.toContain('"pw"');
    expect(out).toContain('"count":3');
  });
});

describe("logger", () => {
  it("writes JSON lines with the child's name and filters by level", () => {
    const lines: string[] = [];
    const root = createLogger({ write: (l) => lines.push(l), level: "info", now: () => 0 });
    const log = root.child("relay", { cluster: "c1" });
    log.debug("hidden");
    log.info("connected", { stream: "push" });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual({
      time: "1970-01-01T00:00:00.000Z",
      level: "info",
      logger: "gitmesh.relay",
      msg: "connected",
      cluster: "c1",
      stream: "push",
    });
  });

  it("has a human format for terminals", () => {
    const lines: string[] = [];
    createLogger({ write: (l) => lines.push(l), format: "human", now: () => 0 }).warn("lost cluster", { cluster: "c 2" });
    expect(lines[0]).toBe('00:00:00.000 WARN  gitmesh: lost cluster  cluster="c 2"');
  });
});

describe("errors", () => {
  it("carry a stable code equal to the class name and a reaction", () => {
    class BadTokenError extends NeedsHumanError {}
    const e = new BadTokenError("token rejected", { cause: new Error("inner") });
    expect(e.code).toBe("BadTokenError");
    expect(reactionOf(e)).toBe("needs-human");
    expect(reactionOf(new RetryLaterError("warming", 500))).toBe("retry-later");
    expect(reactionOf(new TransientError("redis"))).toBe("transient");
    expect(reactionOf(new Error("unknown"))).toBe("transient");
    expect(describeError(e)).toBe("token rejected: inner");
  });
});

describe("diagnostics", () => {
  it("format like a compiler and sort deterministically", () => {
    const d: Diagnostic[] = [
      { code: "B", severity: "warning", file: "b.yaml", line: 1, column: 1, message: "w" },
      { code: "A", severity: "error", file: "a.yaml", line: 3, column: 5, path: "/spec/x", message: "bad x" },
      { code: "A", severity: "error", file: "a.yaml", line: 2, column: 1, message: "first" },
    ];
    expect(sortDiagnostics(d).map((x) => x.message)).toEqual(["first", "bad x", "w"]);
    expect(formatDiagnostic(d[1]!)).toBe("a.yaml:3:5: error A: bad x (at /spec/x)");
  });
});
