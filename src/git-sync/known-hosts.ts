/**
 * OpenSSH `known_hosts`, read the way `ssh` reads it (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"), for the
 * one question an SSH Git client asks: is the host key this server offered the one we were told to expect?
 *
 * Supported: plain and hashed (`|1|salt|hmac`) host names, comma-separated patterns with `*` / `?`
 * wildcards and `!` negation, `[host]:port` for a port other than 22, `@revoked` keys, comments and
 * blank lines. `@cert-authority` lines are skipped (host certificates are not supported): a host
 * known only through one is "unknown", never silently trusted.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

export interface KnownHostKey {
  /** e.g. `ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`. */
  readonly type: string;
  /** The public key blob (the base64 field, decoded). */
  readonly key: Buffer;
  /** 1-based line in the file, for error messages. */
  readonly line: number;
  readonly revoked: boolean;
}

interface KnownHostLine extends KnownHostKey {
  readonly matches: (name: string) => boolean;
}

export interface KnownHosts {
  /** Keys listed for `host` on `port` (revoked ones included, marked). */
  keysFor(host: string, port: number): readonly KnownHostKey[];
}

export type HostKeyVerdict =
  | { readonly kind: "match"; readonly line: number }
  /** No line names this host. */
  | { readonly kind: "unknown" }
  /** Lines name this host, but none with the offered key: a re-keyed server or a man in the middle. */
  | { readonly kind: "changed"; readonly expected: readonly KnownHostKey[] }
  /** The offered key is listed `@revoked`. */
  | { readonly kind: "revoked"; readonly line: number };

/** The name `ssh` looks a host up by: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${String(port)}`;
}

/** Parses the text of a known_hosts file; malformed lines are skipped (as ssh does). */
export function parseKnownHosts(text: string): KnownHosts {
  const lines: KnownHostLine[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const parsed = parseLine(raw, i + 1);
    if (parsed) lines.push(parsed);
  }
  return {
    keysFor(host, port) {
      const name = knownHostsName(host, port);
      return lines.filter((l) => l.matches(name)).map(({ type, key, line, revoked }) => ({ type, key, line, revoked }));
    },
  };
}

/** Whether `offered` (the host key blob the server sent) is the expected key of `host`:`port`. */
export function verifyHostKey(knownHosts: KnownHosts, host: string, port: number, offered: Buffer): HostKeyVerdict {
  const keys = knownHosts.keysFor(host, port);
  const revoked = keys.find((k) => k.revoked && sameKey(k.key, offered));
  if (revoked) return { kind: "revoked", line: revoked.line };
  const trusted = keys.filter((k) => !k.revoked);
  const match = trusted.find((k) => sameKey(k.key, offered));
  if (match) return { kind: "match", line: match.line };
  return trusted.length === 0 ? { kind: "unknown" } : { kind: "changed", expected: trusted };
}

/** `SHA256:<base64 without padding>`, as `ssh-keygen -lf` and `ssh` print a key's fingerprint. */
export function keyFingerprint(blob: Buffer): string {
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

/** The key type named inside an SSH public key blob (its first string), e.g. `ssh-ed25519`. */
export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return "unknown";
  const len = blob.readUInt32BE(0);
  return len > 0 && 4 + len <= blob.length ? blob.subarray(4, 4 + len).toString("latin1") : "unknown";
}

/** The host-key algorithms to ask a server for so that it offers a key of a type we hold (ssh2's names). */
export function hostKeyAlgorithmsFor(types: readonly string[]): string[] {
  const algorithms = new Set<string>();
  for (const t of types) {
    if (t === "ssh-rsa") for (const a of ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"]) algorithms.add(a);
    else if (t === "ssh-ed25519" || t.startsWith("ecdsa-sha2-")) algorithms.add(t);
  }
  return [...algorithms];
}

function sameKey(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function parseLine(raw: string, line: number): KnownHostLine | undefined {
  const text = raw.trim();
  if (text === "" || text.startsWith("#")) return undefined;
  const fields = text.split(/\s+/);
  let revoked = false;
  if (fields[0]?.startsWith("@") === true) {
    const marker = fields.shift();
    if (marker === "@revoked") revoked = true;
    else return undefined; // @cert-authority (unsupported) or an unknown marker
  }
  const [hosts, type, base64] = fields;
  if (hosts === undefined || type === undefined || base64 === undefined || !/^[A-Za-z0-9+/]+=*$/.test(base64)) return undefined;
  const key = Buffer.from(base64, "base64");
  if (keyTypeOf(key) !== type) return undefined;
  return { type, key, line, revoked, matches: hostMatcher(hosts) };
}

/** A matcher of one line's host field: a hashed name, or patterns where a negated match vetoes. */
function hostMatcher(field: string): (name: string) => boolean {
  if (field.startsWith("|1|")) {
    const [, , salt, hash] = field.split("|");
    if (salt === undefined || hash === undefined) return () => false;
    const saltBytes = Buffer.from(salt, "base64");
    const expected = Buffer.from(hash, "base64");
    return (name) => sameKey(createHmac("sha1", saltBytes).update(name).digest(), expected);
  }
  const patterns = field.split(",").filter((p) => p !== "");
  return (name) => {
    let matched = false;
    for (const p of patterns) {
      const negated = p.startsWith("!");
      if (!globMatch(negated ? p.slice(1) : p, name)) continue;
      if (negated) return false;
      matched = true;
    }
    return matched;
  };
}

/** OpenSSH's `match_pattern`: `*` any run, `?` one character, case-insensitive host names. */
function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`, "i");
  return re.test(name);
}
