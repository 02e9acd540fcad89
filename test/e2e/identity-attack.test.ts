// Issue #11, "Done when": a third party that is NOT the project's relay client — a raw gRPC client built
// here from proto/gitmesh/relay/v1/relay.proto with @grpc/proto-loader, over real TLS on loopback —
// attacks the real management server (startServerProcess: Redis, Git, relay, HTTP) while the genuine
// agents of cluster1 and cluster2 (the real agent code against Kubernetes API emulators) are connected.
// Run once with per-cluster credentials (the default) and once with the fleet-token opt-in.
//
// Each attack must be refused with a clear status, logged and counted, while the genuine agents stay
// connected, nothing is pruned in any cluster and no output or certificate reaches the attacker. Then the
// operator flows: re-issue (the agent picks up the new credential without a restart) and a cluster
// removed from Git by mistake, restored, recovering on its own.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir, hostname } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import type { Agent } from "../../src/agent/index.js";
import { createInProcessAgent } from "../../src/devtools/index.js";
import { createCsr, createSelfSignedCa, generateKeyPem, signClientCertificate } from "../../src/relay/index.js";
import { parseServerConfig } from "../../src/server/index.js";
import { startServerProcess, type RunningServer } from "../../src/cli/server.js";
import { startGitServer, type GitServer } from "../helpers/git-server.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { freePort } from "../helpers/ports.js";
import { repoFiles } from "../helpers/repo-files.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

const CLUSTERS = ["cluster1", "cluster2"] as const;
const b64 = (s: string) => Buffer.from(s).toString("base64");

// ---- the attacker's own client, from the .proto ----------------------------------------------------
type Unary = (req: Record<string, unknown>, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: Record<string, unknown>) => void) => void;
interface RawClient extends grpc.Client {
  Register?: Unary;
  SignIntermediate?: Unary;
  Renew?: Unary;
  PullOutput?: () => grpc.ClientDuplexStream<Record<string, unknown>, Record<string, unknown>>;
}
const definition = protoLoader.loadSync("proto/gitmesh/relay/v1/relay.proto", { keepCase: false, longs: Number, defaults: true });
const relayPackage = (grpc.loadPackageDefinition(definition) as unknown as { gitmesh: { relay: { v1: Record<string, grpc.ServiceClientConstructor> } } }).gitmesh.relay.v1;
const channelOptions = { "grpc.ssl_target_name_override": "gitmesh-server.gitmesh", "grpc.default_authority": "gitmesh-server.gitmesh" };

function attacker(service: "Registration" | "Relay", address: string, creds: grpc.ChannelCredentials): RawClient {
  return new relayPackage[service]!(address, creds, channelOptions);
}
function callUnary(fn: Unary | undefined, client: grpc.Client, req: Record<string, unknown>): Promise<{ err: grpc.ServiceError | null; res?: Record<string, unknown> }> {
  return new Promise((resolve) => fn!.call(client, req, new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (err, res) => resolve({ err, ...(res ? { res } : {}) })));
}

async function poll<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface ClusterView {
  name: string;
  connected: boolean;
  inSync: boolean;
  cutOff: string | null;
  output: { resources: number; version: number } | null;
  applied: { version: number } | null;
}

for (const mode of ["per-cluster", "fleet-token"] as const) {
  describe(`a third party with a raw gRPC client (bootstrap ${mode})`, () => {
    let redis: TestRedis;
    let git: GitServer;
    let server: RunningServer;
    let tmp: string;
    let base: string;
    let address: string;
    let rootCaPem: string;
    const mem = createMemoryLogger("server");
    const kubes = new Map<string, StartedKube>();
    const agents = new Map<string, Agent>();
    /** The bootstrap credential each cluster was given (per-cluster: consumed by its agent; fleet: the shared token). */
    const given = new Map<string, string>();
    const deletions: string[] = [];

    const status = async () => (await server.server.api.status()) as { clusters: ClusterView[] };
    const view = async (c: string) => (await status()).clusters.find((x) => x.name === c);
    const metric = async (name: string, labels: string) => {
      // a fresh connection each time (a kept-alive socket the server closed meanwhile answers ECONNRESET)
      const text = await (await fetch(`${base}/metrics`, { headers: { connection: "close" } })).text();
      const m = new RegExp(`^${name}\\{${labels}\\} (\\d+)`, "m").exec(text);
      return m ? Number(m[1]) : 0;
    };
    const rejections = (reason: string) => mem.records.filter((r) => r.msg === "relay rejected a request" && r.fields.reason === reason);
    const synced = (c: string) => async () => {
      const v = await view(c);
      return v?.connected && v.inSync && (v.output?.resources ?? 0) > 0 ? v : undefined;
    };
    const setCredential = (cluster: string, value: string) =>
      kubes.get(cluster)!.emulator.seed([{ apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: "gitmesh" }, data: { token: b64(value) } }]);

    beforeAll(async () => {
      tmp = mkdtempSync(join(tmpdir(), "gitmesh-attack-"));
      redis = await startRedis();
      git = await startGitServer();
      await git.createRepo("mesh");
      const repo = repoFiles("examples/repo-layout");
      delete repo["clusters/root-trust-policy.yaml"];
      await git.commitFiles("mesh", repo, "bookinfo on two clusters");
      const relayPort = await freePort();
      const httpPort = await freePort();
      const { config, problems } = parseServerConfig(
        {
          gitUrl: git.url("mesh"),
          redisUrl: redis.url,
          redisPrefix: `attack-${mode}`,
          relayHost: "127.0.0.1",
          relayPort: String(relayPort),
          httpHost: "127.0.0.1",
          httpPort: String(httpPort),
          pollIntervalSeconds: "1",
          warmingWindowSeconds: "30",
          relayAdditionalSans: "127.0.0.1",
          dataDir: join(tmp, "data"),
          auditBranch: "",
          bootstrap: mode,
        },
        { identity: hostname() },
      );
      expect(problems).toEqual([]);
      server = await startServerProcess(config!, mem.logger);
      base = `http://127.0.0.1:${String(httpPort)}`;
      address = `127.0.0.1:${String(relayPort)}`;
      rootCaPem = server.server.rootCaPem!;
      for (const cluster of CLUSTERS) {
        const kube = await startKube({});
        const dir = join("examples/discovery", cluster);
        for (const f of readdirSync(dir).filter((n) => n.endsWith(".yaml"))) await kube.emulator.seedFile(join(dir, f));
        const credential = mode === "fleet-token" ? server.server.token! : (await server.server.mintCredential(cluster)).credential;
        given.set(cluster, credential);
        kube.emulator.seed([
          { apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } },
          { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-root-tls-secret", namespace: "gitmesh" }, data: { "ca.crt": b64(rootCaPem) } },
          // as a token file written by hand: a trailing newline, which the agent must ignore
          { apiVersion: "v1", kind: "Secret", metadata: { name: "relay-identity-token-secret", namespace: "gitmesh" }, data: { token: b64(`${credential}\n`) } },
        ]);
        kube.emulator.onChange((e) => {
          const md = e.object.metadata as { name: string; namespace?: string; labels?: Record<string, string> };
          if (e.type === "DELETED" && md.labels?.["gitmesh.io/managed"] === "true") deletions.push(`${cluster}/${String(e.object.kind)}/${md.namespace ?? ""}/${md.name}`);
        });
        kubes.set(cluster, kube);
        const agent = createInProcessAgent({ cluster, emulator: kube.emulator, relayAddress: address, logger: createMemoryLogger(`agent-${cluster}`).logger });
        await agent.start();
        agents.set(cluster, agent);
      }
      for (const c of CLUSTERS) await poll(`${c} connected and in sync`, synced(c), 120_000);
    }, 180_000);

    afterAll(async () => {
      for (const a of agents.values()) await a.stop();
      await server.stop();
      for (const k of kubes.values()) await k.stop();
      await git.stop();
      await redis.stop();
      rmSync(tmp, { recursive: true, force: true });
    }, 60_000);

    it("cannot register as cluster1 while cluster1's agent is connected; nothing is pruned, no output leaves", async () => {
      const before = await view("cluster1");
      const issuedBefore = await metric("gitmesh_relay_certificates_issued_total", 'kind="register"');
      expect(issuedBefore).toBe(2);
      const reg = attacker("Registration", address, grpc.credentials.createSsl(Buffer.from(rootCaPem)));
      const { csrPem } = createCsr("cluster1", generateKeyPem());
      // the credential the attacker copied out of cluster1 (per-cluster: already used; fleet: the shared token)
      const { err, res } = await callUnary(reg.Register, reg, { cluster: "cluster1", token: given.get("cluster1"), csrPem });
      reg.close();
      expect(res).toBeUndefined();
      if (mode === "per-cluster") {
        expect(err?.code).toBe(grpc.status.UNAUTHENTICATED);
        expect(err?.details).toMatch(/not valid for cluster "cluster1" \(unknown, already used, expired/);
        expect(rejections("bad_token").some((r) => r.fields.cluster === "cluster1")).toBe(true);
        expect(await metric("gitmesh_relay_rejections_total", 'reason="bad_token"')).toBeGreaterThanOrEqual(1);
      } else {
        expect(err?.code).toBe(grpc.status.PERMISSION_DENIED);
        expect(err?.details).toMatch(/cluster "cluster1" already holds a valid client certificate/);
        expect(err?.details).toMatch(/gitmesh cluster reissue cluster1/);
        expect(rejections("identity_in_use").some((r) => r.fields.cluster === "cluster1")).toBe(true);
        expect(await metric("gitmesh_relay_rejections_total", 'reason="identity_in_use"')).toBe(1);
      }
      // cluster2's credential cannot mint cluster1 either
      const reg2 = attacker("Registration", address, grpc.credentials.createSsl(Buffer.from(rootCaPem)));
      const other = await callUnary(reg2.Register, reg2, { cluster: "cluster1", token: given.get("cluster2"), csrPem });
      reg2.close();
      expect(other.err?.code).toBe(mode === "per-cluster" ? grpc.status.UNAUTHENTICATED : grpc.status.PERMISSION_DENIED);
      expect(await metric("gitmesh_relay_certificates_issued_total", 'kind="register"')).toBe(issuedBefore);
      // the genuine agent is still connected with its streams, in sync, and nothing was deleted anywhere
      const after = await view("cluster1");
      expect(after).toMatchObject({ connected: true, inSync: true, cutOff: null });
      expect(after!.applied!.version).toBeGreaterThanOrEqual(before!.applied!.version);
      expect(agents.get("cluster1")!.relayLink?.connected).toBe(true);
      expect(deletions).toEqual([]);
      expect(mem.text()).not.toContain(given.get("cluster1")!);
    });

    it("gets no output, no renewal and no Istio intermediate without a certificate, nor with one from its own CA", async () => {
      const { csrPem } = createCsr("cluster1", generateKeyPem());
      const key = generateKeyPem();
      const ownCa = createSelfSignedCa({ commonName: "attacker-ca" });
      const forged = signClientCertificate(ownCa, { cluster: "cluster1", csrPem: createCsr("cluster1", key).csrPem, lifetimeMs: 3600_000 });
      const before = await metric("gitmesh_relay_rejections_total", 'reason="client_certificate_invalid"');
      for (const creds of [grpc.credentials.createSsl(Buffer.from(rootCaPem)), grpc.credentials.createSsl(Buffer.from(rootCaPem), Buffer.from(key), Buffer.from(forged.certPem))]) {
        const relay = attacker("Relay", address, creds);
        const sign = await callUnary(relay.SignIntermediate, relay, { cluster: "cluster1", csrPem, issuedCertificate: "", rootTrustPolicy: "" });
        expect(sign.err?.code).toBe(grpc.status.UNAUTHENTICATED);
        expect(sign.res).toBeUndefined();
        const renew = await callUnary(relay.Renew, relay, { cluster: "cluster1", csrPem });
        expect(renew.err?.code).toBe(grpc.status.UNAUTHENTICATED);
        const pull = relay.PullOutput!();
        const received: unknown[] = [];
        const ended = new Promise<grpc.ServiceError>((resolve) => {
          pull.on("data", (m: unknown) => received.push(m));
          pull.on("error", (e: grpc.ServiceError) => resolve(e));
        });
        pull.write({ cluster: "cluster1", version: 0, ack: false, errors: [], resync: false, report: false, repairs: [] });
        expect((await ended).code).toBe(grpc.status.UNAUTHENTICATED);
        expect(received).toEqual([]);
        relay.close();
      }
      expect(await metric("gitmesh_relay_rejections_total", 'reason="client_certificate_invalid"')).toBeGreaterThanOrEqual(before + 6);
      expect(await view("cluster1")).toMatchObject({ connected: true, inSync: true });
      expect(deletions).toEqual([]);
    });

    if (mode === "per-cluster") {
      it("re-issue (admin API) revokes the live certificate; the agent registers with the new credential without a restart", async () => {
        const issued = await metric("gitmesh_relay_certificates_issued_total", 'kind="register"');
        // the admin API: no token 401, the read token 403, the admin token re-issues
        const url = `${base}/api/clusters/cluster1/reissue`;
        const tokens = server.server.apiTokens!;
        expect((await fetch(url, { method: "POST", headers: { connection: "close" } })).status).toBe(401);
        expect((await fetch(url, { method: "POST", headers: { connection: "close", authorization: `Bearer ${tokens.read}` } })).status).toBe(403);
        expect(await view("cluster1")).toMatchObject({ connected: true, inSync: true });
        const res = await fetch(url, { method: "POST", headers: { connection: "close", authorization: `Bearer ${tokens.admin}` } });
        expect(res.status).toBe(200);
        const { credential } = (await res.json()) as { credential: string; expiresAt: string };
        expect(credential).toMatch(/^gmbc_/);
        expect(mem.text()).not.toContain(credential);
        // the old certificate is refused at once: the agent's streams end, status says why
        await poll("cluster1 cut off", async () => {
          const v = await view("cluster1");
          return v && !v.connected && v.cutOff !== null && /revoked/.test(v.cutOff) && !v.inSync ? v : undefined;
        });
        expect(await metric("gitmesh_relay_rejections_total", 'reason="certificate_revoked"')).toBeGreaterThanOrEqual(1);
        // the operator writes the new credential into the cluster (what `gitmesh cluster reissue` does)
        setCredential("cluster1", `${credential}\n`);
        await poll("cluster1 back with a new certificate", synced("cluster1"), 60_000);
        expect(await metric("gitmesh_relay_certificates_issued_total", 'kind="register"')).toBe(issued + 1);
        // single use: the same credential again is refused
        const reg = attacker("Registration", address, grpc.credentials.createSsl(Buffer.from(rootCaPem)));
        const again = await callUnary(reg.Register, reg, { cluster: "cluster1", token: credential, csrPem: createCsr("cluster1", generateKeyPem()).csrPem });
        reg.close();
        expect(again.err?.code).toBe(grpc.status.UNAUTHENTICATED);
        expect(deletions).toEqual([]);
      }, 120_000);
    }

    it("a cluster removed from Git by mistake is refused and shown out of sync; restored, it recovers on its own", async () => {
      const removed = await git.commitFiles("mesh", { "clusters/cluster2.yaml": null }, "oops: cluster2 removed");
      await poll("cluster2 cut off", async () => {
        const v = await view("cluster2");
        return v && !v.connected && !v.inSync && v.cutOff !== null && /removed|no KubernetesCluster/.test(v.cutOff) ? v : undefined;
      });
      expect(removed).toMatch(/^[0-9a-f]{40}$/);
      const restoredFile = repoFiles("examples/repo-layout")["clusters/cluster2.yaml"]!;
      await git.commitFiles("mesh", { "clusters/cluster2.yaml": restoredFile }, "restore cluster2");
      // no secret deleted, no agent restarted: the agent's reconnect loop (backoff ≤ 1 s here, 30 s by default) brings it back
      await poll("cluster2 recovered", synced("cluster2"), 60_000);
      expect(await view("cluster2")).toMatchObject({ cutOff: null, inSync: true });
      expect(kubes.get("cluster2")!.emulator.get("v1", "Secret", "gitmesh", "relay-client-tls-secret")).toBeDefined();
    }, 120_000);
  });
}
