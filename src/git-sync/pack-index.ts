/**
 * Indexes a received packfile natively, as `git index-pack` does: every entry inflated once with Node's
 * zlib (`info: true` tells how many compressed bytes the entry took, so the next entry's offset is known
 * without a JavaScript inflate), every object hashed with node:crypto, ofs- and ref-deltas resolved
 * against their bases in the same pack, and a standard version-2 `.idx` built (oids, CRC-32s, offsets,
 * the pack's checksum), which isomorphic-git and object-reader.ts both read.
 *
 * Why not isomorphic-git's `GitPackIndex.fromPack`: it inflates with pako and hashes every object with an
 * asynchronous WebCrypto call; on a first sync of 10,000 files it was most of the sync's CPU (see
 * src/git-sync/README.md, "Where the time goes", for the before/after figures).
 *
 * Memory: the pack itself, the delta data (small), and the contents of the objects that are bases of
 * deltas still to be resolved; a base's content is dropped once its last delta is resolved. Non-delta
 * contents are kept from the first pass only within KEEP_BUDGET bytes; past it a base is inflated again
 * when a delta needs it.
 *
 * Anything wrong with the pack (truncated, a bad checksum, an entry that does not inflate to its size, a
 * delta whose base is missing, trailing bytes) throws `CorruptPackError`; nothing is written here.
 */
import { createHash } from "node:crypto";
import { crc32, inflateSync } from "node:zlib";

export class CorruptPackError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CorruptPackError";
  }
}

const TYPE_NAMES = [undefined, "commit", "tree", "blob", "tag"] as const;
const OFS_DELTA = 6;
const REF_DELTA = 7;
/** Non-delta contents kept from the first pass (past it, a base is inflated again when a delta needs it). */
const KEEP_BUDGET = 64 * 1024 * 1024;

export interface PackIndexResult {
  /** The version-2 index (`pack-<checksum>.idx`). */
  readonly idx: Buffer;
  /** The pack's SHA-1 trailer, hex: git names the pack files after it. */
  readonly checksum: string;
  readonly objects: number;
}

interface InflateInfo {
  readonly buffer: Buffer;
  readonly engine: { readonly bytesWritten: number };
}

/** Told every object of the pack once, as it is hashed (its content is not copied: keep it or not). */
export type PackObjectSink = (oid: Buffer, type: "commit" | "tree" | "blob" | "tag", content: Buffer) => void;

/** Indexes `pack` (a whole packfile, trailer included). Throws CorruptPackError on any inconsistency. */
export function indexPack(pack: Buffer, onObject?: PackObjectSink): PackIndexResult {
  if (pack.length < 32 || pack.toString("latin1", 0, 4) !== "PACK") throw new CorruptPackError(`not a packfile (${pack.length} bytes, no "PACK" signature)`);
  const version = pack.readUInt32BE(4);
  if (version !== 2 && version !== 3) throw new CorruptPackError(`unsupported pack version ${version}`);
  const count = pack.readUInt32BE(8);
  const end = pack.length - 20;
  const trailer = pack.subarray(end);
  const actual = createHash("sha1").update(pack.subarray(0, end)).digest();
  if (!actual.equals(trailer)) throw new CorruptPackError(`pack checksum mismatch: the trailer says ${trailer.toString("hex")}, the content hashes to ${actual.toString("hex")} (truncated or damaged in transit)`);

  const offsets = new Array<number>(count);
  const crcs = new Uint32Array(count);
  const types = new Uint8Array(count); // 1..4 once known
  const oids = new Array<Buffer | undefined>(count);
  /** Contents kept: a non-delta's from the first pass (within the budget), any base's while deltas need it. */
  const content = new Array<Buffer | undefined>(count);
  /** A delta's instructions, until it is resolved. */
  const deltas = new Array<Buffer | undefined>(count);
  const dataStart = new Array<number>(count);
  const sizes = new Array<number>(count);
  const ofsBase = new Map<number, number>(); // entry → base offset
  const refBase = new Map<number, string>(); // entry → base oid (hex)
  const byOffset = new Map<number, number>();
  let kept = 0;

  let pos = 12;
  for (let i = 0; i < count; i++) {
    if (pos >= end) throw new CorruptPackError(`pack ends after ${i} of its ${count} objects`);
    const offset = pos;
    offsets[i] = offset;
    byOffset.set(offset, i);
    let byte = pack[pos++]!;
    const typeCode = (byte >> 4) & 7;
    let size = byte & 0x0f;
    for (let shift = 4; byte & 0x80; shift += 7) {
      if (pos >= end) throw new CorruptPackError(`object header at pack offset ${offset} runs past the end`);
      byte = pack[pos++]!;
      size += (byte & 0x7f) * 2 ** shift;
    }
    if (typeCode === OFS_DELTA) {
      byte = pack[pos++]!;
      let rel = byte & 0x7f;
      while (byte & 0x80) {
        if (pos >= end) throw new CorruptPackError(`delta header at pack offset ${offset} runs past the end`);
        byte = pack[pos++]!;
        rel = (rel + 1) * 128 + (byte & 0x7f);
      }
      if (rel <= 0 || rel > offset - 12) throw new CorruptPackError(`delta at pack offset ${offset} names a base outside the pack`);
      ofsBase.set(i, offset - rel);
    } else if (typeCode === REF_DELTA) {
      if (pos + 20 > end) throw new CorruptPackError(`delta header at pack offset ${offset} runs past the end`);
      refBase.set(i, pack.toString("hex", pos, pos + 20));
      pos += 20;
    } else if (typeCode < 1 || typeCode > 4) {
      throw new CorruptPackError(`bad object type ${typeCode} at pack offset ${offset}`);
    }
    let inflated: InflateInfo;
    try {
      inflated = inflateSync(pack.subarray(pos, end), { info: true, chunkSize: Math.max(64, size + 1) }) as unknown as InflateInfo;
    } catch (err) {
      throw new CorruptPackError(`object at pack offset ${offset} does not inflate: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (inflated.buffer.length !== size) throw new CorruptPackError(`object at pack offset ${offset} inflates to ${inflated.buffer.length} bytes, its header says ${size}`);
    dataStart[i] = pos;
    sizes[i] = size;
    pos += inflated.engine.bytesWritten;
    crcs[i] = crc32(pack.subarray(offset, pos));
    if (typeCode <= 4) {
      types[i] = typeCode;
      oids[i] = hashObject(TYPE_NAMES[typeCode]!, inflated.buffer);
      onObject?.(oids[i]!, TYPE_NAMES[typeCode]!, inflated.buffer);
      if (kept + size <= KEEP_BUDGET) {
        content[i] = inflated.buffer;
        kept += size;
      }
    } else {
      deltas[i] = inflated.buffer;
    }
  }
  if (pos !== end) throw new CorruptPackError(`${end - pos} unexpected bytes after the last of the pack's ${count} objects`);

  // Which entries are bases, and of how many deltas (a base's content is dropped after its last one).
  const byOid = new Map<string, number>();
  for (let i = 0; i < count; i++) if (oids[i]) byOid.set(oids[i]!.toString("hex"), i);
  const pending = new Uint32Array(count);
  for (const [i, baseOffset] of ofsBase) {
    const b = byOffset.get(baseOffset);
    if (b === undefined) throw new CorruptPackError(`delta at pack offset ${offsets[i]} names pack offset ${baseOffset}, where no object starts`);
    pending[b]!++;
  }
  // Ref-deltas count against their base by oid, as soon as the base's oid is known (a base that is a delta learns it when resolved).
  const refChildren = new Map<string, number>();
  for (const oid of refBase.values()) refChildren.set(oid, (refChildren.get(oid) ?? 0) + 1);
  for (const [oid, n] of refChildren) {
    const b = byOid.get(oid);
    if (b !== undefined) pending[b]! += n;
  }
  for (let i = 0; i < count; i++) if (pending[i] === 0) content[i] = undefined;

  const resolving = new Uint8Array(count);
  const baseOf = (i: number): number => {
    const ofs = ofsBase.get(i);
    if (ofs !== undefined) return byOffset.get(ofs)!;
    const oid = refBase.get(i)!;
    const b = byOid.get(oid);
    if (b === undefined) throw new CorruptPackError(`delta at pack offset ${offsets[i]} needs object ${oid}, which the pack does not hold`);
    return b;
  };
  const inflateAt = (i: number): Buffer => inflateSync(pack.subarray(dataStart[i], end), { chunkSize: Math.max(64, sizes[i]! + 1) });
  /** An object's content when it is no longer kept: inflated again (and its delta chain applied again). */
  const materialize = (i: number): Buffer => (ofsBase.has(i) || refBase.has(i) ? applyDelta(contentOf(baseOf(i)), inflateAt(i)) : inflateAt(i));
  const contentOf = (b: number): Buffer => {
    const have = content[b];
    if (have) return have;
    if (types[b] === 0) return resolve(b);
    const again = materialize(b);
    if (pending[b]! > 0) content[b] = again;
    return again;
  };
  const release = (b: number): void => {
    if (pending[b]! > 0 && --pending[b]! === 0) content[b] = undefined;
  };
  /** Resolves delta entry `i` (its base first); returns its content, kept while other deltas need it. */
  const resolve = (i: number): Buffer => {
    if (resolving[i]) throw new CorruptPackError(`delta at pack offset ${offsets[i]} is its own base`);
    resolving[i] = 1;
    const b = baseOf(i);
    const base = contentOf(b);
    let result: Buffer;
    try {
      result = applyDelta(base, deltas[i]!);
    } catch (err) {
      throw new CorruptPackError(`delta at pack offset ${offsets[i]}: ${err instanceof Error ? err.message : String(err)}`);
    }
    resolving[i] = 0;
    deltas[i] = undefined;
    types[i] = types[b]!;
    oids[i] = hashObject(TYPE_NAMES[types[i]]!, result);
    onObject?.(oids[i], TYPE_NAMES[types[i]]!, result);
    const hex = oids[i].toString("hex");
    byOid.set(hex, i);
    pending[i]! += refChildren.get(hex) ?? 0;
    release(b);
    if (pending[i]! > 0) content[i] = result;
    return result;
  };

  // Ref-deltas whose base is itself a delta learn their base's oid only once it is resolved: go round
  // until nothing more resolves; what is left has a base the pack does not hold.
  let unresolved = [...ofsBase.keys(), ...refBase.keys()].sort((a, b) => a - b);
  while (unresolved.length > 0) {
    const left: number[] = [];
    for (const i of unresolved) {
      if (types[i] !== 0) continue;
      const oid = refBase.get(i);
      if (oid !== undefined && !byOid.has(oid)) {
        left.push(i);
        continue;
      }
      resolve(i);
    }
    if (left.length === unresolved.length) {
      const i = left[0]!;
      throw new CorruptPackError(`delta at pack offset ${offsets[i]} needs object ${refBase.get(i)}, which the pack does not hold (a thin pack?)`);
    }
    unresolved = left;
  }

  return { idx: writeIndexV2(oids as Buffer[], offsets, crcs, trailer), checksum: trailer.toString("hex"), objects: count };
}

function hashObject(type: string, content: Buffer): Buffer {
  return createHash("sha1").update(`${type} ${content.length}\0`, "latin1").update(content).digest();
}

/** Pack index version 2: magic, version, fan-out, sorted oids, CRC-32s, offsets (31-bit, then 64-bit), pack checksum, index checksum. */
function writeIndexV2(oids: readonly Buffer[], offsets: readonly number[], crcs: Uint32Array, packChecksum: Buffer): Buffer {
  const n = oids.length;
  // Latin-1 strings of the raw oids sort as the oids do, and natively (a Buffer.compare per comparison was most of this function).
  const hex = oids.map((o) => o.toString("latin1"));
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => (hex[a]! < hex[b]! ? -1 : hex[a]! > hex[b]! ? 1 : 0));
  for (let k = 1; k < n; k++) {
    if (hex[order[k]!] === hex[order[k - 1]!]) throw new CorruptPackError(`object ${oids[order[k]!]!.toString("hex")} appears twice in the pack`);
  }
  const large = order.filter((i) => offsets[i]! >= 0x80000000).length;
  const out = Buffer.alloc(8 + 256 * 4 + n * 28 + large * 8 + 40);
  out.writeUInt32BE(0xff744f63, 0);
  out.writeUInt32BE(2, 4);
  const fanout = new Uint32Array(256);
  for (const oid of oids) fanout[oid[0]!]!++;
  let total = 0;
  for (let b = 0; b < 256; b++) {
    total += fanout[b]!;
    out.writeUInt32BE(total, 8 + b * 4);
  }
  const names = 8 + 256 * 4;
  const crcAt = names + n * 20;
  const offAt = crcAt + n * 4;
  const bigAt = offAt + n * 4;
  let big = 0;
  order.forEach((i, k) => {
    oids[i]!.copy(out, names + k * 20);
    out.writeUInt32BE(crcs[i]!, crcAt + k * 4);
    const off = offsets[i]!;
    if (off < 0x80000000) out.writeUInt32BE(off, offAt + k * 4);
    else {
      out.writeUInt32BE((0x80000000 | big) >>> 0, offAt + k * 4);
      out.writeBigUInt64BE(BigInt(off), bigAt + big * 8);
      big++;
    }
  });
  const sums = bigAt + large * 8;
  packChecksum.copy(out, sums);
  createHash("sha1").update(out.subarray(0, sums + 20)).digest().copy(out, sums + 20);
  return out;
}

/** Applies a git delta (source size, target size, copy/insert instructions) to `base`. */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let pos = 0;
  const varint = (): number => {
    let result = 0;
    let shift = 0;
    let byte: number;
    do {
      if (pos >= delta.length) throw new Error("delta header runs past its end");
      byte = delta[pos++]!;
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return result;
  };
  const srcSize = varint();
  if (srcSize !== base.length) throw new Error(`delta base size ${srcSize} does not match ${base.length}`);
  const out = Buffer.allocUnsafe(varint());
  let o = 0;
  while (pos < delta.length) {
    const op = delta[pos++]!;
    if (op & 0x80) {
      let off = 0;
      let size = 0;
      for (let i = 0; i < 4; i++) if (op & (1 << i)) off |= delta[pos++]! << (8 * i);
      for (let i = 0; i < 3; i++) if (op & (0x10 << i)) size |= delta[pos++]! << (8 * i);
      if (size === 0) size = 0x10000;
      off >>>= 0;
      if (off + size > base.length || o + size > out.length) throw new Error("delta copies past the end of its base or result");
      base.copy(out, o, off, off + size);
      o += size;
    } else if (op > 0) {
      if (pos + op > delta.length || o + op > out.length) throw new Error("delta inserts past its end or its result");
      delta.copy(out, o, pos, pos + op);
      o += op;
      pos += op;
    } else {
      throw new Error("invalid delta opcode 0");
    }
  }
  if (o !== out.length) throw new Error("delta result has the wrong size");
  return out;
}
