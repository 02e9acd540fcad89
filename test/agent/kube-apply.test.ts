// Server-side applies go straight over node:http(s) (kube-apply.ts), not through client-node. What
// reaches the API server is checked where it arrives: a TLS front that demands a client certificate,
// records every request and passes it on to the emulator (RBAC on: bearer tokens → users). Error
// answers must read exactly as they did through client-node (same status, same NACK text).
import * as http from "node:http";
import * as https from "node:https";
import { connect } from "node:net";
import type { Duplex } from "node:stream";
import { TLSSocket } from "node:tls";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { KubeConfig, KubernetesObjectApi, PatchStrategy } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { createMemoryLogger } from "../../src/core/index.js";
import { APPLY_PATCH_CONTENT_TYPE, createAgentMetrics, createApplier, createInventory, createKubeClient, FIELD_MANAGER, messageOf, statusOf, withFieldOwner, type KubeObject } from "../../src/agent/index.js";
import { selfSigned } from "../helpers/self-signed.js";
import { startKube, type StartedKube } from "../helpers/kube.js";
import { dr, output, vs } from "./helpers.js";

const SA = "system:serviceaccount:gitmesh:gitmesh-agent";
const ISTIO = ["networking.istio.io", "security.istio.io"];
const rbac = {
  tokens: { "agent-token": SA, "reader-token": "system:serviceaccount:gitmesh:reader" },
  objects: [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "agent" },
      rules: [
        { apiGroups: ISTIO, resources: ["*"], verbs: ["get", "list", "watch", "create", "patch", "update", "delete"] },
        { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "create", "patch", "update"] },
      ],
    },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: "agent" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "agent" }, subjects: [{ kind: "ServiceAccount", name: "gitmesh-agent", namespace: "gitmesh" }] },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "reader" },
      rules: [
        { apiGroups: ISTIO, resources: ["*"], verbs: ["get", "list", "watch"] },
        { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "create", "patch", "update"] },
      ],
    },
    { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", metadata: { name: "reader" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "reader" }, subjects: [{ kind: "ServiceAccount", name: "reader", namespace: "gitmesh" }] },
  ],
};

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  /** Common name of the client certificate the TLS connection presented. */
  readonly clientCn: string | undefined;
}

let kube: StartedKube;
let front: https.Server;
let seen: Seen[];
let server: { certPem: string };
let client: { keyPem: string; certPem: string };
let port: number;

beforeEach(async () => {
  kube = await startKube({ rbac });
  kube.emulator.seed([{ apiVersion: "v1", kind: "Namespace", metadata: { name: "gitmesh" } }, { apiVersion: "v1", kind: "Namespace", metadata: { name: "a" } }]);
  const serverPair = await selfSigned("kube-apiserver", "127.0.0.1");
  server = serverPair;
  client = await selfSigned(SA);
  seen = [];
  // The API server's TLS: it demands a client certificate signed by the CA it trusts, then serves (here: passes on to the emulator).
  front = https.createServer({ key: serverPair.keyPem, cert: serverPair.certPem, ca: client.certPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const peer = req.socket instanceof TLSSocket ? req.socket.getPeerCertificate() : undefined;
      const cn: unknown = peer?.subject.CN;
      seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: body.toString("utf8"), clientCn: typeof cn === "string" ? cn : undefined });
      const headers = { ...req.headers };
      delete headers.host;
      const path = (req.url ?? "/").replace(/^\/k8s\/clusters\/c-1\//, "/");
      const up = http.request({ host: "127.0.0.1", port: kube.emulator.port, method: req.method, path, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      up.on("error", () => res.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  port = (front.address() as { port: number }).port;
});
afterEach(async () => {
  front.closeAllConnections();
  await new Promise<void>((resolve) => front.close(() => resolve()));
  await kube.stop();
});

/** A kubeconfig for the TLS front: its CA, the client certificate, and a bearer token. */
function kubeconfig(token: string, prefix = ""): KubeConfig {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "tls", server: `https://127.0.0.1:${String(port)}${prefix}`, caData: b64(server.certPem) }],
    users: [{ name: "agent", token, certData: b64(client.certPem), keyData: b64(client.keyPem) }],
    contexts: [{ name: "tls", cluster: "tls", user: "agent" }],
    currentContext: "tls",
  });
  return kc;
}

/** The same apply through client-node's own KubernetesObjectApi: how an answer read before. */
async function throughClientNode(kc: KubeConfig, obj: KubeObject, force: boolean): Promise<{ status: number | undefined; message: string }> {
  try {
    await KubernetesObjectApi.makeApiClient(kc).patch(structuredClone(obj), undefined, undefined, FIELD_MANAGER, force, PatchStrategy.ServerSideApply);
    return { status: 200, message: "" };
  } catch (err) {
    return { status: statusOf(err), message: messageOf(err) };
  }
}

async function thin(kc: KubeConfig, obj: KubeObject, force: boolean): Promise<{ status: number | undefined; message: string }> {
  const c = createKubeClient(kc);
  try {
    await c.apply(structuredClone(obj), { fieldManager: FIELD_MANAGER, force });
    return { status: 200, message: "" };
  } catch (err) {
    return { status: statusOf(err), message: messageOf(err) };
  } finally {
    c.connections.destroy();
  }
}

const applies = () => seen.filter((s) => s.method === "PATCH");

describe("server-side apply over node:https (kube-apply.ts)", () => {
  it("sends what an API server expects: PATCH to the object, apply-patch content type, the object as JSON, fieldManager, force, dryRun; bearer token and client certificate", async () => {
    const c = createKubeClient(kubeconfig("agent-token"));
    try {
      const obj = vs("r1", "a", "r1.example.com");
      const dry = await c.apply(structuredClone(obj), { fieldManager: FIELD_MANAGER, force: false, dryRun: true });
      expect(dry.metadata.name).toBe("r1");
      expect(kube.emulator.get("networking.istio.io/v1", "VirtualService", "a", "r1")).toBeUndefined();

      const out = await c.apply(structuredClone(obj), { fieldManager: FIELD_MANAGER, force: true });
      expect(out.apiVersion).toBe("networking.istio.io/v1");
      expect(out.kind).toBe("VirtualService");
      expect(typeof out.metadata.uid).toBe("string");
      expect(out.metadata.managedFields).toEqual([expect.objectContaining({ manager: FIELD_MANAGER, operation: "Apply" })]);
      expect(kube.emulator.get("networking.istio.io/v1", "VirtualService", "a", "r1")?.spec).toEqual(obj.spec);

      const [first, second] = applies();
      for (const s of [first!, second!]) {
        const url = new URL(s.url, "https://x");
        expect(url.pathname).toBe("/apis/networking.istio.io/v1/namespaces/a/virtualservices/r1");
        expect(url.searchParams.get("fieldManager")).toBe(FIELD_MANAGER);
        expect(s.headers["content-type"]).toBe(APPLY_PATCH_CONTENT_TYPE);
        expect(s.headers.accept).toContain("application/json");
        expect(s.headers.authorization).toBe("Bearer agent-token");
        expect(s.clientCn).toBe(SA);
        expect(JSON.parse(s.body)).toEqual(obj);
        expect(Number(s.headers["content-length"])).toBe(Buffer.byteLength(s.body));
      }
      expect(new URL(first!.url, "https://x").searchParams.get("force")).toBe("false");
      expect(new URL(first!.url, "https://x").searchParams.getAll("dryRun")).toEqual(["All"]);
      expect(new URL(second!.url, "https://x").searchParams.get("force")).toBe("true");
      expect(new URL(second!.url, "https://x").searchParams.has("dryRun")).toBe(false);
    } finally {
      c.connections.destroy();
    }
  });

  it("a server under a path prefix (a Rancher-style proxy) keeps it in front of the apply's path", async () => {
    const kc = kubeconfig("agent-token", "/k8s/clusters/c-1");
    const c = createKubeClient(kc);
    try {
      const out = await c.apply(vs("r2", "a", "r2.example.com"), { fieldManager: FIELD_MANAGER, force: true });
      expect(out.metadata.name).toBe("r2");
      expect(applies().map((s) => new URL(s.url, "https://x").pathname)).toEqual(["/k8s/clusters/c-1/apis/networking.istio.io/v1/namespaces/a/virtualservices/r2"]);
    } finally {
      c.connections.destroy();
    }
  });

  it("409 conflict, 403 RBAC refusal, 500 typed-patch failure (a wrong type in an apply patch, as a real kube-apiserver answers it) and 401 read exactly as they did through client-node", async () => {
    const agent = kubeconfig("agent-token");
    // Someone else owns spec.hosts: a non-forced apply of other hosts conflicts.
    kube.emulator.seed([vs("taken", "a", "theirs.example.com")]);
    const conflict = vs("taken", "a", "ours.example.com");
    const invalid = { ...vs("bad", "a", "bad.example.com"), spec: { hosts: "not-a-list" } } as KubeObject;
    const cases: [string, KubeConfig, KubeObject, boolean, number][] = [
      ["conflict", agent, conflict, false, 409],
      ["rbac", kubeconfig("reader-token"), vs("r3", "a", "r3.example.com"), true, 403],
      ["invalid", agent, invalid, true, 500],
      ["unknown token", kubeconfig("no-such-token"), vs("r4", "a", "r4.example.com"), true, 401],
    ];
    for (const [what, kc, obj, force, status] of cases) {
      const before = await throughClientNode(kc, obj, force);
      const now = await thin(kc, obj, force);
      expect(before.status, what).toBe(status);
      expect(now, what).toEqual(before);
      expect(now.message, what).toMatch(new RegExp(`^HTTP ${String(status)}: .+`));
    }
    expect(kube.emulator.get("networking.istio.io/v1", "VirtualService", "a", "taken")?.spec).toEqual(vs("taken", "a", "theirs.example.com").spec);
  });

  it("a connection refused reads as it did through client-node (node-fetch's words)", async () => {
    const kc = kubeconfig("agent-token");
    const before = KubernetesObjectApi.makeApiClient(kc);
    const now = createKubeClient(kc);
    const obj = vs("r8", "a", "r8.example.com");
    try {
      // Discovery cached on both sides, then the API server goes away.
      await before.patch(structuredClone(obj), undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
      await now.apply(structuredClone(obj), { fieldManager: FIELD_MANAGER, force: true });
      now.connections.destroy();
      front.closeAllConnections();
      await new Promise<void>((resolve) => front.close(() => resolve()));
      const failure = async (p: Promise<unknown>) => p.then(() => "no error", (err: unknown) => `${String(statusOf(err))} ${messageOf(err)}`);
      const a = await failure(before.patch(structuredClone(obj), undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply));
      const b = await failure(now.apply(structuredClone(obj), { fieldManager: FIELD_MANAGER, force: true }));
      expect(a).toMatch(/^undefined request to https:\/\/127\.0\.0\.1:\d+\/apis\/networking\.istio\.io\/v1\/namespaces\/a\/virtualservices\/r8\?fieldManager=gitmesh-agent&force=true failed, reason: connect ECONNREFUSED/);
      expect(b).toBe(a);
    } finally {
      now.connections.destroy();
      front.listen(0, "127.0.0.1"); // afterEach closes it
    }
  });

  it("a cluster behind a proxy (proxyUrl) is applied through client-node's proxy agent, as before", async () => {
    // client-node's proxy agent (hpagent) tunnels every request through CONNECT, one tunnel per request.
    const tunnels: string[] = [];
    const proxy = http.createServer((_req, res) => res.writeHead(405).end());
    proxy.on("connect", (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
      tunnels.push(req.url ?? "");
      const [host, port] = (req.url ?? "").split(":");
      const up = connect(Number(port), host ?? "", () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        up.write(head);
        up.pipe(client).pipe(up);
      });
      const end = () => (client.destroy(), up.destroy());
      up.on("error", end).on("close", end);
      client.on("error", end).on("close", end);
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "p", server: kube.url, skipTLSVerify: true, proxyUrl: `http://127.0.0.1:${String((proxy.address() as { port: number }).port)}` }],
      users: [{ name: "u", token: "agent-token" }],
      contexts: [{ name: "p", cluster: "p", user: "u" }],
      currentContext: "p",
    });
    const c = createKubeClient(kc);
    try {
      const out = await c.apply(vs("r9", "a", "r9.example.com"), { fieldManager: FIELD_MANAGER, force: true });
      expect(out.metadata.managedFields).toEqual([expect.objectContaining({ manager: FIELD_MANAGER, operation: "Apply" })]);
      // Discovery of networking.istio.io/v1, then the apply: both through the proxy.
      expect(tunnels).toEqual([`127.0.0.1:${String(kube.emulator.port)}`, `127.0.0.1:${String(kube.emulator.port)}`]);
    } finally {
      c.connections.destroy();
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it("the applier's NACK texts: an RBAC refusal and an invalid object are apply errors with the server's message; the rest applies", async () => {
    const kc = kubeconfig("reader-token");
    const c = createKubeClient(kc);
    try {
      const writer = withFieldOwner(c);
      const inventory = createInventory({ reader: c, writer, namespace: "gitmesh", cluster: "cluster1" });
      const applier = createApplier({ cluster: "cluster1", reader: c, writer, inventory, metrics: createAgentMetrics(new Registry()), logger: createMemoryLogger("agent").logger });
      const r = await applier.applyOutput(output(1, [vs("r5", "a", "r5.example.com")]));
      expect(r.ack).toBe(false);
      expect(r.errors).toEqual([
        {
          key: expect.stringContaining("r5") as string,
          message: `apply failed: HTTP 403: virtualservices.networking.istio.io "r5" is forbidden: User "system:serviceaccount:gitmesh:reader" cannot patch resource "virtualservices" in API group "networking.istio.io" in the namespace "a"`,
        },
      ]);
    } finally {
      c.connections.destroy();
    }
    const from = seen.length;
    const a = createKubeClient(kubeconfig("agent-token"));
    try {
      const writer = withFieldOwner(a);
      const inventory = createInventory({ reader: a, writer, namespace: "gitmesh", cluster: "cluster1" });
      const applier = createApplier({ cluster: "cluster1", reader: a, writer, inventory, metrics: createAgentMetrics(new Registry()), logger: createMemoryLogger("agent").logger });
      const badMode = { ...dr("r8", "a", "r8.example.com"), spec: { host: "r8.example.com", trafficPolicy: { tls: { mode: "NOT_A_MODE" } } } } as KubeObject;
      const r = await applier.applyOutput(output(1, [vs("r6", "a", "r6.example.com"), { ...vs("r7", "a", "r7.example.com"), spec: { hosts: 7 } }, badMode]));
      expect(r.applied).toBe(1);
      // A wrong type fails making the typed patch: HTTP 500 on a real kube-apiserver (see the emulator's calibration);
      // a value outside the CRD schema's enum is 422 Invalid.
      expect([...r.errors].sort((x, y) => (x.key < y.key ? -1 : 1))).toEqual([
        { key: expect.stringContaining("r8") as string, message: expect.stringMatching(/^apply failed: HTTP 422: /) as string },
        { key: expect.stringContaining("r7") as string, message: expect.stringMatching(/^apply failed: HTTP 500: failed to create typed patch object .*\.spec\.hosts: expected list/) as string },
      ]);
      const sent = seen.slice(from).filter((s) => s.method === "PATCH");
      expect(sent.length).toBeGreaterThanOrEqual(3);
      // The typed-patch 500 is the object's fault, not the server's: sent once, not retried as a transient 5xx.
      expect(sent.filter((s) => s.url.includes("/virtualservices/r7"))).toHaveLength(1);
      expect(sent.every((s) => s.clientCn === SA && s.headers.authorization === "Bearer agent-token")).toBe(true);
    } finally {
      a.connections.destroy();
    }
  });
});
