/**
 * Just enough DER to check a PKCS#10 request and issue a certificate with node:crypto alone (#39): the
 * relay signs a client certificate for every registration, and node-forge's pure-JS parsing, big-number
 * verification and structure building were about half of the server's CPU per registration. Reading is
 * bounds-checked (a malformed input throws DerError, never reads past its buffer); writing covers the
 * few types a certificate needs.
 */

export class DerError extends Error {
  readonly code = "DerError";
}

/** One TLV: its tag, where its content starts and ends, and where the whole element starts. */
export interface Tlv {
  readonly tag: number;
  readonly start: number;
  readonly content: number;
  readonly end: number;
}

/** The element at `at`, which must lie within `limit` (default: the buffer's end). Long forms up to 4 length bytes. */
export function readTlv(der: Uint8Array, at: number, limit = der.length): Tlv {
  if (at + 2 > limit) throw new DerError("truncated DER element");
  const tag = der[at]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError("multi-byte DER tags are not supported");
  let len = der[at + 1]!;
  let content = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || content + n > limit) throw new DerError("bad DER length");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + der[content + i]!;
    content += n;
  }
  const end = content + len;
  if (end > limit) throw new DerError("DER element runs past its container");
  return { tag, start: at, content, end };
}

/** The elements of a constructed TLV (SEQUENCE, SET, context tag), in order. */
export function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.content; at < parent.end; ) {
    const t = readTlv(der, at, parent.end);
    out.push(t);
    at = t.end;
  }
  return out;
}

/** Dotted text of an OBJECT IDENTIFIER's content. */
export function oidText(der: Uint8Array, t: Tlv): string {
  if (t.tag !== 0x06 || t.end === t.content) throw new DerError("not an OBJECT IDENTIFIER");
  const parts: number[] = [];
  let v = 0;
  for (let i = t.content; i < t.end; i++) {
    v = v * 128 + (der[i]! & 0x7f);
    if (!(der[i]! & 0x80)) {
      if (parts.length === 0) parts.push(v < 80 ? Math.floor(v / 40) : 2, v < 80 ? v % 40 : v - 80);
      else parts.push(v);
      v = 0;
    }
  }
  return parts.join(".");
}

/** The DER of a PEM block with the given label (e.g. "CERTIFICATE REQUEST"); undefined when there is none. */
export function pemToDer(pem: string, labels: readonly string[]): Buffer | undefined {
  for (const label of labels) {
    const begin = pem.indexOf(`-----BEGIN ${label}-----`);
    if (begin < 0) continue;
    const from = begin + label.length + 16;
    const end = pem.indexOf(`-----END ${label}-----`, from);
    if (end < 0) return undefined;
    const body = pem.slice(from, end).replace(/\s+/g, "");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body)) return undefined;
    return Buffer.from(body, "base64");
  }
  return undefined;
}

export function derToPem(der: Uint8Array, label: string): string {
  const b64 = Buffer.from(der).toString("base64");
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64));
  return `-----BEGIN ${label}-----\r\n${lines.join("\r\n")}\r\n-----END ${label}-----\r\n`;
}

// ---- writing ----

function lengthBytes(len: number): number[] {
  if (len < 0x80) return [len];
  const out: number[] = [];
  for (let v = len; v > 0; v = Math.floor(v / 256)) out.unshift(v & 0xff);
  return [0x80 | out.length, ...out];
}

/** One TLV from its tag and content parts. */
export function tlv(tag: number, ...parts: readonly Uint8Array[]): Buffer {
  const content = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag, ...lengthBytes(content.length)]), content]);
}

export const sequence = (...parts: readonly Uint8Array[]) => tlv(0x30, ...parts);
export const set = (...parts: readonly Uint8Array[]) => tlv(0x31, ...parts);
/** [n] EXPLICIT (constructed context tag). */
export const explicit = (n: number, ...parts: readonly Uint8Array[]) => tlv(0xa0 | n, ...parts);
export const octetString = (content: Uint8Array) => tlv(0x04, content);
export const printableString = (s: string) => tlv(0x13, Buffer.from(s, "latin1"));
export const DER_TRUE = Buffer.from([0x01, 0x01, 0xff]);
export const DER_NULL = Buffer.from([0x05, 0x00]);

/** A non-negative INTEGER from big-endian bytes (a 0x00 is put in front when the top bit is set, leading zeros dropped). */
export function unsignedInteger(bytes: Uint8Array): Buffer {
  let i = 0;
  while (i < bytes.length - 1 && bytes[i] === 0) i++;
  const b = bytes.subarray(i);
  return tlv(0x02, b[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b);
}

export function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split(".").map(Number);
  const bytes: number[] = [a! * 40 + b!];
  for (const v of rest) {
    const enc: number[] = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) enc.unshift((x & 0x7f) | 0x80);
    bytes.push(...enc);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A BIT STRING of whole bytes (0 unused bits), e.g. a signature. */
export const bitString = (bytes: Uint8Array) => tlv(0x03, Buffer.from([0]), bytes);

/** RFC 5280 Time: UTCTime through 2049, GeneralizedTime from 2050; whole seconds. */
export function time(ms: number): Buffer {
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-:T]/g, "");
  const year = Number(iso.slice(0, 4));
  return year >= 1950 && year < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, "latin1")) : tlv(0x18, Buffer.from(`${digits}Z`, "latin1"));
}
