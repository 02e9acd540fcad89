/** Same inputs in shuffled order (documents, files, discovery lists) ⇒ byte-identical output. */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadDesiredState } from "../../src/config/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { translateAll } from "../../src/translate/index.js";
import { caseNames, FIXTURES, loadCase, renderOutput } from "./golden.js";

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function shuffle<T>(list: readonly T[], next: () => number): T[] {
  const a = [...list];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

function shuffledSnapshot(s: DiscoverySnapshot, next: () => number): DiscoverySnapshot {
  return {
    ...s,
    namespaces: shuffle(s.namespaces, next),
    services: shuffle(s.services, next),
    workloads: shuffle(s.workloads, next),
    gateways: shuffle(s.gateways, next),
    meshes: shuffle(s.meshes, next),
  };
}

/** The texts of a case's input files (input.yaml, or every file under input/). */
function inputTexts(name: string): string[] {
  const single = join(FIXTURES, name, "input.yaml");
  if (existsSync(single)) return [readFileSync(single, "utf8")];
  const walk = (dir: string): string[] =>
    readdirSync(dir)
      .sort()
      .flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : [readFileSync(join(dir, n), "utf8")]));
  return walk(join(FIXTURES, name, "input"));
}

/** Documents move between files when shuffled: the source-file annotation is the only thing allowed to change. */
function withoutSourceFiles(text: string): string {
  return text.replaceAll(/gitmesh\.io\/source-file: \S+/g, "gitmesh.io/source-file: <file>");
}

describe("determinism", () => {
  for (const name of caseNames()) {
    it(`${name}: shuffled documents, files and discovery give byte-identical output`, () => {
      const c = loadCase(name);
      const expected = withoutSourceFiles(renderOutput(translateAll(c.desired, c.discovery)));
      for (const seed of [1, 2, 3]) {
        const next = rng(seed);
        const docs = shuffle(inputTexts(name).flatMap((text) => text.split(/^---\n/m)), next);
        // Split the documents over several files, in shuffled file order.
        const files = docs.map((content, i) => ({ path: `part-${(i * 7919) % 101}.yaml`, content }));
        const desired = loadDesiredState(shuffle(files, next)).state;
        const discovery = new Map(shuffle([...c.discovery], next).map(([k, v]) => [k, shuffledSnapshot(v, next)] as const));
        const out = renderOutput(translateAll(desired, discovery));
        expect(withoutSourceFiles(out)).toBe(expected);
      }
    });
  }
});
