/**
 * Loaded objects of one kind and layout share one hidden class. V8 (Node 20) gives every object made by
 * a literal that starts with a spread (`{ ...rest, workspace }`) a class of its own; the loader set each
 * object's workspace that way, so 1,893 of the large fleet's 2,101 objects were each a class apart and
 * every translator's `o.metadata` and `o.spec` megamorphic. %HaveSameMap (V8's natives syntax, enabled
 * for this worker) is the check; values are the loader's other tests' concern.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { setFlagsFromString } from "node:v8";
import { describe, expect, it } from "vitest";
import { allObjects, loadDesiredState } from "../../src/config/index.js";

setFlagsFromString("--allow-natives-syntax");
// Natives syntax is not TypeScript: the check is compiled at run time, after the flag is set.
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean;

const EXAMPLE = join(import.meta.dirname, "..", "..", "examples", "repo-layout");

function files(dir: string): { path: string; content: string }[] {
  const out: { path: string; content: string }[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(name)) out.push({ path: relative(dir, p), content: readFileSync(p, "utf8") });
    }
  };
  walk(dir);
  return out;
}

function classes(objects: readonly object[]): number {
  const seen: object[] = [];
  for (const o of objects) if (!seen.some((s) => haveSameMap(s, o))) seen.push(o);
  return seen.length;
}

describe("loaded objects", () => {
  it("of one kind and layout share one hidden class once their workspace is set", () => {
    // 30 RouteTables of one layout in one workspace of the example repository.
    const routes = Array.from({ length: 30 }, (_, i) =>
      [
        "apiVersion: networking.gloo.solo.io/v2",
        "kind: RouteTable",
        "metadata:",
        `  name: shape-${i}`,
        "  namespace: bookinfo-frontends",
        "spec:",
        "  hosts:",
        `    - shape-${i}.example.com`,
        "  http:",
        "    - name: all",
        "      forwardTo:",
        "        destinations:",
        "          - ref:",
        "              name: productpage",
        "            port:",
        "              number: 9080",
      ].join("\n"),
    ).join("\n---\n");
    const { state, diagnostics } = loadDesiredState([...files(EXAMPLE), { path: "workspaces/bookinfo-frontends/shapes.yaml", content: `${routes}\n` }]);
    expect(diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const shapes = [...allObjects(state)].filter((o) => o.metadata.name.startsWith("shape-"));
    expect(shapes).toHaveLength(30);
    expect(shapes.every((o) => o.workspace === shapes[0]!.workspace && o.workspace !== undefined)).toBe(true);
    expect(classes(shapes)).toBe(1);
  });
});
