/**
 * tools/helm-render behaves like `helm template` on the features the charts use: values files,
 * --set (types, lists, indices, null deletes), include/tpl/required/toYaml/fromYaml/toJson/lookup,
 * .Release/.Chart/.Capabilities/.Files/.Template, NOTES, and errors naming template and line.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildRenderer, parseManifests, render, renderOk, ROOT } from "./helm-render.js";

const FIXTURES = join(ROOT, "test", "fixtures", "charts");
const PROBE = join(FIXTURES, "probe");
let tmp = "";

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "helm-render-"));
  await buildRenderer();
}, 180_000);
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

function data(text: string): Record<string, string> {
  const [m] = parseManifests(text);
  return m?.object.data as Record<string, string>;
}

describe("helm-render", () => {
  it("exposes .Release, .Chart, .Capabilities, .Files, .Template and the Helm functions", async () => {
    const { text, manifests } = await renderOk(PROBE, ["--name", "rel", "--namespace", "ns1"]);
    expect(manifests).toHaveLength(1); // empty.yaml renders only a comment and is dropped, NOTES are separate
    expect(manifests[0]?.source).toBe("probe/templates/configmap.yaml");
    expect(data(text)).toMatchObject({
      chart: "probe 1.2.3 9.9",
      release: "rel Helm true false 1",
      template: "probe/templates/configmap.yaml",
      tpl: "rel-hello",
      kube: "v1.29.0 1.29",
      hasApps: "true",
      hasIstio: "false",
      lookup: "{}",
      file: "file content",
      missing: "",
      "nested.yaml": "drop: to-be-deleted\nkeep: yes-kept\nlist:\n- a\n- b\n",
    });
    expect(JSON.parse(data(text).roundtrip!)).toEqual({ drop: "to-be-deleted", keep: "yes-kept", list: ["a", "b"] });
  });

  it("--is-upgrade, --kube-version and --api-versions change the built-in objects", async () => {
    const { text } = await renderOk(PROBE, ["--is-upgrade", "--kube-version", "v1.31.2", "--api-versions", "networking.istio.io/v1"]);
    expect(data(text)).toMatchObject({ release: "release-name Helm false true 2", kube: "v1.31.2 1.31", hasIstio: "true" });
  });

  it("merges -f files in order and applies --set on top with Helm's typing", async () => {
    const a = join(tmp, "a.yaml");
    const b = join(tmp, "b.yaml");
    writeFileSync(a, "greeting: from-a\nnested:\n  keep: from-a\n");
    writeFileSync(b, "nested:\n  drop: null\n  list: [x]\n");
    const { text } = await renderOk(PROBE, ["-f", a, "-f", b, "--set", "num=42,flag=false,str=007", "--set-string", "greeting=true"]);
    const d = data(text);
    expect(d.tpl).toBe("release-name-true");
    expect(JSON.parse(d.json!)).toEqual({ keep: "from-a", list: ["x"] }); // null deletes a key, lists replace
    expect(d.setTypes).toBe("int64 bool string"); // 007 is not an integer in Helm's --set grammar
  });

  it("--set supports lists, indices, escaped dots and commas inside braces", async () => {
    const { text } = await renderOk(PROBE, ["--set", "nested.list={p,q,r}", "--set", "nested.obj[1].k=v", "--set", "nested.a\\.b=dotted"]);
    expect(JSON.parse(data(text).json!)).toEqual({ keep: "yes-kept", drop: "to-be-deleted", list: ["p", "q", "r"], obj: [null, { k: "v" }], "a.b": "dotted" });
  });

  it("renders NOTES.txt separately", async () => {
    const r = await render(PROBE, ["--notes", "--name", "n1"]);
    expect(r).toMatchObject({ code: 0, stdout: "notes for n1\n" });
  });

  it("errors name the template and line: parse, execution, YAML", async () => {
    const parse = await render(join(FIXTURES, "broken"));
    expect(parse.code).toBe(1);
    expect(parse.stderr).toContain("parse error in broken/templates/bad.yaml:8");
    const exec = await render(PROBE, ["--set-string", "templated={{ .Values.nested.keep.deeper }}"]);
    expect(exec.code).toBe(1);
    expect(exec.stderr).toContain("probe/templates/configmap.yaml:10");
    expect(exec.stderr).toContain("error during tpl function execution");
    const yamlErr = await render(join(FIXTURES, "badyaml"));
    expect(yamlErr.code).toBe(1);
    expect(yamlErr.stderr).toContain("YAML parse error on badyaml/templates/cm.yaml");
  });

  it("usage errors exit 2; bad --set and a missing values file exit 1 with the reason", async () => {
    expect((await render(PROBE, ["--bogus"])).code).toBe(2);
    const badSet = await render(PROBE, ["--set", "novalue"]);
    expect(badSet).toMatchObject({ code: 1 });
    expect(badSet.stderr).toContain('key "novalue" has no value');
    const noFile = await render(PROBE, ["-f", join(tmp, "absent.yaml")]);
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toContain("absent.yaml");
  });
});
