// Every insight code is documented in docs/insights.md (why it matters, how to fix it), every documented
// code exists, and every code has a unit test that triggers it and one that does not (analyze.test.ts).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { INSIGHT_CODES } from "../../src/insights/index.js";

const doc = readFileSync(new URL("../../docs/insights.md", import.meta.url), "utf8");
const tests = readFileSync(new URL("./analyze.test.ts", import.meta.url), "utf8");
const codes = Object.keys(INSIGHT_CODES).sort();

/** `## CODE` sections of the document, with their text. */
function sections(): Map<string, string> {
  const out = new Map<string, string>();
  const parts = doc.split(/^## /m).slice(1);
  for (const p of parts) {
    const [title = "", ...body] = p.split("\n");
    out.set(title.trim(), body.join("\n"));
  }
  return out;
}

describe("docs/insights.md", () => {
  it("documents exactly the codes the analysis has", () => {
    expect([...sections().keys()].sort()).toEqual(codes);
  });

  it("says for every code its severity, why it matters and how to fix it", () => {
    for (const [code, text] of sections()) {
      expect(text, code).toContain(`**Severity**: ${INSIGHT_CODES[code as keyof typeof INSIGHT_CODES].severity}`);
      expect(text, code).toMatch(/\*\*Why it matters\.\*\* \S/);
      expect(text, code).toMatch(/\*\*How to fix it\.\*\* \S/);
    }
  });

  it("every code has a test that triggers it and one that does not", () => {
    for (const code of codes) {
      expect(tests, code).toContain(`it("${code} triggers`);
      expect(tests, code).toContain(`it("${code} does not trigger`);
    }
  });
});
