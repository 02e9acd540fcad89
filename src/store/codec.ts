/**
 * Value encoding for Redis: JSON, deflated when large. The first byte says which: `j` plain JSON,
 * `z` raw-deflate of JSON (level 1: desired states and outputs shrink ~8-15x for a fraction of a
 * millisecond per 100 kB; see bench/pipeline).
 */
import { deflateRawSync, inflateRawSync, constants } from "node:zlib";

/** Values whose JSON is at least this long are compressed. */
export const COMPRESS_THRESHOLD = 1024;

export function encodeValue(value: unknown): Buffer {
  const json = JSON.stringify(value);
  if (json.length < COMPRESS_THRESHOLD) return Buffer.concat([Buffer.from("j"), Buffer.from(json, "utf8")]);
  return Buffer.concat([Buffer.from("z"), deflateRawSync(Buffer.from(json, "utf8"), { level: constants.Z_BEST_SPEED })]);
}

/** Decodes a stored value; the caller names the type it stored (values are trusted: only gitmesh writes under its prefix). */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller states the stored type
export function decodeValue<T>(buf: Buffer): T {
  const tag = buf[0];
  const body = buf.subarray(1);
  if (tag === 0x7a /* z */) return JSON.parse(inflateRawSync(body).toString("utf8")) as T;
  if (tag === 0x6a /* j */) return JSON.parse(body.toString("utf8")) as T;
  throw new Error(`snapshot store: value with unknown encoding tag ${String(tag)}; was it written by another program under the same prefix?`);
}
