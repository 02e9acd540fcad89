/**
 * Loaded objects of one kind and layout share one hidden class. V8 (Node 20) gives every object made by
 * a literal that starts with a spread (`{ ...rest, workspace }`) a class of its own; the loader set each
 * object's workspace that way, so 1,893 of the large fleet's 2,101 objects were each a class apart and
 * every translator's `o.metadata` and `o.spec` megamorphic. Values are the loader's other tests' concern.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allObjects, loadDesiredState } from "../../src/config/index.js";
import { hiddenClasses as classes } from "../helpers/hidden-classes.js";
import { repoFiles } from "../helpers/repo-files.js";

const EXAMPLE = join(import.meta.dirname, "..", "..", "examples", "repo-layout");

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
    const { state, diagnostics } = loadDesiredState([...Object.entries(repoFiles(EXAMPLE)).map(([path, content]) => ({ path, content })), { path: "workspaces/bookinfo-frontends/shapes.yaml", content: `${routes}\n` }]);
    expect(diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    const shapes = [...allObjects(state)].filter((o) => o.metadata.name.startsWith("shape-"));
    expect(shapes).toHaveLength(30);
    expect(shapes.every((o) => o.workspace === shapes[0]!.workspace && o.workspace !== undefined)).toBe(true);
    expect(classes(shapes)).toBe(1);
  });
});
