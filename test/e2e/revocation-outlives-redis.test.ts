// Issue #40 item 2, through the real processes: a `gitmesh server` process with --pki-dir (the demo's
// setup) — and again with the relay PKI in Kubernetes Secrets of a real API server (--kubeconfig) — and
// a real redis-server. An agent registers with the project's relay client, its certificate
// is revoked (re-issue by the admin API), then Redis forgets everything — FLUSHALL, then a restart of
// redis-server (no persistence: it comes back empty) — and the server process is restarted. The revoked
// certificate attacks (Renew over mTLS, the call that would mint a fresh certificate from it): refused
// as revoked, logged by the server and counted; the cluster holds no live identity; nothing was issued.
import { spawn, type ChildProcess } from "node:child_process";
import { cp, mkdtemp, readFile, rm } from "node:fs/promises";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { runGit } from "../../src/devtools/index.js";
import { createRelayClient, generateKeyPem } from "../../src/relay/index.js";
import { freePort } from "../helpers/ports.js";
import { startRealKube, type RealKube } from "../helpers/real-kube.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

for (const mode of ["pki-dir", "kubernetes-secrets"] as const) {
  let dir: string;
  let kube: RealKube | undefined;
  let redis: TestRedis;
  let server: ChildProcess | undefined;
  let out = "";
  let relayPort: number;
  let httpPort: number;
  const base = () => `http://127.0.0.1:${String(httpPort)}`;

  async function startServer(): Promise<void> {
    out = "";
    server = spawn(
      process.execPath,
      [
        "bin/gitmesh.js", "server", "--git-local", join(dir, "repo"), "--no-audit", "--data-dir", join(dir, "data"),
        ...(kube ? ["--kubeconfig", kube.kubeconfigPath, "--namespace", "gitmesh"] : ["--pki-dir", join(dir, "pki")]),
        "--redis-url", redis.url,
        "--relay-host", "127.0.0.1", "--relay-port", String(relayPort), "--additional-sans", "127.0.0.1",
        "--http-host", "127.0.0.1", "--http-port", String(httpPort), "--warming-window", "0", "--log-format", "json",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    server.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    server.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const deadline = Date.now() + 90_000;
    for (;;) {
      const ok = await fetch(`${base()}/readyz`, { headers: { connection: "close" } }).then((r) => r.status === 200, () => false);
      if (ok) return;
      if (Date.now() > deadline || server.exitCode !== null) throw new Error(`server did not become ready:\n${out.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async function stopServer(): Promise<void> {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once("exit", r));
      server.kill("SIGTERM");
      await exited;
    }
    server = undefined;
  }

  /** One Redis command over RESP (FLUSHALL, HLEN, …). */
  function redisCommand(...args: string[]): Promise<string> {
    return new Promise((resolve, reject) => {
      const s = createConnection({ host: redis.host, port: redis.port }, () => s.write(`*${String(args.length)}\r\n${args.map((a) => `$${String(Buffer.byteLength(a))}\r\n${a}\r\n`).join("")}`));
      s.once("data", (d) => (resolve(d.toString()), s.end()));
      s.once("error", reject);
    });
  }

  async function secretValue(name: string, key: string): Promise<string | undefined> {
    const r = await kube!.request("GET", `/api/v1/namespaces/gitmesh/secrets/${name}`);
    if (r.status === 404) return undefined;
    const v = (r.body as { data?: Record<string, string> }).data?.[key];
    return v === undefined ? undefined : Buffer.from(v, "base64").toString("utf8");
  }
  const admin = async () => (kube ? (await secretValue("gitmesh-api-tokens", "admin"))! : await readFile(join(dir, "pki", "api-token-admin"), "utf8")).trim();
  const rootCa = async () => (kube ? (await secretValue("relay-root-tls-secret", "ca.crt"))! : await readFile(join(dir, "pki", "root-ca.crt"), "utf8"));
  /** The revocation as kept beside the PKI: the --pki-dir file, or the cluster's identity Secret. */
  async function keptRevocation(cluster: string): Promise<{ revokedBeforeMs?: number } | undefined> {
    const text = kube ? await secretValue(`relay-identity-${cluster}`, "record") : await readFile(join(dir, "pki", "revocations", `${cluster}.json`), "utf8").catch(() => undefined);
    return text === undefined ? undefined : (JSON.parse(text) as { revokedBeforeMs?: number });
  }
  async function reissue(cluster: string): Promise<string> {
    const res = await fetch(`${base()}/api/clusters/${cluster}/reissue`, { method: "POST", headers: { connection: "close", authorization: `Bearer ${await admin()}` } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { credential: string }).credential;
  }
  async function metric(name: string, labels: string): Promise<number> {
    const text = await (await fetch(`${base()}/metrics`, { headers: { connection: "close" } })).text();
    const m = new RegExp(`^${name}\\{${labels}\\} (\\d+)`, "m").exec(text);
    return m ? Number(m[1]) : 0;
  }
  const logLines = () => out.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as Record<string, unknown>);

  describe(`a revoked cluster certificate stays revoked when Redis forgets (server with the PKI in ${mode} + Redis)`, () => {
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "gitmesh-revocation-e2e-"));
      if (mode === "kubernetes-secrets") {
        kube = await startRealKube({ istioCrds: false });
        await kube.apply([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }]);
      }
      redis = await startRedis({ outages: true });
      const repo = join(dir, "repo");
      await cp("examples/repo-layout", repo, { recursive: true });
      await runGit(["init", "--quiet", "-b", "main"], {}, repo);
      await runGit(["add", "-A"], {}, repo);
      await runGit(["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", "config"], {}, repo);
      relayPort = await freePort();
      httpPort = await freePort();
      await startServer();
    }, 240_000);

    afterAll(async () => {
      await stopServer();
      await redis.stop();
      await kube?.stop();
      await rm(dir, { recursive: true, force: true });
    }, 60_000);

    it("revoke, FLUSHALL, restart Redis and the server, attack with the revoked certificate: refused, logged, counted", async () => {
      const rootCaPem = await rootCa();
      const agentClient = createRelayClient({ address: `127.0.0.1:${String(relayPort)}`, cluster: "cluster1", rootCaPem, authority: "gitmesh-server.gitmesh", token: await reissue("cluster1"), keyPem: generateKeyPem(), logger: createMemoryLogger("agent").logger });
      const stolen = await agentClient.register();
      await agentClient.close();
      // the certificate works: Renew over mTLS with it is answered
      const before = createRelayClient({ address: `127.0.0.1:${String(relayPort)}`, cluster: "cluster1", rootCaPem, authority: "gitmesh-server.gitmesh", credentials: stolen, logger: createMemoryLogger("a").logger });
      await expect(before.renew()).resolves.toMatchObject({ certPem: expect.stringContaining("BEGIN CERTIFICATE") as string });
      await before.close();

      // The operator revokes (re-issue: the certificates issued so far are revoked).
      await reissue("cluster1");
      const kept = await keptRevocation("cluster1");
      expect(kept?.revokedBeforeMs).toEqual(expect.any(Number));

      // Redis forgets: FLUSHALL, then a restart (no persistence: empty); the server restarts too.
      // identity records: in Redis with --pki-dir (the floor also in the directory), in Secrets with Kubernetes
      expect(await redisCommand("HLEN", "gitmesh:relay:identities")).toBe(mode === "pki-dir" ? ":1\r\n" : ":0\r\n");
      expect(await redisCommand("FLUSHALL")).toBe("+OK\r\n");
      await stopServer();
      await redis.stop();
      await redis.start();
      expect(await redisCommand("DBSIZE")).toBe(":0\r\n");
      await startServer();

      // The attack with the revoked certificate.
      const attacker = createRelayClient({ address: `127.0.0.1:${String(relayPort)}`, cluster: "cluster1", rootCaPem, authority: "gitmesh-server.gitmesh", credentials: stolen, logger: createMemoryLogger("attacker").logger });
      const refused = await attacker.renew().then(() => undefined, (err: unknown) => err as Error & { code?: number; details?: string });
      await attacker.close();
      expect(refused, "the revoked certificate was accepted").toBeDefined();
      expect(refused!.message).toMatch(/client certificate of cluster "cluster1" was revoked/);
      expect(refused!.message).toContain("gitmesh cluster reissue cluster1");
      // logged and counted by the restarted server
      expect(logLines().some((l) => l.msg === "relay rejected a request" && l.reason === "certificate_revoked" && l.cluster === "cluster1")).toBe(true);
      expect(await metric("gitmesh_relay_rejections_total", 'reason="certificate_revoked"')).toBeGreaterThanOrEqual(1);
      expect(await metric("gitmesh_relay_certificates_issued_total", 'kind="renew"')).toBe(0);
      // the revoked certificate did not become the cluster's live identity
      const view = (await (await fetch(`${base()}/api/clusters/cluster1`, { headers: { connection: "close", authorization: `Bearer ${await admin()}` } })).json()) as { cutOff?: string | null };
      expect(view.cutOff ?? "").toMatch(/revoked/);
    }, 240_000);

    it("an API suspension outlives Redis too: suspend, FLUSHALL, restart Redis and the server: the cluster is still held", async () => {
      const headers = { connection: "close", authorization: `Bearer ${await admin()}` };
      const res = await fetch(`${base()}/api/clusters/cluster2/suspend`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify({ reason: "incident 42" }) });
      expect(res.status).toBe(200);
      // kept beside the PKI: the --pki-dir file, or the Secret gitmesh-suspensions
      const kept = kube ? await secretValue("gitmesh-suspensions", "record") : await readFile(join(dir, "pki", "suspensions", "suspensions.json"), "utf8");
      expect(kept).toContain("incident 42");

      expect(await redisCommand("FLUSHALL")).toBe("+OK\r\n");
      await stopServer();
      await redis.stop();
      await redis.start();
      await startServer();

      const view = (await (await fetch(`${base()}/api/clusters/cluster2`, { headers })).json()) as { suspended?: { summary?: string } | null };
      expect(view.suspended?.summary ?? "", "the suspension was forgotten with Redis").toMatch(/suspended since .* by .*\(incident 42\)/);
      // and resumed through the API, it stays resumed after another flush
      expect((await fetch(`${base()}/api/clusters/cluster2/resume`, { method: "POST", headers })).status).toBe(200);
      expect(await redisCommand("FLUSHALL")).toBe("+OK\r\n");
      await stopServer();
      await startServer();
      const after = (await (await fetch(`${base()}/api/clusters/cluster2`, { headers })).json()) as { suspended?: unknown };
      expect(after.suspended).toBeNull();
    }, 240_000);
  });
}
