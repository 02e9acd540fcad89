// The loader's whole output with and without the YAML fast path: the same state (objects,
// positions, digests, records) and the same diagnostics at the same file, line and column, over
// the generated repository, the corpus and corpus files with random edits (most of which make
// YAML errors, schema violations and other diagnostics). The fast path is switched off by
// loading a second copy of the loader whose yaml-fast module always declines.
import { describe, expect, it, vi } from "vitest";
import { generateConfigRepo } from "../../bench/config/generate-config-repo.js";
import type * as ConfigModule from "../../src/config/index.js";
import type { SourceFile } from "../../src/config/index.js";
import { corpusSetsIfPresent } from "../corpus/corpus.js";
import { createRandom } from "../helpers/random.js";

async function loaders(): Promise<{ fast: typeof ConfigModule; composer: typeof ConfigModule }> {
  const fast = await import("../../src/config/index.js");
  vi.resetModules();
  vi.doMock("../../src/config/yaml-fast.js", () => ({ parseYamlFast: () => undefined }));
  const composer = await import("../../src/config/index.js");
  vi.doUnmock("../../src/config/yaml-fast.js");
  vi.resetModules();
  return { fast, composer };
}

describe("the loader with and without the YAML fast path", () => {
  it("gives the same state and diagnostics", async () => {
    const { fast, composer } = await loaders();
    expect(fast.loadDesiredState).not.toBe(composer.loadDesiredState);
    const same = (files: readonly SourceFile[]): number => {
      const a = fast.loadDesiredState(files);
      const b = composer.loadDesiredState(files);
      expect(JSON.stringify(a.diagnostics)).toBe(JSON.stringify(b.diagnostics));
      expect(JSON.stringify(a.state)).toBe(JSON.stringify(b.state));
      return a.diagnostics.length;
    };
    expect(same(generateConfigRepo({ objects: 1000, docsPerFile: 4 }))).toBe(0);
    const sets = corpusSetsIfPresent();
    for (const s of sets) same(s.files);

    const next = createRandom(7);
    const inserts = [" ", "\t", ":", "- ", "#", "'", "\n", "[", "{", "&a ", "*a", "~", "null", "x"];
    let diagnostics = 0;
    for (const s of sets) {
      const edited = s.files.map((f) => {
        const text = Buffer.from(f.content).toString("utf8");
        const at = Math.floor(next() * text.length);
        const r = next();
        const content = r < 0.4 ? text.slice(0, at) + text.slice(at + 1) : text.slice(0, at) + inserts[Math.floor(next() * inserts.length)]! + text.slice(at);
        return { path: f.path, content };
      });
      diagnostics += same(edited);
    }
    expect(diagnostics).toBeGreaterThan(100);
  });
});
