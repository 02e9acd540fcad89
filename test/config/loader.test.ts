import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GENERATIVE_TEST_TIMEOUT_MS } from "../helpers/random.js";
import {
  allObjects,
  CONFIG_CODES,
  ConfigCode,
  getObject,
  loadDesiredState,
  locate,
  updateDesiredState,
  objectsInWorkspace,
  objectsOfKind,
  unsupportedObjects,
  workspaceNames,
  workspaceOf,
  type SourceFile,
} from "../../src/config/index.js";
import {
  baseRepo,
  codes,
  docs,
  externalService,
  file,
  kubernetesCluster,
  retryPolicy,
  routeTable,
  virtualDestination,
  where,
  workspace,
  workspaceSettings,
  yamlDoc,
} from "./fixtures.js";

const load = (files: SourceFile[]) => loadDesiredState(files);
const withFile = (path: string, content: string): SourceFile[] => [...baseRepo(), file(path, content)];

describe("a valid repository", () => {
  it("loads every object with its owner and no diagnostics", () => {
    const { state, diagnostics } = load(baseRepo());
    expect(diagnostics).toEqual([]);
    expect(allObjects(state).map((o) => o.key)).toEqual([
      "KubernetesCluster//gloo-mesh/cluster1",
      "RetryTimeoutPolicy//web/main",
      "RouteTable//web/frontend",
      "VirtualGateway//web-gw/north",
      "Workspace//gloo-mesh/web",
      "WorkspaceSettings//web/web",
    ]);
    const rt = getObject(state, "RouteTable//web/frontend")!;
    expect(rt.workspace).toBe("web");
    expect(workspaceOf(state, rt)).toBe("web");
    expect(getObject(state, "Workspace//gloo-mesh/web")!.workspace).toBeUndefined();
    expect(objectsOfKind(state, "RouteTable").map((o) => o.metadata.name)).toEqual(["frontend"]);
    expect(objectsInWorkspace(state, "web").map((o) => o.kind)).toEqual(["RetryTimeoutPolicy", "RouteTable", "VirtualGateway", "WorkspaceSettings"]);
    expect(workspaceNames(state)).toEqual(["web"]);
    expect(rt.source).toEqual({ file: "workspaces/web/routes.yaml", line: 1, column: 1, docIndex: 0 });
    expect(rt.metadata).toEqual({ name: "frontend", namespace: "web", labels: {}, annotations: {} });
  });

  it("is plain JSON data that survives a round trip, and is frozen", () => {
    const { state } = load(baseRepo());
    const copy = JSON.parse(JSON.stringify(state));
    expect(copy).toEqual(state);
    expect(getObject(copy, "RouteTable//web/frontend")).toEqual(getObject(state, "RouteTable//web/frontend"));
    expect(Object.isFrozen(state)).toBe(true);
    const rt = getObject(state, "RouteTable//web/frontend")!;
    expect(Object.isFrozen(rt)).toBe(true);
    expect(Object.isFrozen(rt.spec)).toBe(true);
    expect(() => {
      (rt.metadata as { name: string }).name = "x";
    }).toThrow(TypeError);
  });

  it("gives equal content equal digests, whatever the key order or formatting", () => {
    const a = "apiVersion: networking.gloo.solo.io/v2\nkind: VirtualDestination\nmetadata: {name: r, namespace: web}\nspec:\n  hosts: [r.global]\n  ports: [{number: 1, protocol: HTTP}]\n";
    const b = "kind: VirtualDestination\nspec:\n  ports:\n  - protocol: HTTP\n    number: 1\n  hosts:\n  - r.global\nmetadata:\n  namespace: web\n  name: r\napiVersion: networking.gloo.solo.io/v2\n";
    const digest = (text: string) => getObject(load(withFile("vd.yaml", text)).state, "VirtualDestination//web/r")!.digest;
    expect(digest(a)).toBe(digest(b));
    expect(digest(a)).not.toBe(digest(a.replace("number: 1", "number: 2")));
  });

  it("accepts Uint8Array contents (Git blobs) and strips a byte-order mark", () => {
    const files = baseRepo().map((f) => ({ path: f.path, content: new TextEncoder().encode(`\uFEFF${f.content as string}`) }));
    const { state, diagnostics } = load(files);
    expect(diagnostics).toEqual([]);
    expect(allObjects(state)).toHaveLength(6);
  });

  it("documents every diagnostic code it can emit, in the catalog and in the README", () => {
    const readme = readFileSync(new URL("../../src/config/README.md", import.meta.url), "utf8");
    for (const code of Object.values(ConfigCode)) {
      expect(CONFIG_CODES[code].description.length).toBeGreaterThan(20);
      expect(readme).toContain(`| \`${code}\` | ${CONFIG_CODES[code].severity} |`);
    }
  });
});

describe("YAML syntax and multi-document files", () => {
  it("reports a syntax error at its line and keeps the other documents of the file", () => {
    const bad = docs(virtualDestination("reviews", "web"), "apiVersion: x\nkind: [unclosed\n", externalService("ext", "web"));
    const { state, diagnostics } = load(withFile("workspaces/web/multi.yaml", bad));
    const syntax = diagnostics.filter((d) => d.code === ConfigCode.YAML_SYNTAX);
    expect(syntax.length).toBeGreaterThan(0);
    const firstDocLines = virtualDestination("reviews", "web").split("\n").length - 1;
    // The broken document starts after the first one and its `---` line.
    for (const d of syntax) {
      expect(d.file).toBe("workspaces/web/multi.yaml");
      expect(d.line).toBeGreaterThanOrEqual(firstDocLines + 2);
      expect(d.line).toBeLessThanOrEqual(firstDocLines + 4);
      expect(d.severity).toBe("error");
    }
    expect(getObject(state, "VirtualDestination//web/reviews")).toBeDefined();
    expect(getObject(state, "ExternalService//web/ext")).toBeDefined();
    expect(getObject(state, "ExternalService//web/ext")!.source.docIndex).toBe(2);
  });

  it("reports duplicate map keys as syntax errors on the repeated key", () => {
    const text = "apiVersion: networking.gloo.solo.io/v2\nkind: VirtualDestination\nmetadata:\n  name: a\n  name: b\n  namespace: web\nspec: {}\n";
    const { diagnostics } = load(withFile("dup-key.yaml", text));
    expect(where(diagnostics)).toEqual(["dup-key.yaml:5:3 YAML_SYNTAX"]);
  });

  it("skips empty documents and comment-only files", () => {
    const text = `---\n# nothing here\n---\n${virtualDestination("reviews", "web")}---\n---\n`;
    const { state, diagnostics } = load([...withFile("a.yaml", text), file("empty.yaml", ""), file("comments.yml", "# just a comment\n")]);
    expect(diagnostics).toEqual([]);
    expect(getObject(state, "VirtualDestination//web/reviews")).toBeDefined();
    expect(state.files["empty.yaml"]!.objects).toEqual([]);
  });

  it("warns about an unresolved YAML tag and still loads the object", () => {
    const text = virtualDestination("reviews", "web").replace("reviews.global", "!custom reviews.global");
    const { state, diagnostics } = load(withFile("tag.yaml", text));
    const line = text.split("\n").findIndex((l) => l.includes("!custom")) + 1;
    expect(where(diagnostics)).toEqual([`tag.yaml:${line}:${text.split("\n")[line - 1]!.indexOf("!custom") + 1} YAML_WARNING`]);
    expect(diagnostics[0]!.severity).toBe("warning");
    expect(getObject(state, "VirtualDestination//web/reviews")).toBeDefined();
  });

  it("reports a document that is not a mapping", () => {
    const { diagnostics } = load(withFile("list.yaml", "- a\n- b\n---\njust a string\n"));
    expect(where(diagnostics)).toEqual(["list.yaml:1:1 NOT_AN_OBJECT", "list.yaml:4:1 NOT_AN_OBJECT"]);
  });

  it("reports content that is not UTF-8", () => {
    const { diagnostics } = load([...baseRepo(), { path: "latin1.yaml", content: new Uint8Array([0x6b, 0x3a, 0x20, 0xe9, 0xff, 0x0a]) }]);
    expect(where(diagnostics)).toEqual(["latin1.yaml:1:1 FILE_ENCODING"]);
  });

  it("refuses alias bombs instead of expanding them", () => {
    const lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
    for (let i = 0; i < 8; i++) lines.push(`${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10).fill(`*${String.fromCharCode(97 + i)}`).join(", ")}]`);
    const { diagnostics } = load(withFile("bomb.yaml", `${lines.join("\n")}\n`));
    expect(codes(diagnostics)).toContain(ConfigCode.YAML_SYNTAX);
  });

  it("survives pathological nesting with a diagnostic instead of a crash", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const flow = `a: ${"[".repeat(20_000)}${"]".repeat(20_000)}\n`;
    const block = `${Array.from({ length: 3000 }, (_, i) => `${" ".repeat(i)}k:`).join("\n")} 1\n`;
    const { state, diagnostics } = load([...withFile("flow.yaml", flow), file("block.yaml", block)]);
    // Where exactly the parser gives up depends on the stack size; that it reports and goes on does not.
    expect(diagnostics.map((d) => `${d.file ?? ""} ${d.code}`)).toEqual(["block.yaml YAML_SYNTAX", "flow.yaml YAML_SYNTAX"]);
    expect(allObjects(state)).toHaveLength(6);
  });

  it("only reads .yaml and .yml files", () => {
    const { state } = load([...baseRepo(), file("README.md", "# not yaml: [\n"), file("x.json", "{}"), file("extra.yml", virtualDestination("reviews", "web"))]);
    expect(Object.keys(state.files)).not.toContain("README.md");
    expect(getObject(state, "VirtualDestination//web/reviews")!.source.file).toBe("extra.yml");
  });
});

describe("line and column accuracy", () => {
  it("puts a schema violation on the line of the offending field, in every document of a multi-document file", () => {
    const first = virtualDestination("ok", "web");
    const second = [
      "apiVersion: networking.gloo.solo.io/v2",
      "kind: VirtualDestination",
      "metadata:",
      "  name: reviews",
      "  namespace: web",
      "spec:",
      "  hosts: [reviews.global]",
      "  ports:",
      "  - number: 9080",
      "    protocol: HTTPX",
      "  servces: []",
      "",
    ].join("\n");
    const offset = first.split("\n").length; // lines of doc 1 (incl. final newline) + the `---` line
    const { diagnostics } = load(withFile("workspaces/web/vd.yaml", docs(first, second)));
    const issues = diagnostics.filter((d) => d.code === ConfigCode.SCHEMA_VIOLATION);
    expect(issues.map((d) => [d.path, d.line, d.column])).toEqual([
      ["/spec/ports/0/protocol", offset + 10, 5],
      ["/spec/servces", offset + 11, 3],
    ]);
    expect(issues[1]!.message).toContain("services");
    expect(issues[0]!.object).toEqual({ apiVersion: "networking.gloo.solo.io/v2", kind: "VirtualDestination", name: "reviews", namespace: "web" });
  });

  it("points a missing required field at the object that lacks it", () => {
    const text = ["apiVersion: networking.gloo.solo.io/v2", "kind: VirtualDestination", "metadata:", "  name: reviews", "  namespace: web", "spec:", "  hosts: [reviews.global]", "  ports:", "  - protocol: HTTP", ""].join("\n");
    const { diagnostics } = load(withFile("vd.yaml", text));
    expect(where(diagnostics)).toEqual(["vd.yaml:9:5 SCHEMA_VIOLATION"]);
    expect(diagnostics[0]!.path).toBe("/spec/ports/0");
  });

  it("maps any pointer inside an object to its line with locate()", () => {
    const { state } = load(baseRepo());
    const rt = getObject(state, "RouteTable//web/frontend")!;
    const text = baseRepo().find((f) => f.path === "workspaces/web/routes.yaml")!.content as string;
    const lineOf = (needle: string) => text.split("\n").findIndex((l) => l.includes(needle)) + 1;
    expect(locate(rt, "/spec/virtualGateways/0/name").line).toBe(lineOf("name: north"));
    expect(locate(rt, "/spec/http/0/forwardTo/destinations/0/port/number").line).toBe(lineOf("number: 8080"));
    // Keys with `/` and `~` are escaped as in RFC 6901.
    const annotated = load(withFile("a.yaml", virtualDestination("r", "web").replace("metadata:\n", "metadata:\n  annotations:\n    example.com/a~b: x\n"))).state;
    expect(locate(getObject(annotated, "VirtualDestination//web/r")!, "/metadata/annotations/example.com~1a~0b")).toMatchObject({ line: 5, column: 5 });
    // A pointer that does not exist in the source falls back to its nearest ancestor.
    expect(locate(rt, "/spec/http/0/forwardTo/destinations/0/subset/version")).toEqual({
      file: "workspaces/web/routes.yaml",
      line: lineOf("- ref:"),
      column: text.split("\n")[lineOf("- ref:") - 1]!.indexOf("ref:") + 1,
      path: "/spec/http/0/forwardTo/destinations/0/subset/version",
    });
  });
});

describe("kinds and metadata", () => {
  it("keeps a non-Gloo object as a warning: not applied anywhere", () => {
    const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: web\ndata: {}\n";
    const { state, diagnostics } = load(withFile("cm.yaml", cm));
    expect(where(diagnostics)).toEqual(["cm.yaml:2:1 UNSUPPORTED_KIND"]);
    expect(diagnostics[0]!.severity).toBe("warning");
    expect(diagnostics[0]!.message).toBe("ConfigMap web/settings (v1) is not Gloo Mesh configuration; gitmesh does not apply it anywhere");
    expect(diagnostics[0]!.object).toEqual({ apiVersion: "v1", kind: "ConfigMap", name: "settings", namespace: "web" });
    expect(unsupportedObjects(state)).toEqual([
      expect.objectContaining({ apiVersion: "v1", kind: "ConfigMap", name: "settings", namespace: "web", source: { file: "cm.yaml", line: 1, column: 1, docIndex: 0 } }),
    ]);
  });

  it("a mistyped Gloo apiVersion is an error naming the right one (the commit is rejected, not the policy dropped)", () => {
    const rt = "apiVersion: networking.gloo.solo.io/v1\nkind: RouteTable\nmetadata: {name: a, namespace: web}\nspec: {}\n";
    const { diagnostics } = load(withFile("old.yaml", rt));
    expect(where(diagnostics)).toEqual(["old.yaml:1:1 UNKNOWN_GLOO_KIND"]);
    expect(diagnostics[0]!.severity).toBe("error");
    expect(diagnostics[0]!.message).toContain("did you mean apiVersion `networking.gloo.solo.io/v2`?");
    const retry = "apiVersion: resilience.policy.gloo.solo.io/v1\nkind: RetryTimeoutPolicy\nmetadata: {name: r, namespace: web}\nspec: {}\n";
    expect(load(withFile("r.yaml", retry)).diagnostics[0]!.message).toContain("`resilience.policy.gloo.solo.io/v2`");
  });

  it("a mistyped Gloo kind is an error with the nearest kinds, not the whole list", () => {
    const rt = "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTabel\nmetadata: {name: a, namespace: web}\nspec: {}\n";
    const { diagnostics } = load(withFile("typo.yaml", rt));
    expect(where(diagnostics)).toEqual(["typo.yaml:2:1 UNKNOWN_GLOO_KIND"]);
    expect(diagnostics[0]!.message).toContain("did you mean `RouteTable` (networking.gloo.solo.io/v2)?");
    expect(diagnostics[0]!.message.length).toBeLessThan(300);
  });

  it("a real Gloo kind gitmesh does not translate is an error, unless gitmesh.yaml ignoreKinds leaves it to another tool", () => {
    const ext = "apiVersion: security.policy.gloo.solo.io/v2\nkind: ClientTLSPolicy\nmetadata: {name: auth, namespace: web}\nspec: {}\n";
    const waf = "apiVersion: security.policy.gloo.solo.io/v2\nkind: WAFPolicy\nmetadata: {name: waf, namespace: web}\nspec: {}\n";
    const files = [...withFile("ext.yaml", ext), file("waf.yaml", waf)];
    const rejected = load(files).diagnostics;
    expect(where(rejected)).toEqual(["ext.yaml:2:1 UNTRANSLATED_GLOO_KIND", "waf.yaml:2:1 NEEDS_GLOO_DATA_PLANE"]);
    expect(rejected.every((d) => d.severity === "error")).toBe(true);
    expect(rejected[0]!.message).toContain("its policy would not be in force");
    expect(rejected[1]!.message).toContain("needs Gloo's own data plane");
    const settings = file("gitmesh.yaml", "ignoreKinds:\n  - ClientTLSPolicy\n  - security.policy.gloo.solo.io/v2/WAFPolicy\n");
    const { state, diagnostics } = load([...files, settings]);
    expect(where(diagnostics)).toEqual(["ext.yaml:2:1 IGNORED_KIND", "waf.yaml:2:1 IGNORED_KIND"]);
    expect(diagnostics.every((d) => d.severity === "info" && d.message.includes("ignored by configuration"))).toBe(true);
    // An incremental update of gitmesh.yaml alone re-judges the same objects.
    const back = updateDesiredState(state, [file("gitmesh.yaml", "ignoreKinds: [ClientTLSPolicy]\n")], []);
    expect(where(back.diagnostics)).toEqual(["ext.yaml:2:1 IGNORED_KIND", "waf.yaml:2:1 NEEDS_GLOO_DATA_PLANE"]);
  });

  it("a deprecated apiVersion of a kind (security.gloo.solo.io/v2 AccessPolicy) is read as the current one, with a warning at its line", () => {
    const ap = "# Gloo Mesh 2.0 preview group\napiVersion: security.gloo.solo.io/v2\nkind: AccessPolicy\nmetadata: {name: frontend, namespace: web}\nspec:\n  config:\n    authn: {tlsMode: STRICT}\n";
    const { state, diagnostics } = load(withFile("ap.yaml", ap));
    expect(where(diagnostics)).toEqual(["ap.yaml:2:1 DEPRECATED_API_VERSION"]);
    expect(diagnostics[0]!.message).toContain("read as `security.policy.gloo.solo.io/v2`");
    const obj = getObject(state, "AccessPolicy//web/frontend");
    expect(obj?.apiVersion).toBe("security.policy.gloo.solo.io/v2");
    // The schema of the current kind judges it: an old shape is an error like any other.
    const old = ap.replace("authn: {tlsMode: STRICT}", "allowedClients: {serviceAccountSelector: [{namespace: web}]}");
    expect(where(load(withFile("ap.yaml", old)).diagnostics)).toEqual(["ap.yaml:2:1 DEPRECATED_API_VERSION", "ap.yaml:7:5 SCHEMA_VIOLATION"]);
  });

  it("a kind that needs Gloo's data plane is still checked: an unknown spec field is a schema error with did-you-mean", () => {
    const waf = "apiVersion: security.policy.gloo.solo.io/v2\nkind: WAFPolicy\nmetadata: {name: waf, namespace: web}\nspec:\n  applyToRoute: [{route: {labels: {waf: 'true'}}}]\n  config: {disableCoreRuleSet: true}\n";
    const { diagnostics } = load(withFile("waf.yaml", waf));
    expect(where(diagnostics)).toEqual(["waf.yaml:2:1 NEEDS_GLOO_DATA_PLANE", "waf.yaml:5:3 SCHEMA_VIOLATION"]);
    expect(diagnostics[1]!.message).toContain("unknown field `applyToRoute`; did you mean `applyToRoutes`?");
    // Ignored by configuration, it is still checked: a typo there is still a mistake in the repository.
    const ignored = load([...withFile("waf.yaml", waf), file("gitmesh.yaml", "ignoreKinds: [WAFPolicy]\n")]).diagnostics;
    expect(where(ignored)).toEqual(["waf.yaml:2:1 IGNORED_KIND", "waf.yaml:5:3 SCHEMA_VIOLATION"]);
  });

  it("ignoreKinds with the wrong apiVersion does not ignore the kind", () => {
    const ext = "apiVersion: security.policy.gloo.solo.io/v2\nkind: ClientTLSPolicy\nmetadata: {name: auth, namespace: web}\nspec: {}\n";
    const settings = file("gitmesh.yaml", "ignoreKinds: [security.policy.gloo.solo.io/v1/ClientTLSPolicy]\n");
    expect(where(load([...withFile("ext.yaml", ext), settings]).diagnostics)).toEqual(["ext.yaml:2:1 UNTRANSLATED_GLOO_KIND"]);
  });

  it("reports a missing apiVersion or kind", () => {
    const { diagnostics } = load(withFile("x.yaml", "kind: RouteTable\nmetadata: {name: a, namespace: web}\n---\napiVersion: networking.gloo.solo.io/v2\nmetadata: {name: a}\n"));
    expect(where(diagnostics)).toEqual(["x.yaml:1:1 MISSING_API_VERSION", "x.yaml:4:1 MISSING_KIND"]);
  });

  it("reports a missing name or namespace and skips the object", () => {
    const noName = "apiVersion: networking.gloo.solo.io/v2\nkind: VirtualDestination\nmetadata:\n  namespace: web\nspec: {}\n";
    const noNs = "apiVersion: networking.gloo.solo.io/v2\nkind: VirtualDestination\nmetadata:\n  name: reviews\nspec: {}\n";
    const { state, diagnostics } = load(withFile("x.yaml", docs(noName, noNs)));
    expect(where(diagnostics)).toEqual(["x.yaml:3:1 MISSING_NAME", "x.yaml:9:1 MISSING_NAMESPACE"]);
    expect(objectsOfKind(state, "VirtualDestination")).toEqual([]);
  });

  it("reports a name that is not a string", () => {
    const text = "apiVersion: networking.gloo.solo.io/v2\nkind: VirtualDestination\nmetadata:\n  name: 123\n  namespace: web\nspec: {}\n";
    const { diagnostics } = load(withFile("x.yaml", text));
    expect(where(diagnostics)).toEqual(["x.yaml:4:3 INVALID_METADATA"]);
    expect(diagnostics[0]!.message).toContain('quote it (e.g. "123")');
  });

  it("reports labels that are not strings", () => {
    const text = "apiVersion: networking.gloo.solo.io/v2\nkind: VirtualDestination\nmetadata:\n  name: a\n  namespace: web\n  labels:\n    version: 2\nspec: {}\n";
    const { diagnostics } = load(withFile("x.yaml", text));
    expect(where(diagnostics)).toEqual(["x.yaml:7:5 INVALID_METADATA"]);
    expect(diagnostics[0]!.message).toContain('"2"');
  });

  it("does not put schema-invalid objects in force", () => {
    const { state, diagnostics } = load(withFile("x.yaml", yamlDoc("networking.gloo.solo.io/v2", "VirtualDestination", "bad", "web", { hosts: "not-a-list", ports: [] })));
    expect(codes(diagnostics).every((c) => c === ConfigCode.SCHEMA_VIOLATION)).toBe(true);
    expect(getObject(state, "VirtualDestination//web/bad")).toBeUndefined();
    expect(state.files["x.yaml"]!.invalid).toEqual([0]);
  });
});

describe("duplicates", () => {
  it("reports the second definition and points at the first", () => {
    const { state, diagnostics } = load([...baseRepo(), file("a.yaml", virtualDestination("reviews", "web")), file("b.yaml", `# comment\n${virtualDestination("reviews", "web")}`)]);
    expect(where(diagnostics)).toEqual(["b.yaml:2:1 DUPLICATE_OBJECT"]);
    expect(diagnostics[0]!.message).toContain("a.yaml:1:1");
    expect(getObject(state, "VirtualDestination//web/reviews")!.source.file).toBe("a.yaml");
  });

  it("treats the same name in different clusters as different objects", () => {
    const repo = [
      file("ws.yaml", docs(workspace("a", ["web"], "cluster1"), workspace("b", ["web"], "cluster2"))),
      file("vd.yaml", docs(...["cluster1", "cluster2"].map((c) => yamlDoc("networking.gloo.solo.io/v2", "VirtualDestination", "reviews", "web", { hosts: ["r.global"], ports: [{ number: 1 }] }, { annotations: { "cluster.solo.io/cluster": c } })))),
    ];
    const { state, diagnostics } = load(repo);
    expect(diagnostics).toEqual([]);
    expect(getObject(state, "VirtualDestination/cluster1/web/reviews")!.workspace).toBe("a");
    expect(getObject(state, "VirtualDestination/cluster2/web/reviews")!.workspace).toBe("b");
  });

  it("reports a second WorkspaceSettings for one workspace", () => {
    const { diagnostics } = load(withFile("workspaces/web/zz-more.yaml", workspaceSettings("web-extra", "web-gw")));
    expect(where(diagnostics)).toEqual(["workspaces/web/zz-more.yaml:1:1 DUPLICATE_WORKSPACE_SETTINGS"]);
    expect(diagnostics[0]!.message).toContain("workspaces/web/workspace.yaml");
  });

  it("allows the global WorkspaceSettings in the admin namespace next to a workspace's own", () => {
    const { diagnostics } = load(withFile("global.yaml", workspaceSettings("global", "gloo-mesh")));
    expect(diagnostics).toEqual([]);
  });
});

describe("references", () => {
  const rtWith = (spec: Record<string, unknown>) => routeTable("other", "web", { hosts: ["x.example.com"], http: [{ name: "r", directResponse: { status: 200 } }], ...spec });

  it("reports a RouteTable virtualGateway that does not exist, at the reference", () => {
    const text = rtWith({ virtualGateways: [{ name: "north", namespace: "web-gw" }, { name: "south" }] });
    const { diagnostics } = load(withFile("rt.yaml", text));
    const lines = text.split("\n");
    const line = lines.findIndex((l) => l.includes("name: south")) + 1;
    const column = lines[line - 1]!.indexOf("name: south") + 1;
    expect(where(diagnostics)).toEqual([`rt.yaml:${line}:${column} UNRESOLVED_REFERENCE`]);
    expect(diagnostics[0]!.path).toBe("/spec/virtualGateways/1/name");
    expect(diagnostics[0]!.message).toContain("VirtualGateway web/south");
  });

  it("reports a delegate that names a route table that does not exist, but not label selectors or wildcards", () => {
    const text = rtWith({
      http: [
        { name: "a", delegate: { routeTables: [{ name: "missing" }, { labels: { team: "x" } }, { name: "front*" }, { name: "frontend", namespace: "web" }] } },
      ],
    });
    const { diagnostics } = load(withFile("rt.yaml", text));
    expect(codes(diagnostics)).toEqual([ConfigCode.UNRESOLVED_REFERENCE]);
    expect(diagnostics[0]!.path).toBe("/spec/http/0/delegate/routeTables/0/name");
  });

  it("reports destinations of kind VIRTUAL_DESTINATION / EXTERNAL_SERVICE that do not exist", () => {
    const text = rtWith({
      http: [
        {
          name: "a",
          forwardTo: {
            destinations: [
              { ref: { name: "reviews" }, kind: "VIRTUAL_DESTINATION", port: { number: 9080 } },
              { ref: { name: "nope" }, kind: "VIRTUAL_DESTINATION", port: { number: 9080 } },
              { ref: { name: "api" }, kind: "EXTERNAL_SERVICE", port: { number: 443 } },
              { ref: { name: "some-service" }, port: { number: 80 } },
            ],
          },
        },
      ],
    });
    const { diagnostics } = load([...withFile("rt.yaml", text), file("vd.yaml", virtualDestination("reviews", "web"))]);
    expect(diagnostics.map((d) => d.path)).toEqual(["/spec/http/0/forwardTo/destinations/1/ref/name", "/spec/http/0/forwardTo/destinations/2/ref/name"]);
  });

  it("reports a policy's applyToDestinations name that does not exist", () => {
    const policy = yamlDoc("resilience.policy.gloo.solo.io/v2", "OutlierDetectionPolicy", "od", "web", {
      applyToDestinations: [
        { kind: "VIRTUAL_DESTINATION", selector: { name: "reviews", namespace: "web" } },
        { kind: "VIRTUAL_DESTINATION", selector: { name: "ratings" } },
        { kind: "EXTERNAL_SERVICE", selector: { labels: { a: "b" } } },
      ],
      config: { consecutiveErrors: 2 },
    });
    const { diagnostics } = load([...withFile("od.yaml", policy), file("vd.yaml", virtualDestination("reviews", "web"))]);
    expect(codes(diagnostics)).toEqual([ConfigCode.UNRESOLVED_REFERENCE]);
    expect(diagnostics[0]!.path).toBe("/spec/applyToDestinations/1/selector/name");
    expect(diagnostics[0]!.line).toBe(policy.split("\n").findIndex((l) => l.includes("name: ratings")) + 1);
  });

  it("reports a VirtualDestination's externalServices name that does not exist", () => {
    const vd = yamlDoc("networking.gloo.solo.io/v2", "VirtualDestination", "mixed", "web", {
      hosts: ["m.global"],
      externalServices: [{ name: "ext" }, { name: "gone" }],
      ports: [{ number: 443, protocol: "HTTPS" }],
    });
    const { diagnostics } = load([...withFile("vd.yaml", vd), file("es.yaml", externalService("ext", "web"))]);
    expect(diagnostics.map((d) => d.path)).toEqual(["/spec/externalServices/1/name"]);
  });
});

describe("workspace ownership", () => {
  it("reports an object in a namespace that no workspace owns", () => {
    const { state, diagnostics } = load(withFile("orphan.yaml", virtualDestination("reviews", "nobody")));
    expect(where(diagnostics)).toEqual(["orphan.yaml:5:3 NOT_OWNED"]);
    expect(getObject(state, "VirtualDestination//nobody/reviews")!.workspace).toBeUndefined();
  });

  it("asks for the cluster annotation when workspaces in different clusters own the namespace", () => {
    const repo = [file("ws.yaml", docs(workspace("a", ["shop"], "cluster1"), workspace("b", ["shop"], "cluster2"))), file("vd.yaml", virtualDestination("reviews", "shop"))];
    const { diagnostics } = load(repo);
    expect(codes(diagnostics)).toEqual([ConfigCode.AMBIGUOUS_OWNER]);
    expect(diagnostics[0]!.message).toContain("cluster.solo.io/cluster");
  });

  it("reports workspaces that both own a namespace in the same cluster", () => {
    const vd = yamlDoc("networking.gloo.solo.io/v2", "VirtualDestination", "r", "shop", { hosts: ["r.global"], ports: [{ number: 1 }] }, { annotations: { "cluster.solo.io/cluster": "cluster1" } });
    const { diagnostics } = load([file("ws.yaml", docs(workspace("a", ["shop"]), workspace("b", ["sh*"], "cluster1"))), file("vd.yaml", vd)]);
    expect(codes(diagnostics)).toEqual([ConfigCode.OVERLAPPING_WORKSPACES]);
  });

  it("follows namespace globs and KubernetesCluster label selectors", () => {
    const ws = yamlDoc("admin.gloo.solo.io/v2", "Workspace", "prod", "gloo-mesh", {
      workloadClusters: [{ selector: { env: "prod" }, namespaces: [{ name: "team-*" }] }],
    });
    const annotated = (c: string) =>
      yamlDoc("networking.gloo.solo.io/v2", "VirtualDestination", "r", "team-a", { hosts: ["r.global"], ports: [{ number: 1 }] }, { annotations: { "cluster.solo.io/cluster": c } });
    const repo = [file("ws.yaml", docs(ws, kubernetesCluster("east", { env: "prod" }), kubernetesCluster("dev", { env: "dev" }))), file("a.yaml", annotated("east")), file("b.yaml", annotated("dev"))];
    const { state, diagnostics } = load(repo);
    expect(getObject(state, "VirtualDestination/east/team-a/r")!.workspace).toBe("prod");
    expect(where(diagnostics)).toEqual(["b.yaml:5:3 NOT_OWNED"]);
  });

  it("requires admin kinds to live in the admin namespace, which gitmesh.yaml can change", () => {
    const misplaced = yamlDoc("admin.gloo.solo.io/v2", "KubernetesCluster", "c9", "web", {});
    expect(where(load(withFile("c.yaml", misplaced)).diagnostics)).toEqual(["c.yaml:5:3 ADMIN_NAMESPACE_REQUIRED"]);
    const repo = [
      file("gitmesh.yaml", "adminNamespace: mesh-admin\n"),
      file("ws.yaml", workspace("web", ["web"]).replace("gloo-mesh", "mesh-admin")),
      file("rp.yaml", retryPolicy("p", "web")),
    ];
    const { state, diagnostics } = load(repo);
    expect(diagnostics).toEqual([]);
    expect(state.settings.adminNamespace).toBe("mesh-admin");
    expect(getObject(state, "RetryTimeoutPolicy//web/p")!.workspace).toBe("web");
  });
});

describe("gitmesh.yaml", () => {
  it("ignores paths by glob, segment and folder rules", () => {
    const settings = "ignore:\n  - rendered/\n  - '*.draft.yaml'\n  - docs/**/examples/*.yaml\n";
    const bad = "this: is: not: yaml\n";
    const repo = [
      ...baseRepo(),
      file("gitmesh.yaml", settings),
      file("rendered/cluster1/vs.yaml", bad),
      file("workspaces/web/new.draft.yaml", bad),
      file("docs/a/b/examples/x.yaml", bad),
      file("docs/a/b/keep.yaml", virtualDestination("kept", "web")),
      file(".github/workflows/ci.yml", bad),
      file("node_modules/pkg/x.yaml", bad),
    ];
    const { state, diagnostics } = load(repo);
    expect(diagnostics).toEqual([]);
    expect(state.ignored).toEqual([".github/workflows/ci.yml", "docs/a/b/examples/x.yaml", "node_modules/pkg/x.yaml", "rendered/cluster1/vs.yaml", "workspaces/web/new.draft.yaml"]);
    expect(getObject(state, "VirtualDestination//web/kept")).toBeDefined();
    expect(state.settings.auditBranch).toBe("gitmesh/rendered");
  });

  it("reports malformed settings and falls back to defaults", () => {
    const { state, diagnostics } = load([...baseRepo(), file("gitmesh.yaml", "ignore: rendered/\nadminNamespace: Not_Valid\nauditBranch: audit/out\ncolour: blue\n")]);
    expect(where(diagnostics)).toEqual(["gitmesh.yaml:1:1 SETTINGS_INVALID", "gitmesh.yaml:2:1 SETTINGS_INVALID", "gitmesh.yaml:4:1 SETTINGS_INVALID"]);
    expect(state.settings).toEqual({ ignore: [], adminNamespace: "gloo-mesh", auditBranch: "audit/out", ignoreKinds: [], ignoreDifferences: [], allowMassDeletion: [] });
  });
});
