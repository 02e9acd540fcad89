/**
 * `npm run bench -- audit [--runs N]`: the audit writer at fleet scale (#39 item 2) beside the git CLI
 * writing and pushing the same tree, in the same run, alternated.
 *
 * - Output: AUDIT_CLUSTERS clusters (default 1,000) × 5 services, shaped like the simulator's fleet: per
 *   cluster 5 service namespaces with a VirtualService, DestinationRule, ServiceEntry, AuthorizationPolicy,
 *   Sidecar, PeerAuthentication, RequestAuthentication, Telemetry, WasmPlugin, EnvoyFilter, ServiceAccount,
 *   Service, ConfigMap, Gateway and a few more per service, istio-system and `_cluster` objects, and a
 *   discovery snapshot — about 110 Git objects per cluster.
 * - gitmesh: `createAuditWriter` to a local bare repository, and to a remote over smart HTTP (the Git
 *   server in a process of its own, git-server-child.ts): the first audit commit (empty branch), then a
 *   commit where one resource of one cluster changed.
 * - floor: `git fast-import` of exactly the bytes the writer committed (the YAML serialised before the
 *   clock starts — git does not render YAML) into a fresh bare repository, then `git push` of that branch
 *   to a fresh repository on the same server; then the same one-file change (fast-import, push).
 * - the YAML serialisation alone (canonicalYaml of every object, what the writer does before any Git
 *   work), and the writer's first commit again with its YAML cache warm (the branch and its packs
 *   deleted from the local repository in between): the Git part alone, beside fast-import.
 * Rounds alternate which side goes first; ratios are medians of per-round ratios.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { canonicalYaml, silentLogger } from "../../src/core/index.js";
import { createBareRepo } from "../../src/devtools/index.js";
import { createAuditWriter, discoveryPath, renderedPath, type AuditInput, type RenderedResource } from "../../src/git-sync/index.js";
import { median, round, time, type Benchmark, type Figure } from "../harness.js";
import { startServerProcess } from "./server-process.js";

const exec = promisify(execFile);
const CLUSTERS = Number(process.env.AUDIT_CLUSTERS ?? 1000);
const SERVICES = 5;
/** The cluster whose one resource changes in the later commit. */
const EDITED = Math.min(42, CLUSTERS - 1);
const editedName = `cluster-${String(EDITED).padStart(4, "0")}`;
const BRANCH = "gitmesh/rendered";
const gitEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0", HOME: tmpdir() };

const KINDS = ["VirtualService", "DestinationRule", "ServiceEntry", "AuthorizationPolicy", "Sidecar", "PeerAuthentication", "RequestAuthentication", "Telemetry", "WasmPlugin", "EnvoyFilter", "ServiceAccount", "Service", "ConfigMap", "Gateway"];

function resourcesOf(cluster: string, c: number, edit: number): RenderedResource[] {
  const labels = { "gitmesh.io/managed": "true", "gitmesh.io/cluster": cluster, "gitmesh.io/workspace": `ws-${c % 20}` };
  const out: RenderedResource[] = [];
  for (let s = 0; s < SERVICES; s++) {
    const ns = `team-${s}`;
    const host = `svc-${s}.${ns}.svc.cluster.local`;
    for (const [k, kind] of KINDS.entries()) {
      for (let v = 0; v < (k < 3 ? 2 : 1); v++) {
        out.push({
          apiVersion: "networking.istio.io/v1",
          kind,
          metadata: { name: `svc-${s}-${kind.toLowerCase()}-${v}`, namespace: ns, labels, annotations: { "gitmesh.io/source": `workspaces/ws-${c % 20}/${ns}/routes.yaml` } },
          spec: {
            hosts: [host, `svc-${s}.mesh.internal`],
            revision: c === EDITED && s === 1 && k === 0 && v === 0 ? edit : 0,
            http: [{ name: "main", match: [{ uri: { prefix: `/api/v${v}` } }], route: [{ destination: { host, port: { number: 8080 }, subset: `v${v}` }, weight: 100 }], retries: { attempts: 3, perTryTimeout: "2s" } }],
          },
        });
      }
    }
  }
  for (const kind of ["PeerAuthentication", "Telemetry", "EnvoyFilter", "Gateway"]) {
    out.push({ apiVersion: "security.istio.io/v1", kind, metadata: { name: `mesh-${kind.toLowerCase()}`, namespace: "istio-system", labels }, spec: { mtls: { mode: "STRICT" } } });
  }
  for (let s = 0; s < SERVICES; s++) out.push({ apiVersion: "v1", kind: "Namespace", metadata: { name: `team-${s}`, labels: { "istio-injection": "enabled" } } });
  return out;
}

function fleet(): { base: Map<string, RenderedResource[]>; discovery: Map<string, unknown> } {
  const base = new Map<string, RenderedResource[]>();
  const discovery = new Map<string, unknown>();
  for (let c = 0; c < CLUSTERS; c++) {
    const cluster = `cluster-${String(c).padStart(4, "0")}`;
    base.set(cluster, resourcesOf(cluster, c, 0));
    discovery.set(cluster, {
      cluster,
      namespaces: Array.from({ length: SERVICES }, (_, s) => ({ name: `team-${s}`, labels: { "istio-injection": "enabled" } })),
      services: Array.from({ length: SERVICES }, (_, s) => ({ name: `svc-${s}`, namespace: `team-${s}`, ports: [{ name: "http", port: 8080 }], endpoints: Array.from({ length: 3 }, (_, e) => `10.${c % 250}.${s}.${e}`) })),
    });
  }
  return { base, discovery };
}

/** The files of an audit commit as the writer commits them (without the manifest, which fast-import gets too). */
function filesOf(input: AuditInput): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const [cluster, rs] of input.clusters) for (const r of rs) files.set(renderedPath(cluster, r), Buffer.from(canonicalYaml(r)));
  for (const [cluster, d] of input.discovery) files.set(discoveryPath(cluster), Buffer.from(canonicalYaml(d)));
  const manifest = [...files.keys()].sort().join("\n") + "\n";
  files.set(".gitmesh/generated-files", Buffer.from(manifest));
  return files;
}

function fastImportStream(files: ReadonlyMap<string, Buffer>, parent: string | undefined, when: number): Buffer {
  const chunks: Buffer[] = [Buffer.from(`commit refs/heads/${BRANCH}\ncommitter gitmesh <gitmesh@localhost> ${when} +0000\ndata 7\nrender\n`)];
  if (parent !== undefined) chunks.push(Buffer.from(`from ${parent}\n`));
  for (const [path, bytes] of files) {
    chunks.push(Buffer.from(`M 100644 inline ${path}\ndata ${bytes.length}\n`), bytes, Buffer.from("\n"));
  }
  chunks.push(Buffer.from("done\n"));
  return Buffer.concat(chunks);
}

function runWithInput(args: readonly string[], input: Buffer, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("git", args, { env, stdio: ["pipe", "ignore", "pipe"] });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`git ${args.join(" ")}: ${err}`))));
    child.stdin.end(input);
  });
}

interface Round {
  oursLocalFirst: number;
  oursLocalOne: number;
  oursRemoteFirst: number;
  oursRemoteOne: number;
  floorLocalFirst: number;
  floorLocalOne: number;
  floorPushFirst: number;
  floorPushOne: number;
  yaml: number;
  oursLocalGitOnly: number;
}

export const benchmark: Benchmark = {
  name: "audit",
  description: `audit writer, ${CLUSTERS} clusters × ${SERVICES} services: first commit and a one-resource commit, local and pushed over HTTP, beside git fast-import + git push of the same tree (alternated)`,
  async run({ runs, log }) {
    const root = mkdtempSync(join(tmpdir(), "bench-audit-srv-"));
    const tmp: string[] = [root];
    const dir = (p: string) => {
      const d = mkdtempSync(join(tmpdir(), p));
      tmp.push(d);
      return d;
    };
    let stop = (): void => undefined;
    try {
      const serverProcess = await startServerProcess(root);
      stop = () => serverProcess.child.stdin!.end();
      const { base, discovery } = fleet();
      const input = (edit: number): AuditInput => {
        let clusters = base;
        if (edit !== 0) {
          clusters = new Map(base);
          const rs = [...base.get(editedName)!];
          const fresh = resourcesOf(editedName, EDITED, edit);
          const i = fresh.findIndex((r, j) => JSON.stringify(r) !== JSON.stringify(rs[j]));
          rs[i] = fresh[i]!;
          clusters.set(editedName, rs);
        }
        return { clusters, discovery, sourceCommit: String(edit).padStart(40, "0"), sourceRef: "refs/heads/main", timestamp: 1_700_000_000 + edit };
      };
      const objects = [...base.values()].reduce((n, rs) => n + rs.length, 0) + discovery.size;
      const load = () => round(loadavg()[0]!, 1);
      const loadBefore = load();
      log(`${CLUSTERS} clusters, ${objects} files; load ${loadBefore}`);
      const rounds: Round[] = [];
      let objectCount = 0;
      for (let i = 0; i < Math.max(1, runs); i++) {
        const r: Partial<Round> = {};
        const ours = async () => {
          const local = await createBareRepo(root, `ours-local-${i}`);
          const w = createAuditWriter({ target: { kind: "local", path: local }, logger: silentLogger });
          r.oursLocalFirst = (await time(() => w.write(input(0)))).ms;
          const one = await time(() => w.write(input(1)));
          if (one.result.changes.length !== 1) throw new Error("expected one changed cluster");
          r.oursLocalOne = one.ms;
          await createBareRepo(root, `ours-remote-${i}`);
          const rw = createAuditWriter({ target: { kind: "remote", url: `${serverProcess.baseUrl}/ours-remote-${i}.git`, cacheDir: dir("bench-audit-cache-") }, logger: silentLogger });
          r.oursRemoteFirst = (await time(() => rw.write(input(0)))).ms;
          r.oursRemoteOne = (await time(() => rw.write(input(1)))).ms;
          objectCount = Number((await exec("git", ["--git-dir", local, "count-objects", "-v"], { env: gitEnv })).stdout.match(/in-pack: (\d+)/)?.[1] ?? 0) || objectCount;
          // same content as the floor's?
          const theirs = (await exec("git", ["--git-dir", local, "rev-parse", `${BRANCH}^{tree}`], { env: gitEnv })).stdout.trim();
          const pushed = (await exec("git", ["--git-dir", join(root, `ours-remote-${i}.git`), "rev-parse", `${BRANCH}^{tree}`], { env: gitEnv })).stdout.trim();
          if (theirs !== pushed) throw new Error("local and pushed trees differ");
          // the Git part alone: the same first commit with every YAML serialisation cached
          const warm = createAuditWriter({ target: { kind: "local", path: local }, logger: silentLogger });
          await warm.write(input(0));
          rmSync(join(local, "refs", "heads", BRANCH));
          for (const f of readdirSync(join(local, "objects", "pack"))) rmSync(join(local, "objects", "pack", f), { force: true });
          const again = await time(() => warm.write(input(0)));
          if (again.result.commit === undefined) throw new Error("the warm rewrite made no commit");
          r.oursLocalGitOnly = again.ms;
        };
        const floor = async () => {
          const t0 = performance.now();
          const files0 = filesOf(input(0));
          const files1 = new Map(files0);
          for (const [p, b] of filesOf(input(1))) if (!b.equals(files0.get(p)!)) files1.set(p, b);
          const changed = new Map([...files1].filter(([p, b]) => b !== files0.get(p)));
          r.yaml = performance.now() - t0;
          const repo = join(dir("bench-audit-floor-"), "floor.git");
          await exec("git", ["init", "--quiet", "--bare", repo], { env: gitEnv });
          const env = { ...gitEnv, GIT_DIR: repo };
          r.floorLocalFirst = (await time(() => runWithInput(["fast-import", "--quiet", "--done"], fastImportStream(files0, undefined, 1_700_000_000), env))).ms;
          await createBareRepo(root, `floor-remote-${i}`);
          const url = `${serverProcess.baseUrl}/floor-remote-${i}.git`;
          r.floorPushFirst = (await time(() => exec("git", ["--git-dir", repo, "push", "--quiet", url, `${BRANCH}:${BRANCH}`], { env: gitEnv }))).ms;
          const parent = (await exec("git", ["--git-dir", repo, "rev-parse", BRANCH], { env: gitEnv })).stdout.trim();
          r.floorLocalOne = (await time(() => runWithInput(["fast-import", "--quiet", "--done"], fastImportStream(changed, parent, 1_700_000_001), env))).ms;
          r.floorPushOne = (await time(() => exec("git", ["--git-dir", repo, "push", "--quiet", url, `${BRANCH}:${BRANCH}`], { env: gitEnv }))).ms;
        };
        if (i % 2 === 0) {
          await ours();
          await floor();
        } else {
          await floor();
          await ours();
        }
        const done = r as Round;
        rounds.push(done);
        log(
          `round ${i + 1}: ours local ${round(done.oursLocalFirst)} (YAML cached ${round(done.oursLocalGitOnly)}) / one ${round(done.oursLocalOne)} ms, remote ${round(done.oursRemoteFirst)} / one ${round(done.oursRemoteOne)} ms; ` +
            `floor fast-import ${round(done.floorLocalFirst)} / one ${round(done.floorLocalOne)} ms, push ${round(done.floorPushFirst)} / one ${round(done.floorPushOne)} ms; yaml ${round(done.yaml)} ms; load ${load()}`,
        );
      }
      const m = (k: keyof Round) => round(median(rounds.map((r) => r[k])));
      const ratio = (a: (r: Round) => number, b: (r: Round) => number) => round(median(rounds.map((r) => a(r) / b(r))), 2);
      const figures: Figure[] = [
        { label: `audit ${CLUSTERS} × ${SERVICES}: rounds (alternated)`, value: rounds.length, unit: `load average ${loadBefore} → ${load()}; ${objects} files, ${objectCount} objects in the local repository` },
        { label: "canonicalYaml of every object (part of the writer's first commit)", value: m("yaml"), unit: "ms" },
        { label: "first commit, local: gitmesh audit writer", value: m("oursLocalFirst"), unit: "ms" },
        { label: "first commit, local: git fast-import of the same files (floor)", value: m("floorLocalFirst"), unit: "ms" },
        { label: "first commit, local: ratio gitmesh / fast-import", value: ratio((r) => r.oursLocalFirst, (r) => r.floorLocalFirst), unit: "x" },
        { label: "first commit, local, YAML cached (the Git part): gitmesh", value: m("oursLocalGitOnly"), unit: "ms" },
        { label: "first commit, local, YAML cached: ratio gitmesh / fast-import", value: ratio((r) => r.oursLocalGitOnly, (r) => r.floorLocalFirst), unit: "x" },
        { label: "first commit, remote: gitmesh audit writer (write + push over HTTP)", value: m("oursRemoteFirst"), unit: "ms" },
        { label: "first commit, remote: fast-import + git push (floor)", value: round(median(rounds.map((r) => r.floorLocalFirst + r.floorPushFirst))), unit: `ms (push alone ${m("floorPushFirst")} ms)` },
        { label: "first commit, remote: ratio gitmesh / (fast-import + push)", value: ratio((r) => r.oursRemoteFirst, (r) => r.floorLocalFirst + r.floorPushFirst), unit: "x" },
        { label: "one-resource commit, local: gitmesh", value: m("oursLocalOne"), unit: "ms" },
        { label: "one-resource commit, local: git fast-import (floor)", value: m("floorLocalOne"), unit: "ms" },
        { label: "one-resource commit, remote: gitmesh", value: m("oursRemoteOne"), unit: "ms" },
        { label: "one-resource commit, remote: fast-import + git push (floor)", value: round(median(rounds.map((r) => r.floorLocalOne + r.floorPushOne))), unit: "ms" },
        { label: "one-resource commit, remote: ratio gitmesh / floor", value: ratio((r) => r.oursRemoteOne, (r) => r.floorLocalOne + r.floorPushOne), unit: "x" },
      ];
      return figures;
    } finally {
      stop();
      for (const d of tmp) rmSync(d, { recursive: true, force: true });
    }
  },
};
