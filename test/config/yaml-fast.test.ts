// The CST fast path of the YAML reader (yaml-fast.ts) against the composer's path it short-cuts:
// wherever the fast path answers, values, positions (and their order) must be those of the composer
// with no error or warning; wherever the composer reports something, the fast path must decline.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { generateConfigRepo } from "../../bench/config/generate-config-repo.js";
import { generateFleet } from "../../bench/fleet/generate.js";
import { FLEET_PRESETS } from "../../bench/fleet/presets.js";
import { parseYamlFast } from "../../src/config/yaml-fast.js";
import { parseYamlDocuments } from "../../src/config/yaml-positions.js";
import { coreScalarTests, plainScalarValue } from "../../src/config/yaml-scalar.js";
import { corpusSets } from "../corpus/corpus.js";
import { createRandom } from "../helpers/random.js";

const ROOT = resolve(import.meta.dirname, "../..");

/** true when the fast path answered (and agreed), false when it declined. */
function agree(text: string): boolean {
  const fast = parseYamlFast(text);
  if (fast === undefined) return false;
  const composed = parseYamlDocuments(text);
  expect(fast, text).toEqual(composed);
  expect(JSON.stringify(fast), text).toBe(JSON.stringify(composed)); // key order of values and positions too
  for (const d of fast) if (d.value !== null && typeof d.value === "object") expect(Object.isFrozen(d.value)).toBe(true);
  return true;
}

function yamlFilesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...yamlFilesUnder(p));
    else if (/\.ya?ml$/.test(name)) out.push(p);
  }
  return out;
}


describe("the YAML fast path", () => {
  it("answers for every generated file, as the composer would", () => {
    const files = generateConfigRepo({ objects: 2000, docsPerFile: 4 });
    for (const f of files) expect(agree(f.content), f.path).toBe(true);
  });

  it("answers for every file of the diff bench's 100-cluster fleet, as the composer would", () => {
    const files = generateFleet(FLEET_PRESETS.large).files.filter((f) => /\.ya?ml$/.test(f.path));
    expect(files.length).toBeGreaterThan(400);
    for (const f of files) expect(agree(f.content), f.path).toBe(true);
  });

  it("agrees with the composer on the corpus and the repository's YAML fixtures and examples", () => {
    const texts = [
      ...corpusSets().flatMap((s) => s.files.map((f) => Buffer.from(f.content).toString("utf8"))),
      ...[...yamlFilesUnder(join(ROOT, "test/fixtures")), ...yamlFilesUnder(join(ROOT, "examples"))].map((p) => readFileSync(p, "utf8")),
    ];
    let answered = 0;
    for (const t of texts) if (agree(t.replace(/^\uFEFF/, ""))) answered++;
    expect(answered).toBeGreaterThan(texts.length * 0.8); // 1,618 of 1,830 when written; the rest (comments before the first key, multi-line flow lists…) take the composer
  });

  it("agrees or declines on edge cases", () => {
    const cases = [
      "a: 1\n", "1: a\n2: b\n", "null: x\n", "~: y\n", "true: z\nTrue: w\n", "0x1F: a\n", "0o17: a\n1.0: b\n", "'q': 1\n\"d\": 2\n",
      "a: .inf\nb: -.5\nc: 1e3\nd: +12\ne: 012\nf: .NaN\ng: ~\nh: null\ni: FALSE\nj: yes\n",
      "a: multi\n  line plain\nb: x\n", "a: 'it''s'\nb: \"\\u00e9\\t\"\nc: \"\\q\"\n", "a: \"x\n  y\"\nb: 'm\n\n  n'\n",
      "a: |\n  x\n   y\nb: >-\n  f\n  g\n\nc: |+\n  k\n\n", "a: |2\n   x\n", "a: |\n  x\n # not a comment?\n",
      'a: "x"#c\n', "a: x #c\nb: y\n# c\n  # c2\nc: z # c3\n", "a: b: c\n", "- - a\n", "- a\n-\n- c\n", "a:\n-\n", "---\n", "---\n...\n",
      "--- a: 1\n", "---\na: 1\n---\nb: 2\n...\n---\nc: 3\n", "  a: 1\n  b: 2\n", "key:    # comment\n  value\n", "a:\n  b: 1\n c: 2\n",
      "a: 1\n  b: 2\n", "a:\n- x\n- y\nb: 1\n", "a:\n  - x\n  -  y\n  - z: 1\n    w: 2\n", "a:\n  - x\n   - y\n",
      "a: [x, 'y', \"z\", 1, true]\nb: []\nc: {}\nd: [ ]\ne: { }\n", "a: [a,b,]\n", "a: [a, [b]]\n", "a: {b: 1}\n", "a: [a,\n  b]\n",
      "a: [a, b] x\n", "a: [a, b] # c\n", "a: [a b]\n", "? a\n: b\n", "x: &y 1\nz: *y\n", "<<: {a: 1}\n", "__proto__: a\n", "key with spaces: v\n",
      "'a\nb': c\n", "a : b\n", `${"k".repeat(1100)}: v\n`, "a: @x\n", "a: `x\n", "%YAML 1.2\n---\na: 1\n", "a: !!str 1\n", "a: !foo x\n",
      "a: 1\na: 2\n", "a: 1\n'a': 2\n", "1: a\n'1': b\n", "a:\tb\n", "a:\n\tb: 1\n", "\ta: 1\n", "a: b\n\t\n", "# only a comment\n", "",
      "a", "- a\n- b\n", "\"a\"\n", "a: 1\n---\n- x\n", "a: 1\n--- |\n  x\n", "a: 1\n...\n# c\n", "a: 1\n... # c\n", "a: 1 # c\n...\n---\n",
      "a:\n  b:\n    c:\n      - d: 1\n        e: [x]\n      - {}\n", "a: -1\nb: - 1\nc: -\n", "a: 'x' y\n", "a: \"x\" # c\n", "a:  \n  \nb: 2\n",
      "a: |\n\tx\n", "a: >\n  x\n\n  y\n", "a: |-\n", "a: |\nb: 1\n", "a: x\n b\n", "- a\n - b\n", "- a: 1\n  b: 2\n- c\n", "-   a: 1\n    b: 2\n",
      "a:\r\n  b: 1\r\n", "a: b\u00a0c\n", "a: 'x'\n'b': \"y\" \n", "[a]: 1\n", "{a: 1}\n", "a: 1\n\n\n", "\n\na: 1\n", "a: ''\nb: \"\"\n",
    ];
    let answered = 0;
    for (const c of cases) if (agree(c)) answered++;
    expect(answered).toBeGreaterThan(20);
  });

  it("agrees or declines on thousands of random one-character edits of real files", () => {
    const next = createRandom(20);
    const sources = generateConfigRepo({ objects: 40, docsPerFile: 4 }).map((f) => f.content);
    const corpus = corpusSets().flatMap((s) => s.files.map((f) => Buffer.from(f.content).toString("utf8")));
    for (let i = 0; i < 40; i++) sources.push(corpus[Math.floor(next() * corpus.length)]!);
    const inserts = [" ", "  ", "\t", ":", "- ", "#", "'", '"', "\n", "[", "]", "{", ",", "&a ", "*a", "!t ", "|", ">", "?", "---\n", "0", "~", "\\"];
    for (let i = 0; i < 4000; i++) {
      const src = sources[i % sources.length]!;
      const at = Math.floor(next() * src.length);
      const r = next();
      const edited =
        r < 0.3 ? src.slice(0, at) + src.slice(at + 1) : r < 0.5 ? src.slice(0, at) + src.slice(at, at + 1) + src.slice(at) : src.slice(0, at) + inserts[Math.floor(next() * inserts.length)]! + src.slice(at);
      agree(edited);
    }
  });
});

describe("plain scalars", () => {
  it("takes the core tags only for plain scalars that can match one", () => {
    // plainScalarValue skips the tags unless the first character is one of these; no tag matches otherwise.
    const mayMatch = new Set("~nNtTfF0123456789+-.");
    const rests = ["", "0", "1", "x", "ull", "rue", "alse", "inf", ".inf", "nan", "e3", "o7", "x1F", "1.5", "UE"];
    for (let c = 32; c < 0x250; c++) {
      const first = String.fromCharCode(c);
      if (mayMatch.has(first)) continue;
      for (const rest of rests) {
        const s = first + rest;
        expect(coreScalarTests.some((t) => t.test(s)), s).toBe(false);
        expect(plainScalarValue(s)).toBe(s);
      }
    }
  });
});
