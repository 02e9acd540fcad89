// The hand-written YAML emitter (src/core/yaml-emit.ts) against the `yaml` package it replaces in
// canonicalYaml: wherever it answers, byte for byte the package's `stringify(value, { lineWidth: 0,
// aliasDuplicateObjects: false })`; where it declines, canonicalYaml still gives the package's bytes.
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { generateFleet } from "../../bench/fleet/generate.js";
import { FLEET_PRESETS } from "../../bench/fleet/presets.js";
import { loadDesiredState } from "../../src/config/index.js";
import { canonicalObject, canonicalYaml, emitYaml, yamlPackageStringify } from "../../src/core/index.js";
import { translateAll } from "../../src/translate/index.js";
import { corpusSetsIfPresent } from "../corpus/corpus.js";
import { createRandom, GENERATIVE_TEST_TIMEOUT_MS } from "../helpers/random.js";

const ROOT = resolve(import.meta.dirname, "../..");

/** Checks one value; true when the emitter answered (then identical), false when it declined. */
function same(value: unknown, where: string): boolean {
  const reference = yamlPackageStringify(value);
  const emitted = emitYaml(value);
  if (emitted !== undefined) expect(emitted, `${where}:\n${reference}`).toBe(reference);
  // canonicalYaml, whichever path it takes, is the package's output on the canonical form.
  const c = canonicalObject(value);
  expect(canonicalYaml(value), where).toBe(yamlPackageStringify(c));
  return emitted !== undefined;
}

function docsOf(text: string): unknown[] {
  return parseAllDocuments(text)
    .filter((d) => !("errors" in d) || d.errors.length === 0)
    .map((d) => d.toJS({ maxAliasCount: -1 }) as unknown);
}

describe("the YAML emitter", () => {
  it("writes every golden translation output exactly as the yaml package does", () => {
    const dir = join(ROOT, "test/fixtures/translate");
    let objects = 0;
    let answered = 0;
    for (const name of readdirSync(dir).sort()) {
      let text: string;
      try {
        text = readFileSync(join(dir, name, "output.yaml"), "utf8");
      } catch {
        continue;
      }
      for (const doc of docsOf(text)) {
        objects++;
        if (same(doc, name)) answered++;
      }
    }
    expect(objects).toBeGreaterThan(200);
    // Declining is allowed (multi-line strings), but the emitter must carry almost all of them.
    expect(answered / objects).toBeGreaterThan(0.9);
  });

  it("writes every rendered object of a generated fleet, all of them on the fast path", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const fleet = generateFleet(FLEET_PRESETS.small);
    const result = translateAll(loadDesiredState(fleet.files).state, fleet.discovery, { validate: false });
    let n = 0;
    for (const c of result.clusters.values())
      for (const r of c.resources) {
        const v = canonicalObject(r);
        expect(same(v, `${c.cluster} ${r.kind}`), `declined ${c.cluster} ${r.kind}`).toBe(true);
        n++;
      }
    expect(n).toBeGreaterThan(100);
  });

  it("writes every document of the real-world corpus as the yaml package does (or declines)", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    let objects = 0;
    for (const set of corpusSetsIfPresent())
      for (const f of set.files)
        for (const doc of docsOf(typeof f.content === "string" ? f.content : Buffer.from(f.content).toString("utf8"))) {
          if (doc === null || typeof doc !== "object") continue;
          objects++;
          same(doc, f.path);
        }
    if (corpusSetsIfPresent().length > 0) expect(objects).toBeGreaterThan(1000);
  });

  it("quotes and escapes adversarial strings as the yaml package does", () => {
    const strings = [
      "", " ", "  x", "x ", "x\t", "\tx", "a: b", "a:b", "a:", ":a", "a #b", "a#b", "#a", "- a", "-", "-a", "? a", "?", "?a", ":", ": a",
      ",a", "[a", "]a", "{a", "}a", "&a", "*a", "!a", "|a", ">a", "'a", "\"a", "%a", "@a", "`a", "a,b", "a[b]", "a{b}",
      "true", "True", "TRUE", "tRue", "false", "yes", "no", "on", "off", "y", "n", "null", "Null", "NULL", "nULL", "~", "~a",
      "0", "-0", "+1", "01", "0o17", "0o8", "0x1F", "0xg", "0b101", "1.5", ".5", "5.", "1e3", "1E+3", "1.5e-3", "e3", ".inf", "-.inf",
      "+.Inf", ".nan", ".NaN", "NaN", "inf", "1_000", "2020-01-01", "2001-12-14t21:59:43.10-05:00", "12:30", "1:2:3",
      "---", "--- a", "...", "... a", "----", "a---", "a...",
      "it's", "say \"hi\"", "both ' and \"", "\u0000", "\u0007", "\b", "\u000b", "\f", "\r", "\u001b", "\u007f", "\u0085", "\u00a0", "\u009f",
      "\u2028", "\u2029", "\ud800", "\udc00", "a\ud83d", "\ud83d\ude00", "é", "日本語", "\ufeffx", "x\u200by",
      "a\nb", "a\n", "a\n\n", "\n", "\na", " a\nb", "a \nb", "a\n b", "a\r\nb", "*.example.com", "/api/v1", "http://x:80/a", "a=b", "$x", "${x}",
      "a".repeat(1100), "'".repeat(3), "x # y", "x #", "#", "x:y z", "x: ", "{}", "[]", "{a: 1}", "<<", "=", "!!str", "&anchor x",
    ];
    for (const s of strings) {
      same({ v: s }, JSON.stringify(s));
      same({ [s]: 1 }, `key ${JSON.stringify(s)}`);
      same([s, [s], { k: [s] }], `nested ${JSON.stringify(s)}`);
    }
  });

  it("writes numbers, booleans, null and empty collections as the yaml package does", () => {
    const values = [0, -0, 1, -1, 1.5, 0.1, 1e21, 1e-7, -1e21, 123456789012, 2 ** 53, 5e-324, Number.MAX_VALUE, true, false, null, [], {}, [[]], [{}], [[[]]], { a: [] }, { a: {} }];
    for (const v of values) {
      same({ v }, JSON.stringify(v));
      same([v], JSON.stringify(v));
    }
    for (const top of [{}, [], [[]], [{}], [1, [2, [3, { a: [4, { b: null }] }]]], [[{ a: 1, b: [] }]]]) same(top, JSON.stringify(top));
    const bare = Object.create(null) as Record<string, unknown>;
    bare.a = 1;
    bare.b = { c: "x" };
    for (const odd of [bare, { x: bare }, { 2: "a", 1: "b", a: 1 }, Object.assign([1, 2], { extra: 3 })]) expect(same(odd, "null prototype, integer keys, array with a member")).toBe(true);
    // outside the scope: declined, never guessed
    for (const v of [{ v: Number.NaN }, { v: Infinity }, { v: new Date(0) }, { v: undefined }, { v: new Map() }, { v: 1n }, "top", 1, null])
      expect(emitYaml(v)).toBeUndefined();
  });

  it("matches the yaml package on generated values with adversarial strings", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const seed = Number(process.env.GITMESH_TEST_SEED ?? 39);
    const random = createRandom(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const pieces = ["a", "Z", "0", "9", "1", ".", "-", "_", "/", ":", " ", "  ", "#", "'", "\"", "\\", ",", "[", "]", "{", "}", "&", "*", "!", "|", ">", "%", "@", "`", "?", "=",
      "\t", "\n", "\r", "\u0000", "\u001f", "\u007f", "\u0085", "\u00a0", "\u2028", "\ud800", "\udfff", "😀", "é", "---", "...", "true", "null", "e", "E", "x", "o", "+", "~"];
    const randomString = (): string => {
      const r = random();
      if (r < 0.1) return String.fromCodePoint(Math.floor(random() * 0x10ffff) % 0xd800);
      let s = "";
      const n = Math.floor(random() * 6);
      for (let i = 0; i < n; i++) s += pick(pieces);
      return s;
    };
    const scalarValue = (): unknown => {
      const r = random();
      if (r < 0.6) return randomString();
      if (r < 0.75) return pick([0, -0, 1, -7, 1.25, 1e21, 3e-9, 42, 2 ** 31]);
      if (r < 0.85) return random() < 0.5;
      return null;
    };
    const value = (depth: number): unknown => {
      const r = random();
      if (depth > 3 || r < 0.4) return scalarValue();
      if (r < 0.7) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      const o: Record<string, unknown> = {};
      const n = Math.floor(random() * 4);
      for (let i = 0; i < n; i++) o[random() < 0.7 ? pick(["a", "b", "metadata", "spec", "1", "on"]) + randomString() : randomString()] = value(depth + 1);
      return o;
    };
    let answered = 0;
    const N = 5000;
    for (let i = 0; i < N; i++) {
      const v = random() < 0.5 ? { root: value(0) } : value(0);
      if (v === null || typeof v !== "object") continue;
      if (same(v, `seed ${seed}, case ${i}: ${JSON.stringify(v)}`)) answered++;
    }
    expect(answered).toBeGreaterThan(N / 10); // the emitter answers on a good share, so the comparison bites
  });
});
