/**
 * Writing Git objects straight into a packfile (version 2) and its index (version 2), as git's own
 * `index-pack` would leave them: each object deflated once with Node's native zlib and hashed once with
 * node:crypto when it is added, the pack assembled from those bytes, its SHA-1 trailer computed over
 * them, and the same bytes written to `objects/pack` and (by the audit writer) sent to the server's
 * receive-pack as they are. No deltas: the audit branch's objects are small YAML files that share nothing
 * worth the search within one commit, and a later commit only adds the few objects it changed.
 *
 *   const pack = createPackBuilder();
 *   const blob = pack.add("blob", bytes);
 *   …
 *   const built = pack.finish([commitOid]);   // only what the commit reaches among the objects added
 *   writePack(gitdir, built);                   // objects/pack/pack-<checksum>.{pack,idx}
 *
 * The layout follows gitformat-pack(5): "PACK", version 2, the object count; per object a type-and-size
 * header (3 type bits, the size in 4 + 7·n bits) and its zlib stream; the SHA-1 of all that. The index
 * has the fan-out table, the sorted object ids, the CRC-32 of each packed entry, 31-bit offsets (with a
 * table of 64-bit ones for packs over 2 GiB), the pack's checksum and its own.
 */
import { createHash } from "node:crypto";
import * as nodeFs from "node:fs";
import { join } from "node:path";
import { crc32, deflateSync } from "node:zlib";
import { parseTree } from "./object-reader.js";

export type PackObjectType = "commit" | "tree" | "blob";

const TYPE_CODE: Readonly<Record<PackObjectType, number>> = { commit: 1, tree: 2, blob: 3 };

export interface BuiltPack {
  /** Hex SHA-1 trailer of the pack; the files are `pack-<checksum>.pack` / `.idx`. */
  readonly checksum: string;
  /** The whole pack file, trailer included: what is written to disk and what a push sends. */
  readonly pack: Buffer;
  readonly idx: Buffer;
  /** Object ids in the pack, in pack order. */
  readonly oids: readonly string[];
}

export interface PackBuilder {
  /** Adds an object (once per id; a second add of the same id is a no-op) and returns its id. */
  add(type: PackObjectType, content: Uint8Array, oid?: string): string;
  has(oid: string): boolean;
  /** The content of a tree or commit added here (blobs are not kept), for reading back before the pack is written. */
  read(oid: string): { readonly type: PackObjectType; readonly content: Buffer } | undefined;
  /** Objects added so far. */
  readonly size: number;
  /**
   * The pack of the objects added that `tips` reach (walking only objects of this builder: what a tip
   * reaches outside it is assumed to be in the repository already), or of every object added when
   * `tips` is undefined. Objects an edit wrote and a later edit replaced (a root tree before the
   * manifest went in) are left out.
   */
  finish(tips?: readonly string[]): BuiltPack;
}

interface Entry {
  readonly oid: string;
  readonly type: PackObjectType;
  /** Type-and-size header. */
  readonly header: Buffer;
  /** The zlib stream. */
  readonly deflated: Buffer;
  /** Raw content of trees and commits (blobs: undefined). */
  readonly content: Buffer | undefined;
}

/**
 * zlib with a window no larger than the object needs: the default (32 KiB window, memLevel 8) sets up
 * ~256 KiB of state per call, which for the few hundred bytes of a rendered object cost more in
 * allocation and garbage collection than the compression (the same output size for such objects).
 * Any window size is a valid zlib stream for git.
 */
function deflate(content: Uint8Array): Buffer {
  const windowBits = Math.min(15, Math.max(9, Math.ceil(Math.log2(content.length + 262))));
  const out = deflateSync(content, { windowBits, memLevel: windowBits <= 12 ? 6 : 8, chunkSize: Math.max(64, content.length + 64) });
  // Kept until the pack is assembled: a small result must not pin a larger output chunk (16 KiB by
  // default: 171,020 objects pinned 2.7 GB at 1,000 clusters); a copy of a small one goes to the shared pool.
  return out.buffer.byteLength > 2 * out.length ? Buffer.from(out) : out;
}

/** The object id git gives an object: SHA-1 of `<type> <size>\0<content>`. */
export function objectId(type: PackObjectType, content: Uint8Array): string {
  return createHash("sha1").update(`${type} ${content.length}\0`).update(content).digest("hex");
}

export function createPackBuilder(): PackBuilder {
  const entries = new Map<string, Entry>();
  return {
    add(type, content, oid = objectId(type, content)) {
      if (entries.has(oid)) return oid;
      const kept = type === "blob" ? undefined : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
      entries.set(oid, { oid, type, header: entryHeader(TYPE_CODE[type], content.length), deflated: deflate(content), content: kept });
      return oid;
    },
    has: (oid) => entries.has(oid),
    read(oid) {
      const e = entries.get(oid);
      return e?.content === undefined ? undefined : { type: e.type, content: e.content };
    },
    get size() {
      return entries.size;
    },
    finish(tips) {
      let chosen: Entry[];
      if (tips === undefined) chosen = [...entries.values()];
      else {
        const reached = new Set<string>();
        const stack = [...tips];
        while (stack.length > 0) {
          const oid = stack.pop()!;
          if (reached.has(oid)) continue;
          const e = entries.get(oid);
          if (!e) continue;
          reached.add(oid);
          if (e.type === "commit") stack.push(...commitLinks(e.content!));
          else if (e.type === "tree") for (const child of parseTree(e.content!)) if (child.type !== "commit") stack.push(child.oid);
        }
        chosen = [...entries.values()].filter((e) => reached.has(e.oid));
      }
      return assemble(chosen);
    },
  };
}

/** The tree and parent ids a commit names. */
function commitLinks(content: Buffer): string[] {
  const out: string[] = [];
  const end = content.indexOf("\n\n");
  for (const line of content.subarray(0, end < 0 ? content.length : end).toString("latin1").split("\n")) {
    const m = /^(?:tree|parent) ([0-9a-f]{40})$/.exec(line);
    if (m) out.push(m[1]!);
  }
  return out;
}

/** Object type (3 bits) and inflated size: 4 bits in the first byte, then 7 per byte while the high bit is set. */
function entryHeader(type: number, size: number): Buffer {
  const bytes: number[] = [];
  let rest = Math.floor(size / 16);
  let byte = (type << 4) | (size & 0x0f);
  while (rest > 0) {
    bytes.push(byte | 0x80);
    byte = rest & 0x7f;
    rest = Math.floor(rest / 128);
  }
  bytes.push(byte);
  return Buffer.from(bytes);
}

function assemble(entries: readonly Entry[]): BuiltPack {
  const head = Buffer.alloc(12);
  head.write("PACK", 0, "latin1");
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(entries.length, 8);
  const offsets: number[] = [];
  let at = head.length;
  const parts: Buffer[] = [head];
  for (const e of entries) {
    offsets.push(at);
    at += e.header.length + e.deflated.length;
    parts.push(e.header, e.deflated);
  }
  const body = Buffer.concat(parts, at);
  const trailer = createHash("sha1").update(body).digest();
  const pack = Buffer.concat([body, trailer]);
  // hex order is byte order
  const order = entries
    .map((e, i) => ({ hex: e.oid, crc: crc32(e.deflated, crc32(e.header)), offset: offsets[i]! }))
    .sort((a, b) => (a.hex < b.hex ? -1 : a.hex > b.hex ? 1 : 0))
    .map((o) => ({ oid: Buffer.from(o.hex, "hex"), crc: o.crc, offset: o.offset }));
  return { checksum: trailer.toString("hex"), pack, idx: buildIndex(order, trailer), oids: entries.map((e) => e.oid) };
}

function buildIndex(sorted: readonly { oid: Buffer; crc: number; offset: number }[], packChecksum: Buffer): Buffer {
  const n = sorted.length;
  const large = sorted.filter((o) => o.offset >= 0x80000000);
  const idx = Buffer.alloc(8 + 256 * 4 + n * 28 + large.length * 8 + 40);
  idx.writeUInt32BE(0xff744f63, 0);
  idx.writeUInt32BE(2, 4);
  const fanout = new Array<number>(256).fill(0);
  for (const o of sorted) fanout[o.oid[0]!]!++;
  let total = 0;
  for (let i = 0; i < 256; i++) idx.writeUInt32BE((total += fanout[i]!), 8 + i * 4);
  const shas = 8 + 256 * 4;
  const crcs = shas + n * 20;
  const offs = crcs + n * 4;
  const bigs = offs + n * 4;
  let nextBig = 0;
  sorted.forEach((o, i) => {
    o.oid.copy(idx, shas + i * 20);
    idx.writeUInt32BE(o.crc >>> 0, crcs + i * 4);
    if (o.offset < 0x80000000) idx.writeUInt32BE(o.offset, offs + i * 4);
    else {
      idx.writeUInt32BE((0x80000000 | nextBig) >>> 0, offs + i * 4);
      idx.writeBigUInt64BE(BigInt(o.offset), bigs + nextBig * 8);
      nextBig++;
    }
  });
  const tail = bigs + large.length * 8;
  packChecksum.copy(idx, tail);
  createHash("sha1").update(idx.subarray(0, tail + 20)).digest().copy(idx, tail + 20);
  return idx;
}

/**
 * Writes a built pack into `<gitdir>/objects/pack` as git does: each file to a temporary name, flushed to
 * disk, then renamed, the pack before its index (readers find packs by their index, so they never see an
 * index without its pack). Read-only files, as git leaves them. Returns the path of the pack.
 */
export function writePack(gitdir: string, built: BuiltPack): string {
  const dir = join(gitdir, "objects", "pack");
  nodeFs.mkdirSync(dir, { recursive: true });
  const base = join(dir, `pack-${built.checksum}`);
  const put = (file: string, data: Buffer) => {
    const tmp = join(dir, `tmp_gitmesh_${process.pid}_${Math.random().toString(36).slice(2)}`);
    const fd = nodeFs.openSync(tmp, "wx", 0o444);
    try {
      nodeFs.writeFileSync(fd, data);
      nodeFs.fsyncSync(fd);
    } finally {
      nodeFs.closeSync(fd);
    }
    nodeFs.renameSync(tmp, file);
  };
  put(`${base}.pack`, built.pack);
  put(`${base}.idx`, built.idx);
  return `${base}.pack`;
}
