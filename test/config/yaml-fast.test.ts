// The fast paths of the YAML reader (yaml-scan.ts, then yaml-fast.ts) against the composer's path
// they short-cut: wherever a fast path answers, values, positions (and their order) must be those
// of the composer with no error or warning; wherever the composer reports something, every fast
// path must decline. Each path is checked on its own, so the tests show which one answered.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { generateConfigRepo } from "../../bench/config/generate-config-repo.js";
import { generateFleet } from "../../bench/fleet/generate.js";
import { FLEET_PRESETS } from "../../bench/fleet/presets.js";
import { parseYamlCst, parseYamlFast } from "../../src/config/yaml-fast.js";
import { parseYamlDocuments, type ParsedDocument } from "../../src/config/yaml-positions.js";
import { coreScalarTests, plainScalarValue } from "../../src/config/yaml-scalar.js";
import { scanYaml, scanYamlValues } from "../../src/config/yaml-scan.js";
import { CORPUS_PRESENT, corpusSetsIfPresent } from "../corpus/corpus.js";
import { createRandom, GENERATIVE_TEST_TIMEOUT_MS } from "../helpers/random.js";

const ROOT = resolve(import.meta.dirname, "../..");

type FastPath = (text: string) => ParsedDocument[] | undefined;
const FAST_PATHS: readonly (readonly [name: "scanner" | "cst", path: FastPath])[] = [
  ["scanner", scanYaml],
  ["cst", parseYamlCst],
];

/** Which fast paths answered for `text`; each one that answered must give exactly the composer's documents. */
function paths(text: string): { scanner: boolean; cst: boolean } {
  const answers = FAST_PATHS.map(([name, path]) => [name, path(text)] as const);
  const answered = { scanner: answers[0]![1] !== undefined, cst: answers[1]![1] !== undefined };
  if (!answered.scanner && !answered.cst) return answered;
  const composed = parseYamlDocuments(text);
  const clean = composed.every((d) => d.errors.length === 0 && d.warnings.length === 0);
  for (const [name, docs] of answers) {
    if (docs === undefined) continue;
    expect(clean, `the ${name} answered where the composer reports a problem:\n${text}`).toBe(true);
    expect(docs, `${name}:\n${text}`).toEqual(composed);
    expect(JSON.stringify(docs), `${name}:\n${text}`).toBe(JSON.stringify(composed)); // key order of values and positions too
    for (const d of docs) expect(deeplyFrozen(d.value), `${name}:\n${text}`).toBe(true);
  }
  // The scanner's values-only mode (discovery's reader) answers exactly where it does, with the same values, not frozen.
  const values = scanYamlValues(text);
  expect(values !== undefined, `scanYamlValues and scanYaml disagree on answering:\n${text}`).toBe(answered.scanner);
  if (values !== undefined) {
    expect(JSON.stringify(values), text).toBe(JSON.stringify(composed.map((d) => d.value)));
    expect(values.some((v) => v !== null && typeof v === "object" && Object.isFrozen(v)), text).toBe(false);
  }
  return answered;
}

function deeplyFrozen(value: unknown): boolean {
  if (value === null || typeof value !== "object") return true;
  return Object.isFrozen(value) && Object.values(value).every(deeplyFrozen);
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
  it("answers for every generated file, by the scanner and by the CST path, as the composer would", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const files = generateConfigRepo({ objects: 2000, docsPerFile: 4 });
    for (const f of files) expect(paths(f.content), f.path).toEqual({ scanner: true, cst: true });
  });

  it("answers for every file of the diff bench's 100-cluster fleet, by the scanner and by the CST path, as the composer would", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const files = generateFleet(FLEET_PRESETS.large).files.filter((f) => /\.ya?ml$/.test(f.path));
    expect(files.length).toBeGreaterThan(400);
    for (const f of files) expect(paths(f.content), f.path).toEqual({ scanner: true, cst: true });
  });

  it("answers by the scanner first, else by the CST path", () => {
    const common = "a: 1\nb:\n- x\n";
    expect(parseYamlFast(common)).toEqual(scanYaml(common));
    const multiLine = "a: multi\n  line plain\n"; // the scanner declines multi-line plain scalars
    expect(paths(multiLine)).toEqual({ scanner: false, cst: true });
    expect(parseYamlFast(multiLine)).toEqual(parseYamlCst(multiLine));
    expect(parseYamlFast("x: &a 1\n")).toBeUndefined();
  });

  it("agrees with the composer on the corpus and the repository's YAML fixtures and examples", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const texts = [
      ...corpusSetsIfPresent().flatMap((s) => s.files.map((f) => Buffer.from(f.content).toString("utf8"))),
      ...[...yamlFilesUnder(join(ROOT, "test/fixtures")), ...yamlFilesUnder(join(ROOT, "examples"))].map((p) => readFileSync(p, "utf8")),
    ];
    let scanner = 0;
    let cst = 0;
    for (const t of texts) {
      const answered = paths(t.replace(/^\uFEFF/, ""));
      if (answered.scanner) scanner++;
      if (answered.cst) cst++;
    }
    // When written, of 1,830: the scanner 1,621 (the rest: flow mappings, block scalars, multi-line
    // quoted scalars, tabs… take the CST path), the CST path 1,618 (comments before the first key,
    // multi-line flow lists… take the composer).
    // Shares of real-world YAML (the corpus); the repository's own fixtures alone lean to the odd cases.
    if (CORPUS_PRESENT) {
      expect(scanner).toBeGreaterThan(texts.length * 0.85);
      expect(cst).toBeGreaterThan(texts.length * 0.8);
    }
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
    let scanner = 0;
    let cst = 0;
    for (const c of cases) {
      const answered = paths(c);
      if (answered.scanner) scanner++;
      if (answered.cst) cst++;
    }
    expect(scanner).toBeGreaterThan(20);
    expect(cst).toBeGreaterThan(20);
  });

  it("agrees or declines on thousands of random one-character edits of real files", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const next = createRandom(20);
    const sources = generateConfigRepo({ objects: 40, docsPerFile: 4 }).map((f) => f.content);
    const corpus = corpusSetsIfPresent().flatMap((s) => s.files.map((f) => Buffer.from(f.content).toString("utf8")));
    if (corpus.length > 0) for (let i = 0; i < 40; i++) sources.push(corpus[Math.floor(next() * corpus.length)]!);
    const inserts = [" ", "  ", "\t", ":", "- ", "#", "'", '"', "\n", "[", "]", "{", ",", "&a ", "*a", "!t ", "|", ">", "?", "---\n", "0", "~", "\\"];
    for (let i = 0; i < 4000; i++) {
      const src = sources[i % sources.length]!;
      const at = Math.floor(next() * src.length);
      const r = next();
      const edited =
        r < 0.3 ? src.slice(0, at) + src.slice(at + 1) : r < 0.5 ? src.slice(0, at) + src.slice(at, at + 1) + src.slice(at) : src.slice(0, at) + inserts[Math.floor(next() * inserts.length)]! + src.slice(at);
      paths(edited);
    }
  });
});

describe("the YAML scanner", () => {
  const value = (text: string): unknown => scanYaml(text)?.map((d) => d.value);

  it("answers, as the composer would, for the common forms", () => {
    const cases = [
      "'quoted key': 1\n\"double \\\"key\\\"\": 2\n'': 3\n",
      "key: 'it''s'\n",
      'key: "\\u00e9\\n\\x41\\U0001F600\\t\\\\ \\/\\"\\0\\_"\n',
      "key: # comment\nnext: 1\n",
      "key:    \nnext: 1  \n'q': 'x'   \n",
      "key:\n- a\n- b: 1\n  c: 2\nnext:\n  - x\n",
      "a:\n  b:\n  - x\n  c: 1\n",
      "a: 010\nb: 0x1F\nc: 1e3\nd: .5\ne: +1\nf: -.inf\ng: ~\nh: Null\ni: TRUE\nj: yes\nk: 0o17\nl: 1_000\nm: 12:30\nn: .NaN\no: -0\np: 1.50\n",
      "1: a\n0x1F: b\n1e3: c\nnull: d\ntrue: e\n-1: f\n",
      "a: x #c\nb: y\n# c\n  # c2\nc: z # c3\n",
      "# header\n\n---\n# c\na: 1\n---\nb: 2\n...\n---\nc: 3\n...\n",
      "a: 1\n...\nb: 2\n",
      "a: [x, 'y', \"z\", 1, true, ~]\nb: []\nc: {}\nd: [ ]\ne: { }\nf: [ a b , -1 ]\n",
      "- \n".slice(0, 0) + "list:\n-   a: 1\n    b: [x]\n-  'q'\n- \"d\": 1\n- {}\n- []\n",
      ":path: /x\n:authority: y\na: :x\nb: ?x\nc: -x\nd: x:y\ne: a#b\nf: http://x/y?z=1#f\ng: x, y]}\n",
      "a: b\u00a0c\nkey\u00e9: \u2028\n",
      "a : b\n'c'  : d\n",
      "---x: 1\n...y: 2\n",
    ];
    for (const c of cases) expect(paths(c).scanner, c).toBe(true);
    expect(value("a: 010\nb: 0x1F\nc: 1e3\nd: .5\ne: +1\nf: -.inf\ng: ~\nh: Null\ni: TRUE\nj: yes\n")).toEqual([
      { a: 10, b: 31, c: 1000, d: 0.5, e: 1, f: -Infinity, g: null, h: null, i: true, j: "yes" },
    ]);
    expect(value("key: 'it''s'\nk2: \"\\u00e9\\n\"\n")).toEqual([{ key: "it's", k2: "é\n" }]);
    expect(value("key:\n- a\n- b\nnext: 1\n")).toEqual([{ key: ["a", "b"], next: 1 }]);
    expect(scanYaml("1: a\nnull: b\n")?.[0]?.positions).toEqual({ "": [1, 1], "/1": [1, 1], "/null": [2, 1] });
    expect(value("null: b\n")).toEqual([{ "": "b" }]);
    expect(scanYaml("a:\n  - x\n  - k: 1\n    j: [p, q]\n")?.[0]?.positions).toEqual({
      "": [1, 1], "/a": [1, 1], "/a/0": [2, 5], "/a/1": [3, 5], "/a/1/k": [3, 5], "/a/1/j": [4, 5], "/a/1/j/0": [4, 9], "/a/1/j/1": [4, 12],
    });
  });

  it("declines what is outside its subset", () => {
    const cases = [
      "a:\tb\n", "a: x # \r\n", "a: 1\r\nb: 2\r\n", "\uFEFFa: 1\n", "x: &y 1\nz: *y\n", "a: !t x\n", "? a\n: b\n", "%YAML 1.2\n---\na: 1\n",
      "a: multi\n  line\n", "a: 'x\n  y'\n", "a: \"x\\\n  y\"\n", "a: |\n  x\n", "a: >-\n  x\n", "a: {b: 1}\n", "a: [a, [b]]\n", "a: [a,\n b]\n",
      "a: [a,b,]\n", "- a\n", "a\n", "---\n", "a: 1\n---\n", "---\n...\n", "a:\n-\n", "a:\n- - x\n", "a:\n- # c\n  x\n", "a: 1\na: 2\n",
      "1: a\n'1': b\n", "<<: x\n", "__proto__: x\n", `${"k".repeat(1001)}: v\n`, "a: \"\\q\"\n", "a: \"\\x4\"\n", "a: \"\\U00110000\"\n", "a: \u0001\n", "a: 'x'#c\n",
      "a: b: c\n", "a: - b\n", "a: @x\n", "a: %x\n", "a: ,x\n", "  a: 1\n", "a:\n  b: 1\n c: 2\n", "a: x\n  # c\n  y\n", "a: [a:b]\n",
    ];
    for (const c of cases) expect(scanYaml(c), JSON.stringify(c)).toBeUndefined();
    const deep = (n: number): string => Array.from({ length: n }, (_, i) => `${" ".repeat(i)}k:\n`).join("") + `${" ".repeat(n)}v: 1\n`;
    expect(paths(deep(64)).scanner).toBe(true);
    expect(scanYaml(deep(65))).toBeUndefined(); // MAX_DEPTH, as the CST path
    expect(parseYamlCst(deep(65))).toBeUndefined();
  });

  it("reads CRLF files as the composer does, or declines", () => {
    for (const c of ["a: 1\r\nb:\r\n- x\r\n", "a: 'x'\r\n# c\r\n"]) paths(c);
  });

  it("agrees with the composer on thousands of random documents of its subset, and answers for all", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const next = createRandom(7);
    let scanner = 0;
    const n = 3000;
    for (let i = 0; i < n; i++) {
      const text = randomSubsetStream(next);
      if (paths(text).scanner) scanner++;
      else expect.soft(false, `the scanner declined a document of its subset:\n${text}`).toBe(true);
    }
    expect(scanner).toBe(n);
  });

  it("values mode keeps no view of the text: the text is collected while the long values it gave live on", () => {
    // V8 makes a slice of 13 characters or more a view of the whole text; values mode copies them.
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const host = (i: number) => `svc-${i % 40}.namespace-${i % 7}.svc.cluster.local`;
    const kept: string[] = [];
    let textBytes = 0;
    gc();
    const before = getHeapStatistics().used_heap_size;
    for (let f = 0; f < 8; f++) {
      const text = `items:\n${Array.from({ length: 20_000 }, (_, i) => `- host: ${host(i + f)}\n  port: ${i}\n`).join("")}`;
      textBytes += text.length;
      const [doc] = scanYamlValues(text) as [{ items: { host: string }[] }];
      for (const item of doc.items) kept.push(item.host);
    }
    gc();
    const retained = getHeapStatistics().used_heap_size - before;
    expect(kept).toHaveLength(160_000);
    expect(kept[1]).toBe(host(1));
    // 160,000 array slots (1.3 MB) and 280 distinct strings, not the 8.9 MB of text (nor 160,000 views of it)
    expect(textBytes).toBeGreaterThan(8_000_000);
    expect(retained).toBeLessThan(textBytes / 3);
  });

  it("agrees or declines on thousands of mutations of real and random files", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const next = createRandom(11);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
    const sources = generateConfigRepo({ objects: 40, docsPerFile: 4 }).map((f) => f.content);
    const corpus = corpusSetsIfPresent().flatMap((s) => s.files.map((f) => Buffer.from(f.content).toString("utf8")));
    if (corpus.length > 0) for (let i = 0; i < 40; i++) sources.push(pick(corpus));
    for (let i = 0; i < 40; i++) sources.push(randomSubsetStream(next));
    const atLineStart = (src: string, insert: (line: string) => string): string => {
      const lines = src.split("\n");
      const i = Math.floor(next() * lines.length);
      lines[i] = insert(lines[i]!);
      return lines.join("\n");
    };
    const afterColon = (src: string, insert: string): string => {
      const at = src.indexOf(": ", Math.floor(next() * src.length));
      return at === -1 ? src : src.slice(0, at + 2) + insert + src.slice(at + 2);
    };
    const mutations: readonly ((src: string) => string)[] = [
      (src) => src.slice(0, Math.floor(next() * src.length)), // truncated
      (src) => atLineStart(src, (l) => `\t${l}`),
      (src) => atLineStart(src, (l) => ` ${l}`),
      (src) => atLineStart(src, (l) => l.replace(/^ /, "")),
      (src) => atLineStart(src, (l) => `${l}\t`),
      (src) => atLineStart(src, (l) => `${l} # c`),
      (src) => atLineStart(src, (l) => `${l}#c`),
      (src) => atLineStart(src, (l) => `${l}\n${l}`), // duplicated keys, items
      (src) => atLineStart(src, (l) => `${l}\n${" ".repeat(Math.floor(next() * 8))}${pick(["# c", "x", "- y", "k: v", "---", "...", "? q", ": v", "%T", "|", "'"])}`),
      (src) => src.replace(/\n/g, "\r\n"),
      (src) => afterColon(src, pick(["&a ", "*a", "!t ", "!!str ", "|\n  x\n", ">-\n  x", "'", '"', "''", "'x' y", '"\\', '"\\u12"', "[", "{", "[a, ", "- ", "@", "`", "%", ",", "-", "? ", ": ", "~ ", "#"])),
      (src) => {
        const at = Math.floor(next() * src.length);
        return src.slice(0, at) + pick(["'", '"', "\\", ":", " ", "\n", "-", "#", "\u0001", "\u0085", "\u2028", "\u00a0", "\uFEFF", "\uD800"]) + src.slice(at);
      },
    ];
    let scanner = 0;
    const n = 4000;
    for (let i = 0; i < n; i++) if (paths(pick(mutations)(sources[i % sources.length]!)).scanner) scanner++;
    expect(scanner).toBeGreaterThan(n * 0.2); // the mutations leave many files readable: both outcomes are exercised
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

  it("takes the tags for a scalar starting with n, t or f only when it is 4 or 5 characters long", () => {
    // plainScalarValue returns any other length as the string itself: no tag may match one.
    const rests = ["", "u", "ul", "ull", "ULL", "ull ", "rue", "RUE", "ru", "alse", "ALSE", "als", "alsey", "ull0", "an", ".nan", "a", "amespace", "ame", "argetPort", "etwork", "0", "1.5", "e3", "x1F"];
    let tagged = 0;
    for (const first of "nNtTfF") {
      for (const rest of rests) {
        const s = first + rest;
        const matches = coreScalarTests.some((t) => t.test(s));
        if (s.length < 4 || s.length > 5) {
          expect(matches, s).toBe(false);
          expect(plainScalarValue(s)).toBe(s);
        } else if (matches) tagged++;
      }
    }
    expect(tagged).toBeGreaterThanOrEqual(9); // the nine words of the core schema are among them
    for (const w of ["null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE"]) expect(plainScalarValue(w)).toBe(w.toLowerCase() === "null" ? null : w.toLowerCase() === "true");
  });

  it("resolves decimal digits as the composer does, short or long", () => {
    const next = createRandom(20);
    const digits = ["0", "7", "00", "010", "0010", "15021", "65535", "999999999999999", "9007199254740993", "12345678901234567890123"];
    for (let i = 0; i < 200; i++) digits.push(Array.from({ length: 1 + Math.floor(next() * 20) }, () => String(Math.floor(next() * 10))).join(""));
    for (const s of [...digits, "1a", "12 ", "1_000", "1.0", "0x1F", "0o17", "-12", "+12"]) {
      const composed = parseYamlDocuments(`v: ${s}\n`)[0]!.value as { v: unknown };
      expect(plainScalarValue(s.trim()), s).toBe(composed.v);
    }
  });
});

/**
 * A random stream of the scanner's subset: one to three documents (markers, comments, blank lines
 * between them), each a block mapping of random depth with random layout: indentation steps of one
 * to four spaces, lists at their key's indentation or deeper, `- key:` items, flow lists, `{}`,
 * plain and quoted scalars of every core type, keys of every form, comments and trailing spaces.
 */
function randomSubsetStream(next: () => number): string {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const chance = (p: number): boolean => next() < p;
  const lines: string[] = [];
  const pad = (n: number): string => " ".repeat(n);
  const trailing = (): string => (chance(0.1) ? pad(1 + Math.floor(next() * 3)) : "") + (chance(0.15) ? ` # ${pick(["c", "x: y", "- z", "#", "'\""])}` : "");
  const noise = (col: number): void => {
    if (chance(0.08)) lines.push("");
    if (chance(0.08)) lines.push(`${pad(Math.floor(next() * (col + 4)))}# ${pick(["comment", "a: b", "- x", ""])}`);
  };
  const scalar = (): string =>
    pick([
      ...["x", "hello world", "a:b", "a#b", "http://x/y?q=1#f", "-1", "-x", ":x", "?x", "x]", "x, y", "010", "0x1F", "0o17", "0o8", "1e3", "-1.5e-3", ".5", "5.", "+1"],
      ...["-.inf", ".NaN", ".nan", "~", "null", "Null", "NULL", "nULL", "true", "TRUE", "False", "tRUE", "yes", "no", "on", "1_000", "12:30", "-0", "1.50", "é", "\u00a0"],
      ...["'it''s'", "'a # b'", "''", '""', '"\\u00e9\\n"', '"tab\\there"', '"q\\"uote"', '"\\x41\\U0001F600"', "'x: y'", '" lead and trail "', "'- x'", '"#"', "'['"],
    ]);
  const flow = (): string => pick(["[]", "[ ]", "{}", "{ }", `[${scalarsForFlow().join(pick([", ", ",", " , "]))}]`]);
  const scalarsForFlow = (): string[] =>
    Array.from({ length: 1 + Math.floor(next() * 4) }, () => pick(["a", "b c", "1", "-2", "true", "~", ".5", "'q'", '"d"', "'a, b'", '"]"', "x#y", "-x", "é"]));
  const keys = [
    "name", "app.kubernetes.io/name", "a b", "k~1", "'quoted key'", '"dq key"', "10", "0x1F", "1e3", "true", "null", ":path", "-x", "?q", "a:b", "a#b",
    "ключ", "'it''s'", '"\\u00e9"', "'yes'", "'/x'", // no two alike once resolved (`1: a` and `'1': b` decline)
  ];
  type Layout = { readonly first: string | undefined }; // the `- ` prefix of a compact mapping's first line
  const map = (col: number, depth: number, layout: Layout): void => {
    const count = 1 + Math.floor(next() * 4);
    const names = [...keys].sort(() => next() - 0.5).slice(0, count);
    names.forEach((key, i) => {
      const prefix = i === 0 && layout.first !== undefined ? layout.first : pad(col);
      if (i > 0 || layout.first === undefined) noise(col);
      const k = `${prefix}${key}${chance(0.05) ? " " : ""}:`;
      const r = depth >= 5 ? 0 : next();
      if (r < 0.5) lines.push(`${k} ${scalar()}${trailing()}`);
      else if (r < 0.6) lines.push(`${k} ${flow()}${trailing()}`);
      else if (r < 0.65) lines.push(`${k}${trailing()}`); // null
      else if (r < 0.82) {
        lines.push(`${k}${trailing()}`);
        map(col + 1 + Math.floor(next() * 4), depth + 1, { first: undefined });
      } else {
        lines.push(`${k}${trailing()}`);
        seq(chance(0.5) ? col : col + 1 + Math.floor(next() * 4), depth + 1);
      }
    });
  };
  const seq = (col: number, depth: number): void => {
    const count = 1 + Math.floor(next() * 4);
    for (let i = 0; i < count; i++) {
      noise(col);
      const dash = `${pad(col)}-${pad(1 + Math.floor(next() * 3))}`;
      const r = depth >= 5 ? 0 : next();
      if (r < 0.45) lines.push(`${dash}${scalar()}${trailing()}`);
      else if (r < 0.55) lines.push(`${dash}${flow()}${trailing()}`);
      else map(dash.length, depth + 1, { first: dash });
    }
  };
  const docs = 1 + Math.floor(next() * 3);
  for (let d = 0; d < docs; d++) {
    if (d > 0) {
      if (chance(0.3)) lines.push(pick(["...", "... # end"]));
      lines.push(pick(["---", "---", "--- # doc", "---  "]));
    } else if (chance(0.2)) lines.push("---");
    noise(0);
    map(0, 0, { first: undefined });
  }
  if (chance(0.2)) lines.push(pick(["...", "# trailing comment", ""]));
  return lines.join("\n") + (chance(0.9) ? "\n" : "");
}
