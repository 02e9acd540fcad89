// `gitmesh agent` as a separate process (bin/gitmesh.js) against the emulator (through a written
// kubeconfig) and a real relay server on loopback: it registers, reports discovery, applies an
// output and ACKs it, and exits cleanly on SIGTERM.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { createMemoryLogger } from "../../src/core/index.js";
import { createRelayServer, generateRelayPki, type OutputAckEvent, type RelayServer } from "../../src/relay/index.js";
import { eventually, startKube, type StartedKube } from "../helpers/kube.js";
import { agentClusterSeed, dr, vs } from "./helpers.js";

const TOKEN = "bootstrap-token-cli-0123456789abcdef";
const BIN = fileURLToPath(new URL("../../bin/gitmesh.js", import.meta.url));
const enc = new TextEncoder();

let kube: StartedKube;
let server: RelayServer;
let tmp: string;
let child: ChildProcess | undefined;
let output = "";
const acks: OutputAckEvent[] = [];

beforeAll(async () => {
  const pki = generateRelayPki({ additionalSans: ["127.0.0.1"] });
  kube = await startKube({
    seed: await agentClusterSeed("cluster1", { rootCaPem: pki.rootCaCertPem, token: TOKEN }),
  });
  server = createRelayServer({
    pki,
    token: TOKEN,
    isClusterRegistered: (c) => c === "cluster1",
    logger: createMemoryLogger("relay-server").logger,
    registry: new Registry(),
    host: "127.0.0.1",
    port: 0,
    onAck: (e) => acks.push(e),
  });
  const port = await server.start();
  tmp = await mkdtemp(join(tmpdir(), "gitmesh-agent-cli-"));
  const kubeconfig = join(tmp, "kubeconfig");
  await writeFile(kubeconfig, kube.emulator.kubeconfig());
  // a clean environment: only flags configure this agent
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GITMESH_")));
  child = spawn(process.execPath, [BIN, "agent", "--relay-address", `127.0.0.1:${String(port)}`, "--cluster", "cluster1", "--kubeconfig", kubeconfig, "--http-port", "0", "--identity", "cli-agent"], { env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
});

afterAll(async () => {
  const c = child;
  if (c && c.exitCode === null && c.signalCode === null) {
    const exited = new Promise((resolve) => c.once("exit", resolve));
    c.kill("SIGTERM");
    const timer = setTimeout(() => c.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
  await server.stop();
  await kube.stop();
  await rm(tmp, { recursive: true, force: true });
});

describe("gitmesh agent (separate process)", () => {
  it("--rate-limit-config-namespaces is read and checked before anything starts: a bad name is a usage error naming the flag and the chart value", () => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("GITMESH_")));
    const r = spawnSync(process.execPath, [BIN, "agent", "--relay-address", "127.0.0.1:1", "--cluster", "cluster1", "--rate-limit-config-namespaces", "gloo-mesh-addons,Not_A_Namespace"], { env, encoding: "utf8", timeout: 30_000 });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain('rate-limit config namespace "Not_A_Namespace" is not a namespace name (--rate-limit-config-namespaces');
    expect(r.stderr).toContain("rateLimit.configNamespaces");
    expect(r.stderr).not.toContain("gloo-mesh-addons\" is not");
  });

  it("registers, reports discovery, applies an output and ACKs it, and stops on SIGTERM", async () => {
    const why = () => `agent output:\n${output.slice(-4000)}`;
    const secret = await eventually("client certificate stored", () => kube.emulator.get("v1", "Secret", "gitmesh", "relay-client-tls-secret"), 30_000).catch((e: unknown) => {
      throw new Error(`${String(e)}\n${why()}`);
    });
    expect(Buffer.from((secret.data as Record<string, string>)["tls.crt"]!, "base64").toString()).toContain("BEGIN CERTIFICATE");

    const state = await eventually("discovery at the server", () => {
      const s = server.discoveryState("cluster1");
      return s?.state.has("service/bookinfo-frontends/productpage") ? s.state : undefined;
    }, 30_000);
    expect(state.has("snapshot")).toBe(true);
    expect([...state.keys()].some((k) => k.startsWith("mesh/istio-system/"))).toBe(true);

    const objs = [vs("reviews", "bookinfo", "reviews"), dr("reviews", "bookinfo", "reviews")];
    server.publishOutput("cluster1", { version: 1, sourceCommit: "c1", complete: true, resources: new Map(objs.map((o) => [`${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`, enc.encode(JSON.stringify(o))])) });
    await eventually("v1 acked", () => acks.find((a) => a.cluster === "cluster1" && a.version === 1), 30_000);
    const live = kube.emulator.get("networking.istio.io/v1", "VirtualService", "bookinfo", "reviews");
    expect(live?.metadata).toMatchObject({ labels: { "gitmesh.io/managed": "true", "gitmesh.io/cluster": "cluster1" } });

    // a discovery change follows as a delta
    kube.emulator.seed([{ apiVersion: "v1", kind: "Service", metadata: { name: "late", namespace: "bookinfo-backends" }, spec: { ports: [{ port: 80 }] } }]);
    await eventually("delta at the server", () => server.discoveryState("cluster1")?.state.has("service/bookinfo-backends/late"), 30_000);

    const c = child!;
    const code = new Promise<number | null>((resolve) => c.once("exit", (n) => resolve(n)));
    c.kill("SIGTERM");
    expect(await code).toBe(0);
  });
});
