/**
 * The first fetch of a ref into an empty cache: one want, `deepen` (shallow) or the full history, no
 * haves, so there is nothing to negotiate. The ref advertisement (and HTTP auth) is isomorphic-git's
 * (`getRemoteInfo2`, protocol v1); the upload-pack request goes through the same `HttpClient`, so SSH
 * (ssh-transport.ts answers that seam) takes this path too. The pack is streamed to a temporary file
 * as it arrives (side-band channel 1), then indexed once natively (pack-index.ts) and moved into
 * `objects/pack/` under git's names, the `.pack` before the `.idx` (readers find a pack by its index).
 * Then the shallow list. The caller writes the ref last.
 *
 * Why not isomorphic-git's `fetch` here: it buffers the whole response, then indexes the pack in
 * JavaScript (pako inflate, one asynchronous WebCrypto SHA-1 per object); that was most of a first
 * sync's time and memory (src/git-sync/README.md has the figures). Incremental fetches (haves, thin
 * packs) stay isomorphic-git's.
 *
 * A pack cut short, damaged, or answered with an error never leaves anything behind: the temporary
 * file is removed and no pack, index, shallow entry or ref is written.
 */
import { randomBytes } from "node:crypto";
import { closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import * as git from "isomorphic-git";
import type { GitAuth, HttpClient } from "isomorphic-git";
import { CorruptPackError, indexPack } from "./pack-index.js";

export interface FirstFetchOptions {
  readonly http: HttpClient;
  readonly url: string;
  readonly gitdir: string;
  /** Branch or tag name, or a full ref (`refs/heads/main`); resolved against the advertisement as isomorphic-git does. */
  readonly ref: string;
  /** Commits of history to fetch (`deepen`); null = all. */
  readonly depth: number | null;
  readonly auth?: GitAuth | undefined;
  /** Told every object received (hex oid, type, content), for a reader that serves them once (object-reader.ts `remember`). */
  readonly onObject?: (oid: string, obj: { readonly type: "commit" | "tree" | "blob" | "tag"; readonly content: Buffer }) => void;
  /** Bytes of object contents handed to `onObject` at most (default 64 MiB); past it, objects are read from the pack again. */
  readonly handOverBytes?: number;
}

export interface FirstFetchResult {
  /** The oid the ref points at on the server (a commit, or an annotated tag). */
  readonly oid: string;
  readonly objects: number;
  readonly packBytes: number;
}

/** An answer the Git server gave that is not a usable pack (cut short, damaged, an `ERR` line). Retried like a transport error. */
export class PackTransferError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "PackTransferError";
  }
}

/** Shaped as isomorphic-git's errors so that classifyGitError (errors.ts) sorts them alike. */
function httpError(statusCode: number, statusMessage: string): Error {
  return Object.assign(new Error(`HTTP Error: ${statusCode} ${statusMessage}`), { code: "HttpError", data: { statusCode, statusMessage } });
}

function notFound(what: string): Error {
  return Object.assign(new Error(`Could not find ${what}.`), { code: "NotFoundError" });
}

/**
 * A request body of one buffer. isomorphic-git passes its bodies as arrays (typed as iterators): its node
 * client then sends them whole with a Content-Length (some hosts hang up on a chunked fetch request).
 */
const oneBuffer = (b: Buffer): AsyncIterableIterator<Uint8Array> => [b] as unknown as AsyncIterableIterator<Uint8Array>;

const pkt = (line: string): string => (line.length + 4).toString(16).padStart(4, "0") + line;

/**
 * Fetches `ref` into `gitdir` (a bare repository) without negotiation. Returns undefined when the
 * server has no refs at all (an empty repository).
 */
export async function fetchFirstPack(options: FirstFetchOptions): Promise<FirstFetchResult | undefined> {
  const { http, url, gitdir, auth } = options;
  const info = await git.getRemoteInfo2({
    http,
    url,
    protocolVersion: 1,
    ...(auth ? { onAuth: () => auth } : {}),
    onAuthFailure: () => ({ cancel: true }),
  });
  const refs = info.refs ?? [];
  if (refs.length === 0) return undefined;
  const caps = info.capabilities;
  const byName = new Map(refs.map((r) => [r.ref, r.oid]));
  // isomorphic-git's order (GitRefManager.resolveAgainstMap): exact, refs/…, tags, heads, remotes.
  const ref = options.ref;
  const candidates = [ref, `refs/${ref}`, `refs/tags/${ref}`, `refs/heads/${ref}`, `refs/remotes/${ref}`, `refs/remotes/${ref}/HEAD`];
  const name = candidates.find((c) => byName.has(c));
  if (name === undefined) throw notFound(`ref ${ref} on the server`);
  const oid = byName.get(name)!;
  if (options.depth !== null && caps.shallow === undefined) throw new PackTransferError("the Git server does not support shallow fetches (no `shallow` capability); set the source's depth to null");

  const sideband = caps["side-band-64k"] !== undefined ? "side-band-64k" : caps["side-band"] !== undefined ? "side-band" : undefined;
  const wantCaps = [sideband, caps["ofs-delta"] !== undefined ? "ofs-delta" : undefined, caps["no-progress"] !== undefined ? "no-progress" : undefined, "agent=gitmesh"].filter((c) => c !== undefined);
  let body = pkt(`want ${oid} ${wantCaps.join(" ")}\n`);
  if (options.depth !== null) body += pkt(`deepen ${options.depth}\n`);
  body += "0000" + pkt("done\n");

  const headers: Record<string, string> = {
    "content-type": "application/x-git-upload-pack-request",
    accept: "application/x-git-upload-pack-result",
  };
  if (auth?.username !== undefined || auth?.password !== undefined) {
    headers.authorization = `Basic ${Buffer.from(`${auth.username ?? ""}:${auth.password ?? ""}`).toString("base64")}`;
  }
  Object.assign(headers, auth?.headers ?? {});
  const res = await http.request({ url: `${url}/git-upload-pack`, method: "POST", headers, body: oneBuffer(Buffer.from(body, "latin1")) });
  if (res.statusCode !== 200) {
    await res.body?.return?.();
    throw httpError(res.statusCode, res.statusMessage);
  }
  if (res.body === undefined) throw new PackTransferError("the Git server answered the fetch without a body");

  const packDir = join(gitdir, "objects", "pack");
  const tmp = join(packDir, `tmp_pack_${randomBytes(6).toString("hex")}`);
  const tmpIdx = `${tmp}.idx`;
  let fd: number | undefined = openSync(tmp, "wx", 0o444);
  let moved = false;
  let handOver = (): void => undefined;
  try {
    const { shallows, unshallows, packBytes } = await receive(res.body, sideband !== undefined, (chunk) => writeSync(fd!, chunk));
    closeSync(fd);
    fd = undefined;
    if (packBytes === 0) throw new PackTransferError("the Git server sent no pack");
    const pack = readFileSync(tmp);
    let indexed;
    try {
      let budget = options.handOverBytes ?? 64 * 1024 * 1024;
      const onObject = options.onObject;
      const handed: [string, { type: "commit" | "tree" | "blob" | "tag"; content: Buffer }][] = [];
      indexed = indexPack(
        pack,
        onObject === undefined
          ? undefined
          : (oid, type, content) => {
              if (content.length > budget) return;
              budget -= content.length;
              handed.push([oid.toString("hex"), { type, content }]);
            },
      );
      // Handed over only once the pack is whole and in place (below): a pack that fails hands nothing.
      handOver = () => {
        for (const [oid, obj] of handed) onObject!(oid, obj);
      };
    } catch (err) {
      if (err instanceof CorruptPackError) throw new PackTransferError(`the pack received is unusable: ${err.message}`, { cause: err });
      throw err;
    }
    writeFileSync(tmpIdx, indexed.idx, { mode: 0o444 });
    const base = join(packDir, `pack-${indexed.checksum}`);
    renameSync(tmp, `${base}.pack`);
    renameSync(tmpIdx, `${base}.idx`);
    moved = true;
    updateShallow(gitdir, shallows, unshallows);
    handOver();
    return { oid, objects: indexed.objects, packBytes };
  } finally {
    if (fd !== undefined) closeSync(fd);
    if (!moved) {
      rmSync(tmp, { force: true });
      rmSync(tmpIdx, { force: true });
    }
  }
}

interface Received {
  readonly shallows: readonly string[];
  readonly unshallows: readonly string[];
  readonly packBytes: number;
}

/**
 * Reads an upload-pack answer: `shallow`/`unshallow` lines and their flush (after `deepen`), `NAK`,
 * then the pack, in side-band packets (1 = data, 2 = progress, 3 = error) or raw. `write` gets the
 * pack's bytes as they come.
 */
async function receive(body: AsyncIterableIterator<Uint8Array>, sideband: boolean, write: (chunk: Uint8Array) => void): Promise<Received> {
  const shallows: string[] = [];
  const unshallows: string[] = [];
  let buf: Buffer = Buffer.alloc(0);
  let packBytes = 0;
  let phase: "lines" | "pack" | "done" = "lines";
  const finish = (): Received => ({ shallows, unshallows, packBytes });
  for (;;) {
    // Take every complete packet in the buffer.
    for (;;) {
      if (phase === "done") return finish();
      if (phase === "pack" && !sideband) {
        if (buf.length > 0) {
          write(buf);
          packBytes += buf.length;
          buf = Buffer.alloc(0);
        }
        break;
      }
      if (buf.length < 4) break;
      const len = parseInt(buf.toString("latin1", 0, 4), 16);
      if (!Number.isInteger(len) || (len !== 0 && len < 4)) throw new PackTransferError(`the Git server's answer is not in pkt-line format (${JSON.stringify(buf.toString("latin1", 0, 4))})`);
      if (len === 0) {
        // the end of the shallow list, or (side-band) the end of the pack
        buf = buf.subarray(4);
        if (phase === "pack") phase = "done";
        continue;
      }
      if (buf.length < len) break;
      const payload = buf.subarray(4, len);
      buf = buf.subarray(len);
      if (phase === "lines") {
        const line = payload.toString("utf8").replace(/\n$/, "");
        if (line.startsWith("shallow ")) shallows.push(line.slice(8));
        else if (line.startsWith("unshallow ")) unshallows.push(line.slice(10));
        else if (line === "NAK" || line.startsWith("ACK ")) phase = "pack";
        else if (line.startsWith("ERR ")) throw new PackTransferError(`the Git server refused the fetch: ${line.slice(4)}`);
        else throw new PackTransferError(`unexpected line from the Git server: ${JSON.stringify(line.slice(0, 80))}`);
        continue;
      }
      const band = payload[0];
      if (band === 1) {
        write(payload.subarray(1));
        packBytes += payload.length - 1;
      } else if (band === 3) {
        throw new PackTransferError(`the Git server failed while sending the pack: ${payload.subarray(1).toString("utf8").trim()}`);
      } else if (band !== 2) {
        throw new PackTransferError(`unknown side-band channel ${String(band)} in the Git server's answer`);
      }
    }
    const next = await body.next();
    if (next.done === true) {
      if (phase === "pack" && !sideband) return finish();
      const what = phase === "lines" ? "before the pack began" : `after ${packBytes} bytes of the pack`;
      throw new PackTransferError(`the Git server closed the connection ${what}`);
    }
    const chunk = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
  }
}

/** Adds the server's shallow commits to `shallow` (and drops the unshallowed ones), written whole and renamed. */
function updateShallow(gitdir: string, add: readonly string[], remove: readonly string[]): void {
  if (add.length === 0 && remove.length === 0) return;
  const file = join(gitdir, "shallow");
  const oids = new Set(existsSync(file) ? readFileSync(file, "utf8").split("\n").filter((l) => l.length > 0) : []);
  for (const o of add) oids.add(o);
  for (const o of remove) oids.delete(o);
  const tmp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(tmp, [...oids].sort().map((o) => `${o}\n`).join(""));
  renameSync(tmp, file);
}
