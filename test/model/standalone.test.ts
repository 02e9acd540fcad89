// The validators are compiled by `npm run gen` (ajv standalone code in src/model/generated/validators.gen.ts):
// a process that validates documents loads no schema compiler, and the generated code gives the same issues
// as the schemas compiled by ajv in this test (the compiler the validators used to run at start-up).
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SUPPORTED_KINDS, validateResource } from "../../src/model/index.js";
import { VALIDATORS } from "../../src/model/generated/validators.gen.js";
import { checkGlooRules } from "../../src/model/gloo-rules.js";
import { VALID } from "./fixtures.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const require = createRequire(import.meta.url);

describe("generated validators", () => {
  it("there is one per schema file, and every supported kind has its own", () => {
    const files = readdirSync(`${repo}schemas`).filter((f) => f.endsWith(".schema.json")).sort();
    expect(Object.keys(VALIDATORS).sort()).toEqual(files);
    for (const k of SUPPORTED_KINDS) expect(VALIDATORS[k.schemaFile], k.kind).toBeTypeOf("function");
  });

  it("a process that validates a document loads no part of ajv's compiler", () => {
    const script = `
      const { validateResource } = await import("./src/model/index.ts");
      const issues = validateResource({ apiVersion: "networking.gloo.solo.io/v2", kind: "RouteTable", metadata: { name: "a", namespace: "b" }, spec: { hostz: [] } });
      const { createRequire } = await import("node:module");
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((p) => p.includes("/node_modules/ajv/")).map((p) => p.replace(/.*node_modules\\//, ""));
      console.log(JSON.stringify({ issues: issues.map((i) => i.path), loaded }));`;
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: repo, encoding: "utf8" });
    expect(r.stderr).toBe("");
    const out = JSON.parse(r.stdout.trim()) as { issues: string[]; loaded: string[] };
    expect(out.issues).toContain("/spec/hostz");
    expect(out.loaded.length).toBeGreaterThan(0); // ajv's small run-time helpers (ajv/dist/runtime/*)
    expect(out.loaded.filter((p) => !p.startsWith("ajv/dist/runtime/"))).toEqual([]);
  });

  it("give the errors that ajv compiling the schemas at run time gives", () => {
    const { Ajv } = require("ajv") as typeof import("ajv");
    const addFormats = require("ajv-formats") as (ajv: InstanceType<typeof Ajv>) => unknown;
    const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true, allowMatchingProperties: true });
    addFormats(ajv);
    ajv.addKeyword({ keyword: "x-gloo-rules", type: "object", schemaType: "array", errors: true, validate: checkGlooRules as never });
    for (const f of Object.keys(VALIDATORS)) {
      const schema = JSON.parse(readFileSync(`${repo}schemas/${f}`, "utf8")) as { $id?: string };
      ajv.addSchema(schema, schema.$id ?? `https://gitmesh.io/schemas/${f}`);
    }
    const strip = (errors: unknown) => JSON.parse(JSON.stringify(errors ?? null)) as unknown;
    let compared = 0;
    for (const [kind, doc] of Object.entries(VALID)) {
      const info = SUPPORTED_KINDS.find((k) => k.kind === kind)!;
      const schema = JSON.parse(readFileSync(`${repo}schemas/${info.schemaFile}`, "utf8")) as { $id?: string };
      const compiled = ajv.getSchema(schema.$id ?? `https://gitmesh.io/schemas/${info.schemaFile}`)!;
      const generated = VALIDATORS[info.schemaFile]!;
      const broken = { ...(doc as object), spec: { ...((doc as { spec?: object }).spec ?? {}), unknownField: 1 }, extra: null };
      for (const d of [doc, broken]) {
        expect(generated(d), kind).toBe(compiled(d));
        expect(strip(generated.errors), kind).toEqual(strip(compiled.errors));
        compared++;
      }
      expect(validateResource(broken).length, kind).toBeGreaterThan(0);
    }
    expect(compared).toBe(2 * Object.keys(VALID).length);
  });
});
