/**
 * What travels inside the streams: states (key → bytes), their checksum, deltas between them, and the
 * chunked + gzip-compressed encoding of an update. Pure functions plus a bounded chunk assembler.
 */
import { createHash } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import { ResourceDelta, type Chunk } from "./gen/gitmesh/relay/v1/relay.js";

/** A state carried by the relay: opaque keys (e.g. `service/<ns>/<name>`) to bytes (JSON by convention). */
export type RelayState = ReadonlyMap<string, Uint8Array>;

/** Added/changed entries and removed keys. */
export interface StateDelta {
  readonly upserts: ReadonlyMap<string, Uint8Array>;
  readonly removed: readonly string[];
}

/**
 * Checksum of a state: lowercase hex sha256 over the entries sorted by key (JavaScript's default
 * sort, UTF-16 code units), each fed as u32be(len(utf8 key)) ‖ utf8 key ‖ u32be(len value) ‖ value.
 * Length prefixes make the encoding unambiguous (no key/value boundary confusion).
 */
export function stateChecksum(state: RelayState): string {
  const h = createHash("sha256");
  const len = Buffer.alloc(4);
  for (const key of [...state.keys()].sort()) {
    const k = Buffer.from(key, "utf8");
    const v = state.get(key)!;
    len.writeUInt32BE(k.length);
    h.update(len);
    h.update(k);
    len.writeUInt32BE(v.length);
    h.update(len);
    h.update(v);
  }
  return h.digest("hex");
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/** The delta that turns `prev` into `next`. */
export function diffStates(prev: RelayState, next: RelayState): StateDelta {
  const upserts = new Map<string, Uint8Array>();
  const removed: string[] = [];
  for (const [k, v] of next) {
    const old = prev.get(k);
    if (old === undefined || !sameBytes(old, v)) upserts.set(k, v);
  }
  for (const k of prev.keys()) if (!next.has(k)) removed.push(k);
  removed.sort();
  return { upserts, removed };
}

/** A new state: `base` with `delta` applied. */
export function applyStateDelta(base: RelayState, delta: StateDelta): Map<string, Uint8Array> {
  const out = new Map(base);
  for (const k of delta.removed) out.delete(k);
  for (const [k, v] of delta.upserts) out.set(k, v);
  return out;
}

export function isEmptyDelta(delta: StateDelta): boolean {
  return delta.upserts.size === 0 && delta.removed.length === 0;
}

/**
 * Encodes a delta (a full state is a delta with only upserts) as chunks: the protobuf ResourceDelta
 * is split into pieces of at most `chunkBytes` and each piece is gzip-compressed on its own, so that a
 * receiver never holds more than one compressed chunk plus the assembled state.
 */
export function encodeChunks(delta: StateDelta, chunkBytes: number): Chunk[] {
  const upserts = [...delta.upserts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, value]) => ({ key, value: Buffer.from(value) }));
  const bytes = ResourceDelta.encode({ upserts, removed: [...delta.removed] }).finish();
  const count = Math.max(1, Math.ceil(bytes.length / chunkBytes));
  const chunks: Chunk[] = [];
  for (let index = 0; index < count; index++) {
    chunks.push({ index, count, payload: gzipSync(bytes.subarray(index * chunkBytes, (index + 1) * chunkBytes)) });
  }
  return chunks;
}

/** Why an incoming update could not be assembled. */
export class WireError extends Error {
  readonly code = "WireError";
  constructor(
    readonly kind: "too_large" | "malformed",
    message: string,
  ) {
    super(message);
  }
}

export interface AssemblerLimits {
  /** Largest decompressed piece in one chunk. */
  readonly maxChunkBytes: number;
  /** Largest assembled (decompressed) update. */
  readonly maxStateBytes: number;
  /**
   * Largest decompressed/compressed ratio of one update (a gzip bomb spread over many small chunks),
   * checked once the update has decompressed to more than `ratioFloorBytes` (default: no limit).
   */
  readonly maxRatio?: number;
  readonly ratioFloorBytes?: number;
}

/**
 * Assembles the chunks of one update at a time. `header` is the update's fields other than the chunk;
 * they must be identical in all chunks of an update. Returns the decoded delta when the last chunk
 * arrives, undefined before; throws WireError for anything out of order, undecodable or too large.
 */
export function createChunkAssembler<H>(limits: AssemblerLimits, sameHeader: (a: H, b: H) => boolean) {
  let header: H | undefined;
  let expected = 0;
  let count = 0;
  let pieces: Buffer[] = [];
  let total = 0;
  let compressed = 0;
  const reset = () => {
    header = undefined;
    expected = 0;
    count = 0;
    pieces = [];
    total = 0;
    compressed = 0;
  };
  return {
    /** true while an update is partially received. */
    get pending(): boolean {
      return header !== undefined;
    },
    reset,
    push(h: H, chunk: Chunk | undefined): StateDelta | undefined {
      if (!chunk) throw new WireError("malformed", "the update has no chunk; every update carries chunk {index, count, payload}");
      if (chunk.count < 1 || chunk.index !== expected || (header !== undefined && chunk.count !== count)) {
        const want = header === undefined ? "index 0 of a new update" : `index ${expected} of ${count}`;
        reset();
        throw new WireError("malformed", `chunk ${chunk.index}/${chunk.count} arrived out of order (expected ${want}); send the chunks of one update in order, starting at 0`);
      }
      if (header === undefined) {
        header = h;
        count = chunk.count;
      } else if (!sameHeader(header, h)) {
        reset();
        throw new WireError("malformed", "the chunks of one update disagree on version/checksum/flags; all chunks of an update must carry the same header");
      }
      let piece: Buffer;
      try {
        piece = gunzipSync(chunk.payload, { maxOutputLength: limits.maxChunkBytes });
      } catch (err) {
        reset();
        if (err instanceof RangeError) {
          throw new WireError("too_large", `a chunk decompresses to more than ${limits.maxChunkBytes} bytes; split updates into chunks of at most ${limits.maxChunkBytes} bytes before compression`);
        }
        throw new WireError("malformed", "a chunk payload is not valid gzip data; each chunk payload must be gzip-compressed on its own");
      }
      total += piece.length;
      compressed += chunk.payload.length;
      if (limits.maxRatio !== undefined && total > (limits.ratioFloorBytes ?? 0) && total > limits.maxRatio * compressed) {
        const ratio = Math.round(total / Math.max(1, compressed));
        reset();
        throw new WireError(
          "too_large",
          `the update decompresses ${ratio} times its compressed size, above the limit of ${limits.maxRatio} (a compression bomb?); send real discovery state, or raise the server's maxCompressionRatio`,
        );
      }
      if (total > limits.maxStateBytes) {
        reset();
        throw new WireError("too_large", `the update is larger than ${limits.maxStateBytes} bytes decompressed; reduce what is sent (discovery selectors) or raise the server's maxStateBytes`);
      }
      pieces.push(piece);
      expected++;
      if (expected < count) return undefined;
      const bytes = Buffer.concat(pieces, total);
      reset();
      let decoded: ResourceDelta;
      try {
        decoded = ResourceDelta.decode(bytes);
      } catch {
        throw new WireError("malformed", "the assembled chunks do not decode as a gitmesh.relay.v1.ResourceDelta; check that agent and server speak the same protocol version");
      }
      const upserts = new Map<string, Uint8Array>();
      for (const e of decoded.upserts) {
        if (upserts.has(e.key)) throw new WireError("malformed", `key ${JSON.stringify(e.key)} appears twice in one update; send each key once`);
        upserts.set(e.key, e.value);
      }
      for (const k of decoded.removed) if (upserts.has(k)) throw new WireError("malformed", `key ${JSON.stringify(k)} is both upserted and removed in one update`);
      return { upserts, removed: decoded.removed };
    },
  };
}
