/**
 * Pushing one ready pack to one ref with Git's receive-pack protocol (v0, the one receive-pack speaks),
 * through an isomorphic-git `HttpClient` — smart HTTP, or the SSH transport (ssh-transport.ts answers the
 * same two requests by running `git-receive-pack` on the server):
 *
 * 1. `GET <url>/info/refs?service=git-receive-pack`: the ref advertisement. When the ref is not at
 *    `old` (someone else wrote, or our last push did land after all), nothing is sent: the caller
 *    decides (`moved`, or `ok` when it is already at `new`).
 * 2. `POST <url>/git-receive-pack`: `<old> <new> <ref>\0report-status side-band-64k agent=…`, a flush,
 *    then the pack bytes as they are. The server updates the ref only if it is still at `old` (its ref
 *    transaction checks the old value), so the push is a compare-and-swap.
 * 3. The report (report-status, inside side band 1 when side-band-64k was agreed): `unpack ok` and
 *    `ok <ref>`, or `unpack <error>` / `ng <ref> <reason>`, which are never taken for success.
 *
 * A rejected update (`ng`) is looked at again: when the ref moved meanwhile it was a race (`moved`),
 * when it is at `new` the update landed (`ok`), otherwise the server refused it and `PackPushRejectedError`
 * carries its reason (a hook, a protected branch). A cut connection or a missing report throws a
 * transport error (the caller retries; step 1 then finds where the ref is).
 */
import type { GitAuth, GitHttpRequest, HttpClient } from "isomorphic-git";
import { GitTransportError } from "./errors.js";
import { NeedsHumanError } from "../core/index.js";

const ZERO = "0000000000000000000000000000000000000000";

/** The server refused the ref update for a reason of its own (a hook, a protected branch); `reason` is its word. */
export class PackPushRejectedError extends NeedsHumanError {}

export interface PackPush {
  readonly http: HttpClient;
  /** Repository URL without credentials (isomorphic-git's form; for SSH the transport's placeholder). */
  readonly url: string;
  /** For logs and errors. */
  readonly name: string;
  readonly auth?: GitAuth | undefined;
  /** Full ref name, e.g. `refs/heads/gitmesh/rendered`. */
  readonly ref: string;
  /** Where the ref must be for the update (undefined: it must not exist). */
  readonly old: string | undefined;
  readonly new: string;
  /** A complete pack (trailer included) holding every object `new` reaches that `old` does not. */
  readonly pack: Buffer;
  /**
   * The receive-pack advertisement the commit was built on, just read (`advertisedRefs`): saves asking
   * again. Leave it out when retrying, so that an update that landed before the connection broke is seen.
   */
  readonly listed?: Advertisement | undefined;
}

export interface Advertisement {
  readonly refs: ReadonlyMap<string, string>;
  readonly caps: ReadonlySet<string>;
}

export type PushOutcome =
  | { readonly kind: "ok"; /** The pack was sent (false: the ref was already at `new`). */ readonly sent: boolean }
  | { readonly kind: "moved"; /** Where the ref is now (undefined: gone). */ readonly tip: string | undefined };

/** The refs a receive-pack advertises (`ref → oid`) and its capabilities. */
export async function advertisedRefs(http: HttpClient, url: string, name: string, auth: GitAuth | undefined): Promise<Advertisement> {
  const res = await http.request({ url: `${url}/info/refs?service=git-receive-pack`, method: "GET", headers: { ...headers(auth), accept: "application/x-git-receive-pack-advertisement" } });
  const body = await collect(res.body);
  check(res.statusCode, res.statusMessage, body, `listing refs of ${name} for a push`);
  return parseAdvertisement(body, name);
}

export async function pushPack(p: PackPush): Promise<PushOutcome> {
  const { refs, caps } = p.listed ?? (await advertisedRefs(p.http, p.url, p.name, p.auth));
  const current = refs.get(p.ref);
  if (current === p.new) return { kind: "ok", sent: false };
  if (current !== p.old) return { kind: "moved", tip: current };
  if (!caps.has("report-status")) throw new PackPushRejectedError(`${p.name} does not offer report-status; refusing to push without knowing the outcome`);
  const sideband = caps.has("side-band-64k");
  const wanted = ["report-status", ...(sideband ? ["side-band-64k"] : []), "agent=gitmesh"].join(" ");
  const command = pktLine(`${p.old ?? ZERO} ${p.new} ${p.ref}\0${wanted}\n`);
  const request: GitHttpRequest = {
    url: `${p.url}/git-receive-pack`,
    method: "POST",
    headers: { ...headers(p.auth), "content-type": "application/x-git-receive-pack-request", accept: "application/x-git-receive-pack-result" },
    // One buffer (isomorphic-git's node client then sends a Content-Length): the command, a flush, the pack.
    body: [Buffer.concat([command, FLUSH, p.pack])] as unknown as AsyncIterableIterator<Uint8Array>,
  };
  const res = await p.http.request(request);
  const body = await collect(res.body);
  check(res.statusCode, res.statusMessage, body, `pushing to ${p.name}`);
  const report = readReport(sideband ? demux(body, p.name) : body, p.name);
  if (report.unpack !== "ok") throw new GitTransportError(`pushing to ${p.name}: the server could not unpack the pack: ${report.unpack}`);
  const status = report.refs.get(p.ref);
  if (status === undefined) throw new GitTransportError(`pushing to ${p.name}: the server's report does not name ${p.ref}`);
  if (status.ok) return { kind: "ok", sent: true };
  // ng: a race (the ref moved, or another writer held its lock), our own update after all, or a refusal.
  const after = (await advertisedRefs(p.http, p.url, p.name, p.auth)).refs.get(p.ref);
  if (after === p.new) return { kind: "ok", sent: true };
  if (after !== p.old || /lock|stale|failed to update ref|fetch first|non-fast-forward/i.test(status.reason)) return { kind: "moved", tip: after };
  throw new PackPushRejectedError(`${p.name} refused the update of ${p.ref}: ${status.reason}`);
}

const FLUSH = Buffer.from("0000");

function pktLine(text: string): Buffer {
  const payload = Buffer.from(text);
  return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, "0")), payload]);
}

function headers(auth: GitAuth | undefined): Record<string, string> {
  const out: Record<string, string> = { "user-agent": "git/gitmesh" };
  if (auth?.username !== undefined || auth?.password !== undefined) {
    out.authorization = `Basic ${Buffer.from(`${auth.username ?? ""}:${auth.password ?? ""}`).toString("base64")}`;
  }
  return { ...out, ...auth?.headers };
}

/** HTTP errors in isomorphic-git's shape, so that classifyGitError maps 401/403/404 as for its own requests. */
function check(status: number, message: string, body: Buffer, what: string): void {
  if (status === 200) return;
  const text = body.toString("utf8").trim().slice(0, 200);
  const err = Object.assign(new Error(`${what}: HTTP ${status} ${message}${text === "" ? "" : `: ${text}`}`), { code: "HttpError", data: { statusCode: status, statusMessage: message } });
  throw err;
}

async function collect(body: AsyncIterableIterator<Uint8Array> | undefined): Promise<Buffer> {
  if (body === undefined) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

/** Splits pkt-lines; a flush is `null`. Throws on a truncated stream. */
function* pktLines(data: Buffer, name: string): Generator<Buffer | null> {
  let pos = 0;
  while (pos < data.length) {
    if (pos + 4 > data.length) throw new GitTransportError(`${name}: a pkt-line was cut short`);
    const len = Number.parseInt(data.subarray(pos, pos + 4).toString("latin1"), 16);
    if (!Number.isInteger(len) || (len > 0 && len < 4)) throw new GitTransportError(`${name}: bad pkt-line length`);
    if (len === 0) {
      yield null;
      pos += 4;
      continue;
    }
    if (pos + len > data.length) throw new GitTransportError(`${name}: a pkt-line was cut short`);
    yield data.subarray(pos + 4, pos + len);
    pos += len;
  }
}

function parseAdvertisement(body: Buffer, name: string): { refs: Map<string, string>; caps: Set<string> } {
  const refs = new Map<string, string>();
  let caps = new Set<string>();
  let first = true;
  let flushes = 0;
  for (const line of pktLines(body, name)) {
    if (line === null) {
      flushes++;
      continue;
    }
    let text = line.toString("utf8");
    if (text.startsWith("# service=")) continue;
    if (text.startsWith("version ")) continue;
    if (text.startsWith("ERR ")) throw new GitTransportError(`${name}: ${text.slice(4).trim()}`);
    const nul = text.indexOf("\0");
    if (first && nul >= 0) {
      caps = new Set(text.slice(nul + 1).trim().split(" ").filter((c) => c !== ""));
      text = text.slice(0, nul);
    }
    first = false;
    const m = /^([0-9a-f]{40}) (\S+)/.exec(text.trim());
    if (m && m[2] !== "capabilities^{}") refs.set(m[2]!, m[1]!);
  }
  if (flushes === 0) throw new GitTransportError(`${name}: the ref advertisement was cut short`);
  for (const c of caps) if (c.startsWith("object-format=") && c !== "object-format=sha1") throw new PackPushRejectedError(`${name} uses ${c}; only SHA-1 repositories are supported`);
  return { refs, caps };
}

/** Side band 1 (data) of a side-band-64k stream; band 3 is a fatal error from the server, band 2 progress. */
function demux(body: Buffer, name: string): Buffer {
  const data: Buffer[] = [];
  for (const line of pktLines(body, name)) {
    if (line === null || line.length === 0) continue;
    const band = line[0];
    if (band === 1) data.push(line.subarray(1));
    else if (band === 3) throw new GitTransportError(`${name}: the server failed the push: ${line.subarray(1).toString("utf8").trim()}`);
  }
  return Buffer.concat(data);
}

function readReport(data: Buffer, name: string): { unpack: string; refs: Map<string, { ok: boolean; reason: string }> } {
  let unpack: string | undefined;
  const refs = new Map<string, { ok: boolean; reason: string }>();
  let ended = false;
  for (const line of pktLines(data, name)) {
    if (line === null) {
      ended = true;
      break;
    }
    const text = line.toString("utf8").replace(/\n$/, "");
    if (text.startsWith("unpack ")) unpack = text.slice(7);
    else if (text.startsWith("ok ")) refs.set(text.slice(3), { ok: true, reason: "" });
    else if (text.startsWith("ng ")) {
      const rest = text.slice(3);
      const sp = rest.indexOf(" ");
      refs.set(sp < 0 ? rest : rest.slice(0, sp), { ok: false, reason: sp < 0 ? "" : rest.slice(sp + 1) });
    }
  }
  if (unpack === undefined || !ended) throw new GitTransportError(`pushing to ${name}: the server's report was cut short (no outcome); retrying finds where the branch is`);
  return { unpack, refs };
}
