import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { validateIstioResource } from "../../src/translate/index.js";
import { caseNames, loadCase, runCase } from "./golden.js";

// The one switch that rewrites the golden files (read here, in the test: translation never reads the environment).
const UPDATE = process.env.UPDATE_GOLDEN === "1";

describe("golden translation cases", () => {
  for (const name of caseNames()) {
    it(name, () => {
      const c = loadCase(name);
      const { result, output, diagnostics } = runCase(c);
      for (const out of result.clusters.values()) for (const r of out.resources) expect(validateIstioResource(r), `${r.kind} ${r.metadata.namespace}/${r.metadata.name}`).toEqual([]);
      const outFile = join(c.dir, "output.yaml");
      const diagFile = join(c.dir, "diagnostics.txt");
      if (UPDATE) {
        writeFileSync(outFile, output);
        writeFileSync(diagFile, diagnostics);
      }
      expect(existsSync(outFile) && existsSync(diagFile), `golden files of ${name} are missing: run UPDATE_GOLDEN=1 vitest run test/translate and review them`).toBe(true);
      expect(output).toBe(readFileSync(outFile, "utf8"));
      expect(diagnostics).toBe(readFileSync(diagFile, "utf8"));
    });
  }
});
