/** `gitmesh render` through main() with a capturing IO. */
import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { createCapturingIo } from "../../src/cli/io.js";
import { main } from "../../src/cli/main.js";
import { validateIstioResource, type IstioResource } from "../../src/translate/index.js";

const root = new URL("../../", import.meta.url).pathname;
const repo = join(root, "examples/repo-layout");
const discovery = join(root, "examples/discovery");
const temps: string[] = [];

async function temp(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "gitmesh-render-"));
  temps.push(d);
  return d;
}

afterAll(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else out.push(p);
  }
  return out.sort();
}

describe("gitmesh render", () => {
  it("prints a valid multi-document stream for the examples and exits 0", async () => {
    const io = createCapturingIo();
    const code = await main(["render", repo, "--discovery", discovery], io);
    expect(io.stderr()).toMatch(/^ok: \d+ resources, 0 errors/m);
    expect(code).toBe(0);
    const docs = parseAllDocuments(io.stdout()).map((d) => d.toJS() as IstioResource);
    expect(docs.length).toBeGreaterThan(0);
    for (const d of docs) expect(validateIstioResource(d)).toEqual([]);
    expect(docs.some((d) => d.kind === "VirtualService")).toBe(true);
    expect(docs.some((d) => d.kind === "Gateway")).toBe(true);
    expect(io.stdout()).toContain("# clusters/cluster1/");
  });

  it("writes the audit layout with --out, only the selected --cluster, and replaces stale files", async () => {
    const out = await temp();
    await mkdir(join(out, "clusters/cluster1/stale/virtualservice"), { recursive: true });
    await writeFile(join(out, "clusters/cluster1/stale/virtualservice/old.yaml"), "stale");
    const io = createCapturingIo();
    const code = await main(["render", repo, "--discovery", discovery, "--cluster", "cluster1", "--out", out], io);
    expect(code).toBe(0);
    const files = (await walk(out)).map((p) => p.slice(out.length + 1));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(f).toMatch(/^clusters\/cluster1\/[^/]+\/[a-z]+\/[^/]+\.yaml$/);
    expect(files).not.toContain("clusters/cluster1/stale/virtualservice/old.yaml");
    const first = parseAllDocuments(await readFile(join(out, files[0]!), "utf8"))[0]!.toJS() as IstioResource;
    expect(first.metadata.labels["gitmesh.io/cluster"]).toBe("cluster1");
    expect(io.stdout()).toMatch(/rendered \d+ resources? for 1 cluster/);
  });

  it("reports translation errors with file:line on stderr and exits 1", async () => {
    const dir = await temp();
    await writeFile(
      join(dir, "config.yaml"),
      `apiVersion: admin.gloo.solo.io/v2
kind: Workspace
metadata: {name: web, namespace: gloo-mesh}
spec:
  workloadClusters: [{name: '*', namespaces: [{name: web}]}]
---
apiVersion: networking.gloo.solo.io/v2
kind: RouteTable
metadata: {name: broken, namespace: web}
spec:
  hosts: [web.example.com]
  http:
  - name: nowhere
    forwardTo: {destinations: [{ref: {name: missing}, port: {number: 80}}]}
`,
    );
    const disc = await temp();
    await mkdir(join(disc, "c1"));
    await writeFile(join(disc, "c1", "ns.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n");
    const io = createCapturingIo();
    const code = await main(["render", dir, "--discovery", disc], io);
    expect(code).toBe(1);
    expect(io.stderr()).toContain(`${join(dir, "config.yaml")}:14:`);
    expect(io.stderr()).toContain("error DESTINATION_NOT_FOUND");
    expect(io.stderr()).toContain("error ROUTE_REPLACEMENT");
    expect(io.stdout()).toContain("status: 500");
  });

  it("usage errors exit 2", async () => {
    const io = createCapturingIo();
    expect(await main(["render", repo], io)).toBe(2);
    expect(io.stderr()).toContain("--discovery <dir> is required");
    const io2 = createCapturingIo();
    expect(await main(["render", repo, "--discovery", discovery, "--cluster", "nope"], io2)).toBe(2);
    expect(io2.stderr()).toContain('unknown cluster "nope"');
    const io3 = createCapturingIo();
    expect(await main(["render", join(root, "does-not-exist"), "--discovery", discovery], io3)).toBe(2);
  });
});
