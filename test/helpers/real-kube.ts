/**
 * A real Kubernetes control plane for one test file: etcd and kube-apiserver (and, when asked, a
 * kube-controller-manager running a few controllers), built from their Go modules by
 * `node scripts/build-tools.mjs kube-apiserver` (tools/kube-apiserver), on free loopback ports, with
 * Istio's CRDs installed and served.
 *
 *   const kube = await startRealKube();                       // in beforeAll (allow ~30 s)
 *   const core = kube.kc.makeApiClient(CoreV1Api);           // admin (group system:masters)
 *   const agent = await kube.serviceAccountKubeConfig("gitmesh", "gitmesh-agent", rbacObjects);
 *   ...
 *   await kube.stop();                                       // in afterAll
 *
 * The server: HTTPS on 127.0.0.1 with a serving certificate of a CA made for the run (the CA also
 * verifies client certificates), static-token authentication (the admin) and ServiceAccount tokens
 * (the TokenRequest API: issuer, signing key), `--authorization-mode=RBAC`, the default admission
 * plugins without the two webhook ones, no priority and fairness, no endpoint reconciler. etcd keeps
 * its data in the run's temp dir without fsync. No controllers run unless `controllers` names them:
 * without the namespace controller a deleted Namespace stays Terminating, without the garbage
 * collector ownerReferences cascade nothing, and no `default` ServiceAccount appears in a namespace.
 *
 * Every process runs in a process group of its own with a watchdog that kills the group when this
 * (test worker) process goes away however it ends — its stdin pipe closes —, and `stop()` and an
 * exit hook kill the groups and remove the temp dir (a dir left by a killed process is removed by the
 * next start).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createPublicKey, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request as httpsRequest } from "node:https";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { KubeConfig } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { forge, forgePublicKeyOf, generateRsaKeyPem, randomSerial, signNatively } from "../../src/pki/index.js";
import { freePort } from "./ports.js";
import { keepOutput } from "./processes.js";
import { toolBinary } from "./tools.js";
import { ISTIO_CRDS as EMULATOR_ISTIO_CRDS } from "../../src/kube-emulator/crds/istio.gen.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** Istio's CRDs as its chart ships them (the emulator's `crds/istio.gen.ts` is generated from the same file). */
export const ISTIO_CRDS = process.env.GITMESH_ISTIO_CRDS ?? join(ROOT, "..", "shared", "reference", "istio", "crd-all-1.29.2.gen.yaml");

/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are untyped JSON here */
type KubeObject = Record<string, any>;

const ciRun = () => process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false";
let warnedCrds = false;

/**
 * Istio's CRDs as its chart ships them, from ../shared. A clone without ../shared gets them rebuilt from the
 * emulator's copy (src/kube-emulator/crds/istio.gen.ts: the same file's names, versions and structural
 * schemas, without descriptions and CEL rules), with a note; CI must have the real file.
 */
/** Istio's CRDs as the real API server gets them (see istioCrds): for tests that re-create or inspect one. */
export function istioCrdObjects(): KubeObject[] {
  return istioCrds((what) => {
    throw new Error(what);
  });
}

function istioCrds(fail: (what: string) => never): KubeObject[] {
  if (existsSync(ISTIO_CRDS)) {
    return parseAllDocuments(readFileSync(ISTIO_CRDS, "utf8"))
      .map((d) => d.toJS() as KubeObject | null)
      .filter((o): o is KubeObject => o?.kind === "CustomResourceDefinition");
  }
  if (ciRun() || process.env.GITMESH_ISTIO_CRDS !== undefined) fail(`Istio's CRDs are not at ${ISTIO_CRDS} (check out ../shared beside the repository, or set GITMESH_ISTIO_CRDS)`);
  if (!warnedCrds) console.warn(`note: Istio's CRDs are not at ${ISTIO_CRDS}; the real API server gets the emulator's copy, without their CEL rules (check out ../shared for the full CRDs)`);
  warnedCrds = true;
  return EMULATOR_ISTIO_CRDS.map((c) => ({
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${c.plural}.${c.group}` },
    spec: {
      group: c.group,
      names: { kind: c.kind, plural: c.plural, singular: c.singular, shortNames: [...c.shortNames], categories: [...c.categories], listKind: `${c.kind}List` },
      scope: c.namespaced ? "Namespaced" : "Cluster",
      versions: c.versions.map((v) => ({ name: v.name, served: true, storage: v.storage, schema: { openAPIV3Schema: v.schema }, ...(v.status ? { subresources: { status: {} } } : {}) })),
    },
  }));
}

export interface RealKubeOptions {
  /** Install Istio's CRDs and wait until they are served (default true). */
  readonly istioCrds?: boolean;
  /**
   * kube-controller-manager controllers to run (its `--controllers` names, e.g. `namespace-controller`,
   * `garbage-collector-controller`, `serviceaccount-controller`); default none, and no
   * kube-controller-manager process.
   */
  readonly controllers?: readonly string[];
  /** More kube-apiserver flags (`--name=value`), after the helper's own. */
  readonly apiserverArgs?: readonly string[];
  /** How long startup may take, all parts together (default 120 s). */
  readonly timeoutMs?: number;
}

export interface RealKubeResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly body: any;
}

export interface RealKubeRequest {
  readonly body?: unknown;
  /** Default application/json (a string body is sent as it is). */
  readonly contentType?: string;
  readonly query?: Record<string, string>;
  /** Bearer token; default the admin's. */
  readonly token?: string;
  readonly headers?: Record<string, string>;
}

export interface ServiceAccountAccess {
  /** `system:serviceaccount:<namespace>:<name>` */
  readonly user: string;
  readonly token: string;
  readonly kc: KubeConfig;
  /** The same kubeconfig as a file (for kubectl, helm, the agent process). */
  readonly kubeconfigPath: string;
}

export interface RealKube {
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  /** The CA of the serving certificate (and of client certificates). */
  readonly caPem: string;
  readonly adminToken: string;
  /** Admin kubeconfig (user `gitmesh-admin`, group `system:masters`). */
  readonly kc: KubeConfig;
  readonly kubeconfigPath: string;
  /** A fresh admin KubeConfig (e.g. per agent replica), with `namespace` as the context's namespace. */
  newKubeConfig(namespace?: string): KubeConfig;
  /** A kubeconfig text for `token` (default the admin's). */
  kubeconfig(options?: { namespace?: string; token?: string; user?: string }): string;
  /**
   * Creates the ServiceAccount (and its namespace), server-side applies `rbac` (Roles, ClusterRoles,
   * RoleBindings, ClusterRoleBindings, … — any objects, e.g. a chart's rendered RBAC; missing
   * namespaces are created) as the admin, waits until the authorizer grants what the bindings of
   * that ServiceAccount give it, and returns a kubeconfig with a TokenRequest token of it.
   */
  serviceAccountKubeConfig(namespace: string, name: string, rbac?: readonly KubeObject[]): Promise<ServiceAccountAccess>;
  /** Server-side applies objects as the admin (field manager `gitmesh-test`); namespaces they need are created first. */
  apply(objects: readonly KubeObject[]): Promise<KubeObject[]>;
  /** A raw HTTPS request (as the admin unless `token`). */
  request(method: string, path: string, options?: RealKubeRequest): Promise<RealKubeResponse>;
  /** The tail of every process's log. */
  logs(): string;
  /** The process ids (etcd, kube-apiserver, kube-controller-manager when it runs). */
  readonly pids: readonly number[];
  stop(): Promise<void>;
}

/* ---------------------------------------------------------------- processes */

interface Server {
  readonly name: string;
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<void>;
}

// The watchdog: the group leader execs the server; a background subshell reads a dup of the pipe
// this process holds open and, at EOF (this process exited, however), kills the whole group.
const WATCHDOG = 'exec 3<&0; (cat <&3 >/dev/null; kill -KILL 0) & exec "$@" </dev/null 3<&-';

function startServer(name: string, bin: string, args: readonly string[]): Server {
  const child = spawn("/bin/sh", ["-c", WATCHDOG, name, bin, ...args], { detached: true, stdio: ["pipe", "pipe", "pipe"] });
  const output = keepOutput(child);
  child.stdin.on("error", () => undefined);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return { name, child, output, exited };
}

function killGroup(s: Server): void {
  if (s.child.pid === undefined) return;
  try {
    process.kill(-s.child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

/* ---------------------------------------------------------------- certificates */

interface Pki {
  readonly caPem: string;
  readonly serverCertPem: string;
  readonly serverKeyPem: string;
  readonly saKeyPem: string;
  readonly saPubPem: string;
}

async function makePki(): Promise<Pki> {
  const [caKey, serverKey, saKeyPem] = await Promise.all([generateRsaKeyPem(2048), generateRsaKeyPem(2048), generateRsaKeyPem(2048)]);
  const validity = (c: ReturnType<typeof forge.pki.createCertificate>) => {
    c.serialNumber = randomSerial();
    c.validity.notBefore = new Date(Date.now() - 60_000);
    c.validity.notAfter = new Date(Date.now() + 24 * 3_600_000);
  };
  const caName = [{ name: "commonName", value: "gitmesh-test-kube-ca" }];
  const ca = forge.pki.createCertificate();
  ca.publicKey = forgePublicKeyOf(caKey);
  validity(ca);
  ca.setSubject(caName);
  ca.setIssuer(caName);
  ca.setExtensions([
    { name: "basicConstraints", cA: true, critical: true },
    { name: "keyUsage", keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: "subjectKeyIdentifier" },
  ]);
  signNatively(ca, caKey);
  const server = forge.pki.createCertificate();
  server.publicKey = forgePublicKeyOf(serverKey);
  validity(server);
  server.setSubject([{ name: "commonName", value: "kube-apiserver" }]);
  server.setIssuer(caName);
  server.setExtensions([
    { name: "basicConstraints", cA: false },
    { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
    { name: "extKeyUsage", serverAuth: true },
    { name: "subjectAltName", altNames: [{ type: 7, ip: "127.0.0.1" }, { type: 2, value: "localhost" }, { type: 2, value: "kubernetes.default.svc" }] },
  ]);
  signNatively(server, caKey);
  const saPubPem = createPublicKey(saKeyPem).export({ type: "spki", format: "pem" }).toString();
  return { caPem: forge.pki.certificateToPem(ca), serverCertPem: forge.pki.certificateToPem(server), serverKeyPem: serverKey, saKeyPem, saPubPem };
}

/* ---------------------------------------------------------------- start */

const DIR_PREFIX = "gitmesh-real-kube-";

/** Temp dirs of runs whose process died without its exit hook (SIGKILL): its servers died with it. */
function removeStaleDirs(): void {
  for (const name of readdirSync(tmpdir())) {
    const owner = name.startsWith(DIR_PREFIX) ? Number(name.slice(DIR_PREFIX.length).split("-")[0]) : NaN;
    if (!Number.isInteger(owner) || owner === process.pid) continue;
    try {
      process.kill(owner, 0);
    } catch {
      rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
  }
}

const live = new Set<() => void>();
process.once("exit", () => {
  for (const cleanup of live) cleanup();
});

export async function startRealKube(options: RealKubeOptions = {}): Promise<RealKube> {
  const etcdBin = toolBinary("kube-apiserver", "etcd");
  const apiserverBin = toolBinary("kube-apiserver", "kube-apiserver");
  const controllers = options.controllers ?? [];
  const kcmBin = controllers.length > 0 ? toolBinary("kube-apiserver", "kube-controller-manager") : undefined;
  const started = Date.now();
  const deadline = started + (options.timeoutMs ?? 120_000);

  removeStaleDirs();
  const dir = mkdtempSync(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  const servers: Server[] = [];
  let agent: Agent | undefined;
  const cleanup = () => {
    for (const s of servers) killGroup(s);
    agent?.destroy();
    rmSync(dir, { recursive: true, force: true });
  };
  live.add(cleanup);
  const logs = () => servers.map((s) => `==== ${s.name}${s.child.exitCode !== null || s.child.signalCode !== null ? ` (exited ${s.child.exitCode ?? s.child.signalCode})` : ""}\n${s.output().slice(-4000)}`).join("\n");
  const fail = (what: string, cause?: unknown): never => {
    const msg = cause instanceof Error ? cause.message : typeof cause === "string" ? cause : "";
    throw new Error(`startRealKube: ${what}${msg ? `: ${msg}` : ""} (after ${Date.now() - started} ms)\n${logs()}`);
  };

  try {
    const [pki, etcdPort, peerPort, apiPort] = await Promise.all([makePki(), freePort(), freePort(), freePort()]);
    const adminToken = randomBytes(24).toString("hex");
    const kcmToken = randomBytes(24).toString("hex");
    const file = (name: string, text: string) => {
      const p = join(dir, name);
      writeFileSync(p, text, { mode: 0o600 });
      return p;
    };
    const caFile = file("ca.crt", pki.caPem);
    const certFile = file("apiserver.crt", pki.serverCertPem);
    const keyFile = file("apiserver.key", pki.serverKeyPem);
    const saKey = file("sa.key", pki.saKeyPem);
    const saPub = file("sa.pub", pki.saPubPem);
    const tokens = file("tokens.csv", `${adminToken},gitmesh-admin,gitmesh-admin,"system:masters"\n${kcmToken},system:kube-controller-manager,system:kube-controller-manager,"system:masters"\n`);
    mkdirSync(join(dir, "cert"));

    // etcd: one member on loopback, data in the temp dir, no fsync (a test cluster loses nothing it needs).
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const etcd = startServer("etcd", etcdBin, [
      "--name=gitmesh-test",
      `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=gitmesh-test=${peerUrl}`,
      "--initial-cluster-state=new",
      "--unsafe-no-fsync",
      "--log-level=warn",
    ]);
    servers.push(etcd);
    await poll("etcd /health", servers, deadline, async () => {
      const r = await plainGet(`${etcdUrl}/health`);
      return r.status === 200 && r.text.includes('"health":"true"');
    }).catch((e: unknown) => fail("etcd did not become healthy", e));

    const url = `https://127.0.0.1:${apiPort}`;
    const apiserver = startServer("kube-apiserver", apiserverBin, [
      `--etcd-servers=${etcdUrl}`,
      "--bind-address=127.0.0.1",
      "--advertise-address=127.0.0.1",
      `--secure-port=${apiPort}`,
      `--cert-dir=${join(dir, "cert")}`,
      `--tls-cert-file=${certFile}`,
      `--tls-private-key-file=${keyFile}`,
      `--client-ca-file=${caFile}`,
      `--token-auth-file=${tokens}`,
      "--authorization-mode=RBAC",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${saPub}`,
      `--service-account-signing-key-file=${saKey}`,
      "--service-cluster-ip-range=10.96.0.0/16",
      "--disable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
      "--enable-priority-and-fairness=false",
      "--endpoint-reconciler-type=none",
      "--profiling=false",
      "--v=0",
      ...(options.apiserverArgs ?? []),
    ]);
    servers.push(apiserver);

    agent = new Agent({ ca: pki.caPem, keepAlive: true, maxSockets: 16 });
    const httpsAgent = agent;
    const request = (method: string, path: string, req: RealKubeRequest = {}): Promise<RealKubeResponse> =>
      kubeRequest(httpsAgent, url, method, path, { ...req, token: req.token ?? adminToken });

    await poll("kube-apiserver /readyz", servers, deadline, async () => (await request("GET", "/readyz")).status === 200).catch((e: unknown) =>
      fail("kube-apiserver did not become ready", e),
    );

    const kubeconfig = (o: { namespace?: string; token?: string; user?: string } = {}): string =>
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "real", cluster: { server: url, "certificate-authority-data": Buffer.from(pki.caPem).toString("base64") } }],
        users: [{ name: o.user ?? "gitmesh-admin", user: { token: o.token ?? adminToken } }],
        contexts: [{ name: "real", context: { cluster: "real", user: o.user ?? "gitmesh-admin", ...(o.namespace === undefined ? {} : { namespace: o.namespace }) } }],
        "current-context": "real",
      });
    const newKubeConfig = (namespace?: string): KubeConfig => {
      const kc = new KubeConfig();
      kc.loadFromString(kubeconfig(namespace === undefined ? {} : { namespace }));
      return kc;
    };
    const kubeconfigPath = file("admin.kubeconfig", kubeconfig());

    if (kcmBin !== undefined) {
      const kcmConfig = file("kcm.kubeconfig", kubeconfig({ token: kcmToken, user: "system:kube-controller-manager" }));
      servers.push(
        startServer("kube-controller-manager", kcmBin, [
          `--kubeconfig=${kcmConfig}`,
          `--controllers=${controllers.join(",")}`,
          "--leader-elect=false",
          "--secure-port=0",
          "--use-service-account-credentials=false",
          `--service-account-private-key-file=${saKey}`,
          `--root-ca-file=${caFile}`,
          "--v=0",
        ]),
      );
    }

    const resources = createResourceMap(request);
    const apply = async (objects: readonly KubeObject[]): Promise<KubeObject[]> => {
      const namespaces = [...new Set(objects.map((o) => o.metadata?.namespace as string | undefined).filter((n): n is string => n !== undefined))];
      for (const ns of namespaces) await ensureNamespace(request, ns);
      const out: KubeObject[] = [];
      for (const obj of objects) {
        const path = await resources.pathOf(obj);
        const r = await request("PATCH", path, { body: JSON.stringify(obj), contentType: "application/apply-patch+yaml", query: { fieldManager: "gitmesh-test", force: "true" } });
        if (r.status !== 200 && r.status !== 201) throw new Error(`apply of ${obj.kind} ${obj.metadata?.namespace ?? ""}/${obj.metadata?.name}: HTTP ${r.status}: ${r.text}`);
        out.push(r.body as KubeObject);
      }
      return out;
    };

    if (options.istioCrds ?? true) {
      const crds = istioCrds(fail);
      await apply(crds).catch((e: unknown) => fail("installing Istio's CRDs", e));
      await poll("Istio's CRDs Established and served", servers, deadline, async () => {
        for (const crd of crds) {
          const got = await request("GET", `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
          const established = (got.body?.status?.conditions ?? []).some((c: KubeObject) => c.type === "Established" && c.status === "True");
          if (!established) return false;
        }
        // Served: every served version's discovery lists the plural, and a list answers (not 429
        // "storage is (re)initializing" while the watch cache of the new resource fills).
        for (const crd of crds) {
          for (const v of crd.spec.versions as KubeObject[]) {
            if (v.served !== true) continue;
            const disc = await request("GET", `/apis/${crd.spec.group}/${v.name}`);
            if (disc.status !== 200 || !(disc.body?.resources ?? []).some((r: KubeObject) => r.name === crd.spec.names.plural)) return false;
            if ((await request("GET", `/apis/${crd.spec.group}/${v.name}/${crd.spec.names.plural}`, { query: { limit: "1" } })).status !== 200) return false;
          }
        }
        return true;
      }).catch((e: unknown) => fail("Istio's CRDs were not served", e));
    }

    const serviceAccountKubeConfig = async (namespace: string, name: string, rbac: readonly KubeObject[] = []): Promise<ServiceAccountAccess> => {
      await ensureNamespace(request, namespace);
      const sa = await request("POST", `/api/v1/namespaces/${namespace}/serviceaccounts`, { body: { apiVersion: "v1", kind: "ServiceAccount", metadata: { name } } });
      if (sa.status !== 201 && sa.status !== 409) throw new Error(`creating ServiceAccount ${namespace}/${name}: HTTP ${sa.status}: ${sa.text}`);
      await apply(rbac);
      const user = `system:serviceaccount:${namespace}:${name}`;
      await waitForGrants(request, user, namespace, name, rbac);
      const tr = await request("POST", `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`, {
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenRequest", spec: { expirationSeconds: 24 * 3600 } },
      });
      const token = tr.body?.status?.token as string | undefined;
      if (tr.status !== 201 || token === undefined) throw new Error(`TokenRequest for ${user}: HTTP ${tr.status}: ${tr.text}`);
      const text = kubeconfig({ token, user, namespace });
      const kc = new KubeConfig();
      kc.loadFromString(text);
      return { user, token, kc, kubeconfigPath: file(`sa-${namespace}-${name}.kubeconfig`, text) };
    };

    let stopped = false;
    return {
      url,
      caPem: pki.caPem,
      adminToken,
      kc: newKubeConfig(),
      kubeconfigPath,
      newKubeConfig,
      kubeconfig,
      serviceAccountKubeConfig,
      apply,
      request,
      logs,
      pids: servers.map((s) => s.child.pid!),
      async stop() {
        if (stopped) return;
        stopped = true;
        for (const s of servers) killGroup(s);
        await Promise.all(servers.map((s) => s.exited));
        live.delete(cleanup);
        cleanup();
      },
    };
  } catch (err) {
    live.delete(cleanup);
    cleanup();
    throw err;
  }
}

/* ---------------------------------------------------------------- helpers */

async function poll(what: string, servers: readonly Server[], deadline: number, probe: () => Promise<boolean>): Promise<void> {
  let last: unknown;
  for (;;) {
    const dead = servers.find((s) => s.child.exitCode !== null || s.child.signalCode !== null);
    if (dead !== undefined) throw new Error(`${dead.name} exited (${dead.child.exitCode ?? dead.child.signalCode}) while waiting for ${what}`);
    try {
      if (await probe()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? ` (last error: ${last.message})` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function plainGet(url: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { timeout: 2000 }, (res) => {
      let text = "";
      res.on("data", (d: Buffer) => (text += d.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

function kubeRequest(agent: Agent, base: string, method: string, path: string, req: RealKubeRequest & { token: string }): Promise<RealKubeResponse> {
  const u = new URL(path, base);
  for (const [k, v] of Object.entries(req.query ?? {})) u.searchParams.set(k, v);
  const payload = req.body === undefined ? undefined : typeof req.body === "string" ? req.body : JSON.stringify(req.body);
  return new Promise((resolve, reject) => {
    const r = httpsRequest(
      u,
      {
        method,
        agent,
        timeout: 30_000,
        headers: {
          Authorization: `Bearer ${req.token}`,
          Accept: "application/json",
          ...(payload === undefined ? {} : { "Content-Type": req.contentType ?? "application/json", "Content-Length": Buffer.byteLength(payload) }),
          ...req.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
        res.on("error", reject);
      },
    );
    r.on("timeout", () => r.destroy(new Error(`${method} ${path}: timeout`)));
    r.on("error", reject);
    r.end(payload);
  });
}

type Request = (method: string, path: string, req?: RealKubeRequest) => Promise<RealKubeResponse>;

async function ensureNamespace(request: Request, ns: string): Promise<void> {
  const r = await request("POST", "/api/v1/namespaces", { body: { apiVersion: "v1", kind: "Namespace", metadata: { name: ns } } });
  if (r.status !== 201 && r.status !== 409) throw new Error(`creating namespace ${ns}: HTTP ${r.status}: ${r.text}`);
}

/** kind → REST path, from the server's discovery (one request per group-version, cached). */
function createResourceMap(request: Request): { pathOf(obj: KubeObject): Promise<string> } {
  const lists = new Map<string, Promise<KubeObject[]>>();
  return {
    async pathOf(obj) {
      const gv = obj.apiVersion as string;
      let list = lists.get(gv);
      if (list === undefined) {
        list = request("GET", gv.includes("/") ? `/apis/${gv}` : `/api/${gv}`).then((r) => (r.status === 200 ? (r.body.resources as KubeObject[]) : []));
        lists.set(gv, list);
      }
      const res = (await list).find((r) => r.kind === obj.kind && !(r.name as string).includes("/"));
      if (res === undefined) {
        lists.delete(gv);
        throw new Error(`the server does not serve ${obj.kind} in ${gv}`);
      }
      const prefix = gv.includes("/") ? `/apis/${gv}` : `/api/${gv}`;
      const ns = res.namespaced === true ? `/namespaces/${obj.metadata?.namespace ?? "default"}` : "";
      return `${prefix}${ns}/${res.name}/${obj.metadata.name}`;
    },
  };
}

/**
 * RBAC objects take effect when the authorizer's informers see them: waits until a
 * SubjectAccessReview allows `user` the first rule of every role its bindings (among `rbac`) give it.
 */
async function waitForGrants(request: Request, user: string, namespace: string, name: string, rbac: readonly KubeObject[]): Promise<void> {
  const reviews: KubeObject[] = [];
  for (const b of rbac.filter((o) => o.kind === "RoleBinding" || o.kind === "ClusterRoleBinding")) {
    const bound = ((b.subjects ?? []) as KubeObject[]).some((s) => s.kind === "ServiceAccount" && s.name === name && (s.namespace ?? b.metadata.namespace) === namespace);
    if (!bound) continue;
    const role = rbac.find((o) => o.kind === b.roleRef.kind && o.metadata.name === b.roleRef.name && (o.kind === "ClusterRole" || o.metadata.namespace === b.metadata.namespace));
    const rule = (role?.rules as KubeObject[] | undefined)?.find((r) => r.resources?.length > 0 && r.verbs?.length > 0);
    if (rule === undefined) continue;
    reviews.push({
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user,
        groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"],
        resourceAttributes: {
          verb: rule.verbs[0] === "*" ? "get" : rule.verbs[0],
          group: rule.apiGroups?.[0] === "*" ? "" : (rule.apiGroups?.[0] ?? ""),
          resource: rule.resources[0] === "*" ? "configmaps" : String(rule.resources[0]).split("/")[0],
          ...(String(rule.resources[0]).includes("/") ? { subresource: String(rule.resources[0]).split("/")[1] } : {}),
          ...(rule.resourceNames?.[0] === undefined ? {} : { name: rule.resourceNames[0] }),
          ...(b.kind === "RoleBinding" ? { namespace: b.metadata.namespace } : {}),
        },
      },
    });
  }
  const deadline = Date.now() + 10_000;
  for (const review of reviews) {
    for (;;) {
      const r = await request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", { body: review });
      if (r.body?.status?.allowed === true) break;
      if (Date.now() > deadline) throw new Error(`RBAC did not take effect for ${user}: ${JSON.stringify(review.spec.resourceAttributes)} → ${r.text}`);
      await new Promise((res) => setTimeout(res, 50));
    }
  }
}
