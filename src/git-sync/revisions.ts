/**
 * Git revisions as users spell them (gitrevisions(7), the subset people type for a review):
 * `HEAD`, full and abbreviated SHAs, branches, tags, remote-tracking names (`origin/main`), with any
 * chain of `~N` / `^N` / `^` / `~` suffixes, and `A...B` for the merge base of A and B. Resolved in a
 * local repository's object store with isomorphic-git (no `git` binary needed).
 *
 * In a shallow clone (CI checkouts) a parent past the shallow boundary, or a remote-tracking branch
 * that was never fetched, is reported with the exact `git fetch` that brings it, never as a bare
 * "not found".
 */
import * as nodeFs from "node:fs";
import { join } from "node:path";
import git from "isomorphic-git";
import { GitRefNotFoundError } from "./errors.js";

const fs = nodeFs;

export interface ResolvedRevision {
  /** What the user wrote. */
  readonly spec: string;
  /** The commit it names. */
  readonly oid: string;
}

/** `main~2^2` → base `main`, steps [~2, ^2]. */
interface Parsed {
  readonly base: string;
  readonly steps: readonly { readonly op: "~" | "^"; readonly n: number }[];
}

function parse(spec: string): Parsed {
  const m = /^(.*?)((?:[~^]\d*)*)$/.exec(spec);
  const base = m?.[1] ?? spec;
  const steps: { op: "~" | "^"; n: number }[] = [];
  for (const s of (m?.[2] ?? "").match(/[~^]\d*/g) ?? []) {
    const op = s[0] as "~" | "^";
    steps.push({ op, n: s.length > 1 ? Number(s.slice(1)) : 1 });
  }
  return { base: base === "" || base === "@" ? "HEAD" : base, steps };
}

/** Resolves `spec` in the repository whose git directory is `gitdir`. Throws GitRefNotFoundError with what to do. */
export async function resolveRevision(gitdir: string, spec: string): Promise<ResolvedRevision> {
  const trimmed = spec.trim();
  if (trimmed === "") throw new GitRefNotFoundError("empty revision; name a branch, tag, commit, HEAD~1, origin/main…");
  const range = /^(.*)\.\.\.(.*)$/.exec(trimmed);
  if (range) {
    const [a, b] = await Promise.all([resolveRevision(gitdir, range[1] || "HEAD"), resolveRevision(gitdir, range[2] || "HEAD")]);
    const bases: unknown = await git.findMergeBase({ fs, gitdir, oids: [a.oid, b.oid] }).catch(() => []);
    const base = Array.isArray(bases) && typeof bases[0] === "string" ? bases[0] : undefined;
    if (base === undefined) {
      throw new GitRefNotFoundError(
        `${trimmed}: ${a.spec} and ${b.spec} have no common ancestor in this repository` +
          (isShallow(gitdir) ? ` (a shallow clone: run \`git fetch --unshallow\`, or \`git fetch --deepen=<N>\` until they meet)` : ""),
      );
    }
    return { spec: trimmed, oid: base };
  }
  const { base, steps } = parse(trimmed);
  let oid = await resolveBase(gitdir, base);
  let walked = base;
  for (const step of steps) {
    if (step.op === "^") {
      if (step.n === 0) continue;
      oid = await parentOf(gitdir, oid, step.n - 1, walked, `${walked}^${step.n}`);
      walked = `${walked}^${step.n}`;
    } else {
      for (let i = 0; i < step.n; i++) {
        oid = await parentOf(gitdir, oid, 0, walked, `${walked}~${i + 1}`);
        walked = `${walked}~1`;
      }
    }
  }
  return { spec: trimmed, oid };
}

async function resolveBase(gitdir: string, name: string): Promise<string> {
  if (/^[0-9a-f]{40}$/i.test(name)) return peel(gitdir, name.toLowerCase(), name);
  try {
    const full = name === "HEAD" ? "HEAD" : await git.expandRef({ fs, gitdir, ref: name });
    return await peel(gitdir, await git.resolveRef({ fs, gitdir, ref: full }), name);
  } catch (err) {
    if (err instanceof GitRefNotFoundError) throw err;
  }
  // Like `git checkout main` in a fresh clone: no local branch, but exactly one remote has it.
  const remotes = await git.listRemotes({ fs, gitdir }).catch(() => [] as { remote: string; url: string }[]);
  const tracking: string[] = [];
  for (const r of remotes) {
    const ref = `refs/remotes/${r.remote}/${name}`;
    if (await git.resolveRef({ fs, gitdir, ref }).then(() => true, () => false)) tracking.push(ref);
  }
  if (tracking.length === 1) return peel(gitdir, await git.resolveRef({ fs, gitdir, ref: tracking[0]! }), name);
  if (/^[0-9a-f]{4,39}$/i.test(name)) {
    try {
      return await peel(gitdir, await git.expandOid({ fs, gitdir, oid: name.toLowerCase() }), name);
    } catch (err) {
      if (err instanceof GitRefNotFoundError) throw err;
      if (err instanceof Error && err.name === "AmbiguousError") throw new GitRefNotFoundError(`${name}: ambiguous abbreviated commit; give more characters`);
    }
  }
  throw new GitRefNotFoundError(await unknownMessage(gitdir, name));
}

/** Tags point at tag objects; a revision means the commit. */
async function peel(gitdir: string, oid: string, name: string): Promise<string> {
  for (let i = 0; i < 10; i++) {
    // readCommit peels an annotated tag by itself but answers with the tag's id: ask readTag first.
    const tag = await git.readTag({ fs, gitdir, oid }).catch(() => undefined);
    if (tag) {
      oid = tag.tag.object;
      continue;
    }
    if (await git.readCommit({ fs, gitdir, oid }).then(() => true, () => false)) return oid;
    throw new GitRefNotFoundError(`${name}: commit ${oid} is not in this repository${isShallow(gitdir) ? " (a shallow clone: run `git fetch --unshallow`)" : "; run `git fetch`"}`);
  }
  throw new GitRefNotFoundError(`${name}: tag chain too long`);
}

async function parentOf(gitdir: string, oid: string, index: number, name: string, wanted: string): Promise<string> {
  let parents: string[];
  try {
    parents = (await git.readCommit({ fs, gitdir, oid })).commit.parent;
  } catch {
    throw new GitRefNotFoundError(`${wanted}: commit ${oid.slice(0, 12)} (${name}) is not in this repository`);
  }
  const parent = parents[index];
  // A shallow clone keeps the parent ids of its oldest commits but not the parents themselves.
  const present = parent !== undefined && (await git.readCommit({ fs, gitdir, oid: parent }).then(() => true, () => false));
  if (!present) {
    const shallow = shallowCommits(gitdir);
    if (shallow.has(oid)) {
      throw new GitRefNotFoundError(
        `${wanted}: ${name} (${oid.slice(0, 12)}) is the oldest commit of this shallow clone; fetch more history with \`git fetch --deepen=1\` (or \`git fetch --unshallow\`), e.g. \`fetch-depth: 0\` in actions/checkout or GIT_DEPTH: 0 in GitLab CI`,
      );
    }
    if (parent !== undefined) throw new GitRefNotFoundError(`${wanted}: commit ${parent.slice(0, 12)} is not in this repository; run \`git fetch\``);
    throw new GitRefNotFoundError(parents.length === 0 ? `${wanted}: ${name} (${oid.slice(0, 12)}) is a root commit; it has no parent` : `${wanted}: ${name} has ${parents.length} parent(s), not ${index + 1}`);
  }
  return parent;
}

function shallowCommits(gitdir: string): Set<string> {
  try {
    return new Set(nodeFs.readFileSync(join(gitdir, "shallow"), "utf8").split("\n").filter(Boolean));
  } catch {
    return new Set();
  }
}

function isShallow(gitdir: string): boolean {
  return shallowCommits(gitdir).size > 0;
}

/** What to say about a name that matches nothing: near matches, and the fetch that would bring a remote branch. */
async function unknownMessage(gitdir: string, name: string): Promise<string> {
  const [branches, tags, remotes] = await Promise.all([
    git.listBranches({ fs, gitdir }).catch(() => [] as string[]),
    git.listTags({ fs, gitdir }).catch(() => [] as string[]),
    git.listRemotes({ fs, gitdir }).catch(() => [] as { remote: string; url: string }[]),
  ]);
  const tracking = (
    await Promise.all(remotes.map(async (r) => (await git.listBranches({ fs, gitdir, remote: r.remote }).catch(() => [] as string[])).filter((b) => b !== "HEAD").map((b) => `${r.remote}/${b}`)))
  ).flat();
  const known = [...new Set([...branches, ...tags, ...tracking])];
  const near = known
    .map((k) => ({ k, d: distance(name.toLowerCase(), k.toLowerCase()) }))
    .filter((x) => x.d <= Math.max(2, Math.floor(name.length / 3)) || x.k.endsWith(`/${name}`))
    .sort((a, b) => a.d - b.d || a.k.localeCompare(b.k))
    .slice(0, 3)
    .map((x) => x.k);
  let msg = `unknown revision ${name}`;
  if (near.length > 0) msg += `; did you mean ${near.join(", ")}?`;
  const remoteOf = remotes.find((r) => name.startsWith(`${r.remote}/`));
  if (remoteOf) {
    const branch = name.slice(remoteOf.remote.length + 1);
    msg += ` It is not fetched in this clone (CI checkouts fetch one ref): run \`git fetch ${remoteOf.remote} ${branch}:refs/remotes/${remoteOf.remote}/${branch}\``;
  } else if (remotes.length > 0 && !branches.includes(name) && tracking.includes(`${remotes[0]!.remote}/${name}`)) {
    msg += ` (use ${remotes[0]!.remote}/${name}: there is no local branch ${name})`;
  }
  return msg;
}

function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}
