/**
 * The rendered change between two commits of the configuration repository, for the API and the UI
 * (`GET /api/diff?base=<sha>&head=<sha>`): the same report as `gitmesh diff` — both revisions read
 * from Git, each translated against the discovery the server holds now, compared per cluster and
 * object (git-sync's compareRenders, renderJson).
 *
 * Base is translated in full and head incrementally from it (src/translate's loadRevisions +
 * renderRevisions, as `gitmesh diff` does: only the files that differ are parsed again, only the
 * workspaces they touch translated again, and what head kept is skipped by identity when compared).
 * That is still a full translation on a large fleet — seconds of synchronous work — so it runs in a
 * worker thread (diff-worker.ts), never on the thread that serves the relay, the webhooks and the
 * health checks. The worker is started at the first diff and kept; it holds the discovery it was
 * sent (a snapshot per message), and a later diff sends only the clusters whose discovery checksum changed;
 * after `idleMs` without a diff it stops and gives that memory back. Its heap is capped
 * (`maxMemoryMb`): a diff that needs more fails alone (503) and the next one gets a new worker.
 * Diffs run one at a time and the last few answers are kept (keyed by the two commits and the
 * discovery checksums: a discovery change makes a new diff). A remote repository is read through a
 * cache of its own (`<dataDir>/diff.git`), never the live source's, so a diff cannot disturb the
 * sync in progress.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { describeError, type Logger } from "../core/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import { discoveryDigest, GitRefNotFoundError, readRevisionFiles, readStoredRender, resolveRevision, type GitLocation, type HttpClient } from "../git-sync/index.js";
import type { DiffAnswer, DiffMessage, DiffRevision } from "./diff-render.js";
import { HttpError } from "./http.js";

/** Default cap of the diff worker's heap (MiB): a 100-cluster, 1,000-services-per-cluster fleet's diff peaks near 700. */
export const DEFAULT_DIFF_MAX_MEMORY_MB = 2048;

/** Default limit of one diff's rendering (seconds): a 100-cluster fleet's first diff takes ~10 s in the worker. */
export const DEFAULT_DIFF_TIMEOUT_SECONDS = 300;

/** Diffs that may wait behind the one rendering; more are answered 503 at once. */
export const DEFAULT_DIFF_MAX_WAITING = 8;

export interface DiffServiceOptions {
  readonly location: GitLocation;
  /** HTTP client for a remote repository (default: git-sync's, with its idle timeout). */
  readonly http?: HttpClient;
  readonly subPath?: string;
  /** Discovery per cluster, as the server holds it. */
  readonly discovery: () => Promise<readonly { readonly cluster: string; readonly checksum: string; readonly snapshot: DiscoverySnapshot }[]>;
  /**
   * The audit branch this server writes (its git directory: the local repository's, or the audit writer's cache):
   * a base commit whose render record it holds for the discovery the server holds now is not translated again
   * (only what the change reaches is; the report is the same). Absent: every diff translates its base.
   */
  readonly storedRenders?: { readonly gitdir: string; readonly branch: string };
  /** Answers kept (default 8). */
  readonly keep?: number;
  /** Heap of the diff worker thread, MiB (default DEFAULT_DIFF_MAX_MEMORY_MB). */
  readonly maxMemoryMb?: number;
  /** The worker stops after this long without a diff, giving back its copy of discovery (default 5 minutes). */
  readonly idleMs?: number;
  /** A rendering that takes longer is stopped (the worker with it) and answered 503 (default DEFAULT_DIFF_TIMEOUT_SECONDS). */
  readonly timeoutMs?: number;
  /** Diffs that may wait behind the one in progress; more are answered 503 (default DEFAULT_DIFF_MAX_WAITING). */
  readonly maxWaiting?: number;
  /** Commits the server has read (newest first), for abbreviated SHAs of a remote repository, which has no local object store to search. */
  readonly knownCommits?: () => readonly string[];
  readonly logger: Logger;
}

export interface DiffService {
  /**
   * The JSON report (renderJson's shape) of `base` → `head`, each a revision as `gitmesh diff` takes it:
   * a full or abbreviated SHA, a branch or a tag (a local repository also takes HEAD~1, A...B and the
   * rest of gitrevisions). A malformed revision is a 400, one the repository does not have a 404, each naming it.
   */
  diff(base: string, head: string): Promise<unknown>;
  /** Stops the worker thread (a diff in progress fails). */
  close(): Promise<void>;
}

const FULL_SHA = /^[0-9a-f]{40}$/;

export function createDiffService(options: DiffServiceOptions): DiffService {
  const keep = options.keep ?? 8;
  const cache = new Map<string, unknown>();
  const runner = createDiffRunner(options.maxMemoryMb ?? DEFAULT_DIFF_MAX_MEMORY_MB, options.idleMs ?? 300_000, options.timeoutMs ?? DEFAULT_DIFF_TIMEOUT_SECONDS * 1000, options.logger);
  const maxWaiting = options.maxWaiting ?? DEFAULT_DIFF_MAX_WAITING;
  let queue: Promise<unknown> = Promise.resolve();
  // Diffs asked for and not answered yet (the one rendering and those waiting behind it).
  let pending = 0;
  const read = async (ref: string): Promise<DiffRevision> => {
    try {
      const rev = await readRevisionFiles({ location: options.location, ref, logger: options.logger, retry: { attempts: 2 }, ...(options.subPath === undefined ? {} : { subPath: options.subPath }), ...(options.http === undefined ? {} : { http: options.http }) });
      return { ref, commit: rev.commit.oid, files: rev.files, message: rev.commit.message };
    } catch (err) {
      if (err instanceof GitRefNotFoundError) throw new HttpError(404, `commit ${ref} is not in the configuration repository`);
      throw err;
    }
  };
  // Digest of each cluster's discovery, by checksum (canonical JSON of a large snapshot is not free).
  const digests = new Map<string, { readonly checksum: string; readonly digest: string }>();
  const storedRecord = async (commit: string, discovery: readonly { readonly cluster: string; readonly checksum: string; readonly snapshot: DiscoverySnapshot }[]): Promise<unknown> => {
    const at = options.storedRenders;
    if (at === undefined) return undefined;
    const now = new Map<string, string>();
    for (const d of discovery) {
      let known = digests.get(d.cluster);
      if (known?.checksum !== d.checksum) digests.set(d.cluster, (known = { checksum: d.checksum, digest: discoveryDigest(d.snapshot) }));
      now.set(d.cluster, known.digest);
    }
    for (const c of [...digests.keys()]) if (!now.has(c)) digests.delete(c);
    try {
      const found = await readStoredRender({ gitdir: at.gitdir, branch: at.branch, sourceCommit: commit, discovery: { digests: now } });
      if ("stored" in found) {
        options.logger.debug("diff: base from the audit branch's render record", { base: commit, auditCommit: found.stored.auditCommit });
        return found.stored.render;
      }
      options.logger.debug("diff: base translated", { base: commit, why: found.why });
    } catch (err) {
      options.logger.warn("diff: reading the audit branch's render record failed; the base is translated", { base: commit, error: describeError(err) });
    }
    return undefined;
  };
  /**
   * A revision as the user wrote it → a full SHA, or (a remote repository's branch or tag) the name to
   * fetch. A local repository resolves every spelling the CLI takes (src/git-sync/revisions.ts); a remote
   * one takes full SHAs, abbreviations of commits the server has read, and branch and tag names, as
   * `gitmesh diff --repo <url>` does.
   */
  const resolve = async (which: "base" | "head", raw: string): Promise<{ readonly oid: string } | { readonly ref: string }> => {
    const spec = raw.trim();
    if (spec === "") throw new HttpError(400, `${which} is empty: give a commit SHA (full or abbreviated), a branch or a tag; GET /api/commits lists the commits`);
    if (spec.length > 250 || /[\s\x00-\x1f\x7f:?*[\\]|(?<!\.)\.\.(?!\.)|@\{|^[-/]|\/$|\.lock$/.test(spec)) throw new HttpError(400, `${which}: ${JSON.stringify(spec.slice(0, 60))} is not a revision (a commit SHA, a branch or a tag name)`);
    if (FULL_SHA.test(spec.toLowerCase())) return { oid: spec.toLowerCase() };
    const { location } = options;
    if (location.kind === "local") {
      try {
        return { oid: (await resolveRevision(gitdirOf(location.path), spec)).oid };
      } catch (err) {
        if (err instanceof GitRefNotFoundError) throw new HttpError(/ambiguous/.test(err.message) ? 400 : 404, `${which}: ${err.message}`);
        throw err;
      }
    }
    if (/^[0-9a-f]{4,39}$/i.test(spec)) {
      const matches = [...new Set((options.knownCommits?.() ?? []).filter((c) => c.startsWith(spec.toLowerCase())))];
      if (matches.length === 1) return { oid: matches[0]! };
      if (matches.length > 1) throw new HttpError(400, `${which}: ${spec} is ambiguous (${matches.map((m) => m.slice(0, 12)).join(", ")}); give more characters`);
      // Not a commit the server read: it may still be a branch or tag with a hex-looking name.
    }
    if (/[~^]|\.\.\.|^HEAD$|^@$/.test(spec)) throw new HttpError(400, `${which}: ${spec}: relative revisions need a local repository; this server reads a remote one: give a branch, a tag or a commit SHA`);
    return { ref: spec };
  };
  const compute = async (baseSpec: string, headSpec: string): Promise<unknown> => {
    const [b, h] = [await resolve("base", baseSpec), await resolve("head", headSpec)];
    // A branch or tag of a remote repository is read first: its commit is what the answer is kept under.
    const readAs = async (which: "base" | "head", spec: string, r: { readonly oid: string } | { readonly ref: string }) => {
      if ("oid" in r) return undefined;
      try {
        return await read(r.ref);
      } catch (err) {
        if (err instanceof HttpError && err.status === 404) throw new HttpError(404, `${which}: unknown revision ${spec}: no such branch, tag or commit in the configuration repository`);
        throw err;
      }
    };
    const [baseRead, headRead] = [await readAs("base", baseSpec, b), await readAs("head", headSpec, h)];
    const base = baseRead?.commit ?? ("oid" in b ? b.oid : "");
    const head = headRead?.commit ?? ("oid" in h ? h.oid : "");
    const discovery = await options.discovery();
    const key = `${base}..${head}|${discovery.map((d) => `${d.cluster}:${d.checksum}`).sort().join(",")}`;
    if (cache.has(key)) return cache.get(key);
    const baseRevision = baseRead ?? (await read(base));
    const record = await storedRecord(baseRevision.commit, discovery);
    const report = JSON.parse(await runner.run(baseRevision, headRead ?? (await read(head)), discovery, record)) as unknown;
    cache.set(key, report);
    while (cache.size > keep) cache.delete(cache.keys().next().value!);
    return report;
  };
  return {
    diff(base, head) {
      // One at a time: a second request waits for the first (and then usually finds it cached). The wait is
      // bounded: a burst of diffs (a page reloaded many times, a script) is refused rather than held in memory
      // and answered minutes later.
      if (pending > maxWaiting) {
        options.logger.warn("diff refused: too many diffs waiting", { waiting: pending - 1, maxWaiting });
        const waiting = pending - 1;
        return Promise.reject(new HttpError(503, `${waiting === 1 ? "1 diff is" : `${waiting} diffs are`} waiting to be rendered, one at a time; try again when they are done`));
      }
      pending++;
      const run = queue.then(() => compute(base, head)).finally(() => pending--);
      queue = run.catch(() => undefined);
      return run;
    },
    close: () => runner.close(),
  };
}

interface DiffRunner {
  run(base: DiffRevision, head: DiffRevision, discovery: readonly { readonly cluster: string; readonly checksum: string; readonly snapshot: DiscoverySnapshot }[], record?: unknown): Promise<string>;
  close(): Promise<void>;
}

/** The worker thread, started on first use and replaced after it fails; one diff at a time (the service queues). */
function createDiffRunner(maxMemoryMb: number, idleMs: number, timeoutMs: number, log: Logger): DiffRunner {
  // In a checkout (tsx, vitest) this module is TypeScript and so is the worker's entry; the image runs dist/.
  const typescript = import.meta.url.endsWith(".ts");
  const entry = new URL(typescript ? "./diff-worker.ts" : "./diff-worker.js", import.meta.url);
  let current: { readonly worker: Worker; readonly held: Map<string, string> } | undefined;
  let nextId = 1;
  let closed = false;
  let idle: NodeJS.Timeout | undefined;

  const start = () => {
    // A worker does not inherit the main thread's module hooks: in a checkout it registers tsx itself, as
    // bin/gitmesh.js does, before it loads the TypeScript entry.
    const source = typescript
      ? `import(${JSON.stringify(tsxApiUrl())}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`
      : undefined;
    const worker = new Worker(source ?? entry, {
      name: "gitmesh-diff",
      eval: source !== undefined,
      resourceLimits: { maxOldGenerationSizeMb: maxMemoryMb },
      stdout: false,
      stderr: false,
    });
    // Idle, it does not keep the process alive; a diff in progress holds a promise the HTTP request waits on.
    worker.unref();
    const handle = { worker, held: new Map<string, string>() };
    current = handle;
    return handle;
  };
  const discard = (handle: { readonly worker: Worker }) => {
    if (current?.worker === handle.worker) current = undefined;
    void handle.worker.terminate();
  };

  return {
    run(base, head, discovery, record) {
      if (closed) return Promise.reject(new HttpError(503, "the server is stopping; no diff is rendered"));
      clearTimeout(idle);
      const handle = current ?? start();
      const id = nextId++;
      const request: DiffMessage = { kind: "diff", id, base, head, clusters: discovery.map((d) => [d.cluster, d.checksum] as const), ...(record === undefined ? {} : { record }) };
      return new Promise<string>((resolve, reject) => {
        let settled = false;
        const settle = () => {
          settled = true;
          clearTimeout(timer);
          handle.worker.off("message", onMessage);
          handle.worker.off("error", onError);
          handle.worker.off("exit", onExit);
        };
        // A rendering that does not end (a bug, a fleet far larger than the server was sized for) would hold every
        // diff behind it: it is stopped with its worker, and the next diff starts a new one.
        const timer = setTimeout(() => {
          if (settled) return;
          settle();
          discard(handle);
          log.warn("diff stopped: rendering took too long; the next diff starts a new worker", { base: base.ref, head: head.ref, timeoutSeconds: timeoutMs / 1000 });
          reject(
            new HttpError(503, `rendering ${base.ref.slice(0, 12)}..${head.ref.slice(0, 12)} took longer than ${timeoutMs / 1000} s and was stopped; raise GITMESH_DIFF_TIMEOUT_SECONDS (Helm: diff.timeoutSeconds), or render it with \`gitmesh diff\` in CI`),
          );
        }, timeoutMs);
        const onMessage = (answer: DiffAnswer) => {
          if (answer.id !== id) return;
          settle();
          if ("report" in answer) return resolve(answer.report);
          // A bug in translation or comparison: answered 500 and logged by the HTTP edge. The worker is replaced,
          // so that nothing it holds outlives an exception.
          discard(handle);
          const err = new Error(`rendering the diff ${base.ref.slice(0, 12)}..${head.ref.slice(0, 12)} failed: ${answer.error.message}`);
          if (answer.error.stack !== undefined) err.stack = `${err.name}: ${err.message}\n(diff worker) ${answer.error.stack}`;
          reject(err);
        };
        const onError = (err: Error) => {
          settle();
          discard(handle);
          if ((err as { code?: unknown }).code === "ERR_WORKER_OUT_OF_MEMORY") {
            log.warn("diff worker ran out of memory; the diff is refused and the next diff starts a new worker", { base: base.ref, head: head.ref, maxMemoryMb });
            return reject(
              new HttpError(503, `rendering ${base.ref.slice(0, 12)}..${head.ref.slice(0, 12)} needs more memory than the diff worker may use (${maxMemoryMb} MiB); raise GITMESH_DIFF_MAX_MEMORY_MB (Helm: diff.maxMemoryMb) together with the server's memory limit, or render it with \`gitmesh diff\` in CI`),
            );
          }
          log.error("diff worker failed", { base: base.ref, head: head.ref, error: describeError(err) });
          reject(err);
        };
        const onExit = (code: number) => {
          settle();
          discard(handle);
          reject(closed ? new HttpError(503, "the server is stopping; no diff is rendered") : new Error(`the diff worker exited (code ${code}) while rendering ${base.ref.slice(0, 12)}..${head.ref.slice(0, 12)}`));
        };
        handle.worker.on("message", onMessage);
        handle.worker.on("error", onError);
        handle.worker.on("exit", onExit);
        handle.worker.ref();
        const send = async () => {
          // The snapshots the worker lacks, one per message with a turn of the event loop between them: copying a
          // 100-cluster discovery in one message held this thread 0.8 s.
          for (const d of discovery) {
            if (settled) return;
            if (handle.held.get(d.cluster) === d.checksum) continue;
            handle.worker.postMessage({ kind: "snapshot", cluster: d.cluster, checksum: d.checksum, snapshot: d.snapshot } satisfies DiffMessage);
            handle.held.set(d.cluster, d.checksum);
            await new Promise((next) => setImmediate(next));
          }
          if (settled) return;
          handle.worker.postMessage(request);
          // The worker forgets the clusters this diff does not name; so does what is known of it here.
          const wanted = new Set(discovery.map((d) => d.cluster));
          for (const cluster of [...handle.held.keys()]) if (!wanted.has(cluster)) handle.held.delete(cluster);
        };
        send().catch((err: unknown) => {
          if (settled) return;
          settle();
          discard(handle);
          reject(err instanceof Error ? err : new Error(String(err)));
        });
      }).finally(() => {
        if (current?.worker !== handle.worker) return;
        handle.worker.unref();
        // Idle, it gives back what it holds (a copy of every cluster's discovery); the next diff starts another.
        idle = setTimeout(() => {
          if (current?.worker !== handle.worker) return;
          current = undefined;
          void handle.worker.terminate();
          log.info("diff worker stopped after a while without diffs; the next diff starts a new one", { idleSeconds: Math.round(idleMs / 1000) });
        }, idleMs);
        idle.unref();
      });
    },
    async close() {
      closed = true;
      clearTimeout(idle);
      const handle = current;
      current = undefined;
      if (handle !== undefined) await handle.worker.terminate();
    },
  };
}

/** The ES module of tsx's register API (its package's `./esm/api` export for `import`), for a worker's bootstrap. */
function tsxApiUrl(): string {
  const require = createRequire(import.meta.url);
  const manifest = require.resolve("tsx/package.json");
  const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { exports: { "./esm/api": { import: { default: string } } } };
  return pathToFileURL(join(dirname(manifest), pkg.exports["./esm/api"].import.default)).href;
}

/** The git directory of a local repository: its `.git`, or the path itself (bare). */
function gitdirOf(path: string): string {
  const dotGit = join(path, ".git");
  return existsSync(dotGit) && statSync(dotGit).isDirectory() ? dotGit : path;
}
