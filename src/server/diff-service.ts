/**
 * The rendered change between two commits of the configuration repository, for the API and the UI
 * (`GET /api/diff?base=<sha>&head=<sha>`): the same report as `gitmesh diff` — both revisions read
 * from Git, each translated against the discovery the server holds now, compared per cluster and
 * object (git-sync's compareRenders, renderJson).
 *
 * Base is translated in full and head incrementally from it (src/translate's loadRevisions +
 * renderRevisions, as `gitmesh diff` does: only the files that differ are parsed again, only the
 * workspaces they touch translated again, and what head kept is skipped by identity when compared).
 * That is still a full translation on a large fleet, so diffs run one at a time and the last few
 * answers are kept (keyed by the two commits and the discovery checksums: a discovery change makes a
 * new diff). A remote repository is read through a cache of its own (`<dataDir>/diff.git`), never the
 * live source's, so a diff cannot disturb the sync in progress.
 */
import type { Logger } from "../core/index.js";
import type { DiscoverySnapshot } from "../discovery/index.js";
import { compareRenders, GitRefNotFoundError, readRevisionFiles, renderJson, type GitLocation, type RenderSide } from "../git-sync/index.js";
import { loadRevisions, renderRevisions, type RevisionRender } from "../translate/index.js";
import { HttpError } from "./http.js";

export interface DiffServiceOptions {
  readonly location: GitLocation;
  readonly subPath?: string;
  /** Discovery per cluster, as the server holds it. */
  readonly discovery: () => Promise<readonly { readonly cluster: string; readonly checksum: string; readonly snapshot: DiscoverySnapshot }[]>;
  /** Answers kept (default 8). */
  readonly keep?: number;
  readonly logger: Logger;
}

export interface DiffService {
  /** The JSON report (renderJson's shape) of `base` → `head`, both full commit SHAs. */
  diff(base: string, head: string): Promise<unknown>;
}

const FULL_SHA = /^[0-9a-f]{40}$/;

export function createDiffService(options: DiffServiceOptions): DiffService {
  const keep = options.keep ?? 8;
  const cache = new Map<string, unknown>();
  let queue: Promise<unknown> = Promise.resolve();
  const read = async (ref: string) => {
    try {
      return await readRevisionFiles({ location: options.location, ref, logger: options.logger, retry: { attempts: 2 }, ...(options.subPath === undefined ? {} : { subPath: options.subPath }) });
    } catch (err) {
      if (err instanceof GitRefNotFoundError) throw new HttpError(404, `commit ${ref} is not in the configuration repository`);
      throw err;
    }
  };
  const compute = async (base: string, head: string): Promise<unknown> => {
    const discovery = await options.discovery();
    const key = `${base}..${head}|${discovery.map((d) => `${d.cluster}:${d.checksum}`).sort().join(",")}`;
    if (cache.has(key)) return cache.get(key);
    const snapshots = new Map(discovery.map((d) => [d.cluster, d.snapshot]));
    const baseRev = await read(base);
    const headRev = await read(head);
    const renders = renderRevisions(loadRevisions(baseRev.files, headRev.files), snapshots);
    const side = (sha: string, commit: string, render: RevisionRender): RenderSide => ({
      ref: sha,
      commit,
      clusters: new Map([...render.result.clusters].map(([c, out]) => [c, out.resources])),
      diagnostics: [...render.load.diagnostics, ...render.result.diagnostics],
    });
    const report = JSON.parse(renderJson(compareRenders(side(base, baseRev.commit.oid, renders.base), side(head, headRev.commit.oid, renders.head)))) as unknown;
    cache.set(key, report);
    while (cache.size > keep) cache.delete(cache.keys().next().value!);
    return report;
  };
  return {
    diff(base, head) {
      for (const [name, sha] of [["base", base], ["head", head]] as const) {
        if (!FULL_SHA.test(sha)) throw new HttpError(400, `${name} must be a full commit SHA (40 hex digits), not ${JSON.stringify(sha.slice(0, 60))}; GET /api/commits lists them`);
      }
      // One at a time: a second request waits for the first (and then usually finds it cached).
      const run = queue.then(() => compute(base, head));
      queue = run.catch(() => undefined);
      return run;
    },
  };
}
