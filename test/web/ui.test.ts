// The web UI in real Chromium (Debian's chromium driven by playwright-core) against `gitmesh demo`:
// a real server, Git server and agents on emulated clusters. What an operator does: sign in, see the
// fleet, push a commit and watch it reach each cluster without reloading, see a rejected commit's
// file:line, follow a VirtualService back to its RouteTable file. Screenshots of the main pages go to
// .tmp/screenshots (and to docs/screenshots with UPDATE_SCREENSHOTS=1, for the README).
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDemo, type Demo } from "../helpers/demo.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const SHOTS = [".tmp/screenshots", ...(process.env.UPDATE_SCREENSHOTS === "1" ? ["docs/screenshots"] : [])];
const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.test", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.test" };

describe("web UI (Chromium)", () => {
  let demo: Demo;
  let browser: Browser;
  let url: string;
  let token: string;
  let work: string;

  const shot = async (page: Page, name: string) => {
    for (const dir of SHOTS) {
      mkdirSync(dir, { recursive: true });
      await page.screenshot({ path: join(dir, `${name}.png`) });
    }
  };
  const signIn = async (page: Page) => {
    await page.goto(url);
    await page.getByLabel("API token").fill(token);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("clusters").waitFor();
  };
  const push = (files: Record<string, string>, message: string): string => {
    for (const [f, text] of Object.entries(files)) writeFileSync(join(work, f), text);
    execFileSync("sh", ["-ec", `git add -A && git commit -qm "${message}" && git push -q origin HEAD:main`], { cwd: work, env: GIT_ENV, stdio: "pipe" });
    return execFileSync("git", ["-C", work, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
  };

  beforeAll(async () => {
    // The server serves the built UI (test/global-setup.ts builds it once per run when stale).
    demo = startDemo([]);
    const m = await demo.waitFor(/Web UI: (http:\/\/127\.0\.0\.1:\d+)\/ — sign in with the token in (\S+?);/, 60_000);
    url = `${m[1]!}/`;
    token = readFileSync(m[2]!, "utf8").trim();
    await demo.waitFor(/Running; Ctrl-C to stop\./, 150_000);
    work = (await demo.waitFor(/Push a change and watch it converge \(in another terminal\):\n {2}cd (\S+)\n/, 1000))[1]!;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-background-networking"] });
  }, 240_000);

  afterAll(async () => {
    await (browser as Browser | undefined)?.close();
    const d = demo as Demo | undefined;
    if (d) {
      d.interrupt();
      await d.exited;
    }
  });

  it("an unauthenticated visit gets the login page; a wrong token is refused with what to use instead", async () => {
    const page = await browser.newPage();
    await page.goto(url);
    await expect.poll(() => page.getByLabel("API token").isVisible()).toBe(true);
    await shot(page, "login");
    await page.getByLabel("API token").fill("not-the-token");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("This token was refused");
    // The API under the page refuses the same visitor.
    expect((await page.request.get(`${url}api/status`)).status()).toBe(401);
    await page.close();
  });

  it("the overview lists every cluster, in sync, with the commit in force", async () => {
    const page = await browser.newPage();
    await signIn(page);
    for (const cluster of ["cluster1", "cluster2"]) {
      await expect.poll(() => page.locator(`tr[data-cluster="${cluster}"]`).getAttribute("data-in-sync"), { timeout: 30_000 }).toBe("true");
    }
    expect(await page.getByTestId("commit-in-force").textContent()).toMatch(/[0-9a-f]{12}/);
    await shot(page, "overview");
    await page.close();
  });

  it("a pushed commit appears and each cluster turns applied without a reload; a rejected commit shows its file:line", async () => {
    const page = await browser.newPage();
    await signIn(page);
    await page.getByRole("link", { name: "Commits" }).click();
    await page.getByTestId("commits").waitFor();
    const file = "workspaces/gateways/retry-timeout-httpbin.yaml";
    const before = readFileSync(join(work, file), "utf8");
    const n = Number(/requestTimeout: (\d+)s/.exec(before)![1]);
    const sha = push({ [file]: before.replace(/requestTimeout: \d+s/, `requestTimeout: ${String(n + 3)}s`) }, "longer httpbin timeout");
    const row = page.locator(`tr[data-commit="${sha}"]`);
    for (const cluster of ["cluster1", "cluster2"]) {
      await expect.poll(() => row.locator(`td[data-cluster="${cluster}"]`).getAttribute("data-state"), { timeout: 60_000 }).toBe("in-sync");
    }
    await shot(page, "commits");
    // The rendered change of that commit: the VirtualService with the new timeout, in each cluster that runs it.
    await row.getByRole("link", { name: "rendered diff" }).click();
    const diff = page.getByTestId("diff");
    await expect.poll(() => diff.textContent(), { timeout: 60_000 }).toContain(`timeout: ${String(n + 3)}s`);
    expect(await diff.textContent()).toMatch(/changed VirtualService/);
    await shot(page, "diff");
    // A commit the repository does not have: the server's own message, not "[object Object]".
    await page.evaluate(`location.hash = ${JSON.stringify(`#/diff?base=${sha}&head=${"f".repeat(40)}`)}`);
    await expect.poll(() => page.locator("p.error").textContent(), { timeout: 30_000 }).toBe(`commit ${"f".repeat(40)} is not in the configuration repository`);

    const bad = push({ "workspaces/broken.yaml": "apiVersion: networking.gloo.solo.io/v2\nkind: RouteTable\nmetadata:\n  name: broken\n  namespace: bookinfo\nspec:\n  hosts: [broken.example.com]\n  http:\n  - name: r\n    forwardTo: {destinations: [{ref: {name: x}, port: {numbr: 80}}]}\n" }, "broken");
    await page.getByRole("link", { name: "Fleet" }).click();
    const rejected = page.getByTestId("rejected");
    await expect.poll(() => rejected.textContent(), { timeout: 60_000 }).toContain(bad.slice(0, 12));
    expect(await rejected.textContent()).toMatch(/workspaces\/broken\.yaml:10:\d+/);
    await shot(page, "rejected");
    await page.getByRole("link", { name: "Diagnostics" }).click();
    await expect.poll(() => page.locator('section[data-file="workspaces/broken.yaml"]').textContent()).toContain("workspaces/broken.yaml:10");
    // Its rendered diff says what will happen: rejected, the clusters keep the last good commit, nothing changes.
    await page.evaluate(`location.hash = ${JSON.stringify(`#/diff?base=${sha}&head=${bad}`)}`);
    const verdict = page.getByTestId("would-be-rejected");
    await expect.poll(() => verdict.textContent(), { timeout: 60_000 }).toContain(`${bad.slice(0, 12)} would be rejected: the clusters keep ${sha.slice(0, 12)}; nothing would change`);
    expect(await verdict.textContent()).toContain("workspaces/broken.yaml:10");
    expect(await page.getByTestId("diff").locator("section[data-cluster]").count()).toBe(0);
    // The fix: the rejection goes away by itself.
    execFileSync("sh", ["-ec", "git rm -q workspaces/broken.yaml && git commit -qm fix && git push -q origin HEAD:main"], { cwd: work, env: GIT_ENV, stdio: "pipe" });
    await page.getByRole("link", { name: "Fleet" }).click();
    await expect.poll(() => page.getByTestId("rejected").count(), { timeout: 60_000 }).toBe(0);
    await page.close();
  });

  it("the cluster page shows drift the agent repaired: who changed which object", async () => {
    const kubeconfig = /kubectl --kubeconfig (\S+cluster1\.kubeconfig)/.exec(demo.output())![1]!;
    const kubectl = (...args: string[]) => execFileSync("kubectl", ["--kubeconfig", kubeconfig, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const [ns, name] = kubectl("get", "virtualservices", "-A", "-o", "jsonpath={.items[0].metadata.namespace} {.items[0].metadata.name}").trim().split(" ") as [string, string];
    kubectl("-n", ns, "patch", "virtualservice", name, "--type", "merge", "-p", '{"spec":{"hosts":["drifted.example.com"]}}');
    const page = await browser.newPage();
    await signIn(page);
    await page.locator('tr[data-cluster="cluster1"] a').click();
    const drift = page.getByTestId("drift");
    await expect.poll(() => drift.textContent().catch(() => ""), { timeout: 60_000 }).toContain(`VirtualService/${ns}/${name}`);
    expect(await drift.textContent()).toContain("changed");
    expect(await drift.textContent()).toMatch(/by kubectl/);
    // Put back: the cluster runs the rendered hosts again.
    await expect.poll(() => kubectl("-n", ns, "get", "virtualservice", name, "-o", "jsonpath={.spec.hosts}")).not.toContain("drifted.example.com");
    await page.close();
  });

  it("provenance: a VirtualService names its RouteTable and the file:line it came from, and back", async () => {
    const page = await browser.newPage();
    await signIn(page);
    await page.locator('tr[data-cluster="cluster1"] a').click();
    await page.getByTestId("cluster-status").waitFor();
    await shot(page, "cluster");
    const item = page.locator("li", { has: page.locator("summary", { hasText: "from RouteTable" }) }).first();
    await item.getByRole("link", { name: "provenance" }).click();
    const provenance = page.getByTestId("provenance");
    await expect.poll(() => provenance.textContent()).toMatch(/Rendered from RouteTable \S+ in workspaces\/\S+\.yaml:\d+, workspace/);
    await shot(page, "provenance");
    await provenance.getByRole("link", { name: /Everything RouteTable/ }).click();
    await expect.poll(() => page.getByTestId("provenance").textContent()).toMatch(/cluster1: VirtualService/);
    await page.close();
  });
});
