/**
 * Commit signature verification (`gitmesh server --verify-commits`), the way Flux's source-controller
 * verifies before it applies: a commit comes into force only when it carries a signature by a key the
 * operator trusts.
 *
 * - SSH signatures (`git -c gpg.format=ssh commit -S`): keys in git's allowed-signers format
 *   (`gpg.ssh.allowedSignersFile`: `principals [options] keytype base64-key [comment]`), verified as
 *   `ssh-keygen -Y verify -n git` does: the SSHSIG envelope (OpenSSH PROTOCOL.sshsig) is parsed here —
 *   about forty lines; no maintained npm package verifies SSHSIG, and spawning ssh-keygen would add a
 *   binary to the server image — and the signature itself is checked by node:crypto (Ed25519, RSA
 *   rsa-sha2-256/512, ECDSA P-256/384/521).
 * - OpenPGP signatures (`git commit -S` with gpg): armored public keys, verified with `openpgp`.
 *
 * The signed payload is the commit object without its `gpgsig` header (isomorphic-git's readCommit
 * `payload`). Verification answers who signed, or why the commit is not trusted.
 */
import { createHash, createPublicKey, verify as cryptoVerify, type KeyObject } from "node:crypto";
import type * as OpenPgp from "openpgp";

/** openpgp (about 40 ms to load) only in a process that meets an OpenPGP key or signature: every `gitmesh` command that reads Git imports this module. */
let openpgpModule: typeof OpenPgp | undefined;
const loadOpenpgp = async (): Promise<typeof OpenPgp> => (openpgpModule ??= await import("openpgp"));

export type Verdict = { readonly ok: true; readonly signer: string } | { readonly ok: false; readonly reason: string };

export interface CommitVerifier {
  /** `signature`: the commit's gpgsig header (undefined: unsigned). */
  verify(payload: string, signature: string | undefined): Promise<Verdict>;
  /** What is trusted, for logs and status (no key material). */
  readonly describe: string;
}

export interface CommitVerifierOptions {
  /** Content of an allowed-signers file (SSH keys). */
  readonly allowedSigners?: string;
  /** Armored OpenPGP public key(s). */
  readonly openpgpKeys?: string;
}

interface AllowedSigner {
  readonly principals: string;
  readonly keyBlob: Buffer;
  readonly namespaces: readonly string[] | undefined;
}

/** Parses an allowed-signers file; a line that cannot be read is an error naming it (the operator's file). */
export function parseAllowedSigners(text: string): AllowedSigner[] {
  const out: AllowedSigner[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const fields = splitFields(line);
    // principals, then optional options, then keytype and key.
    const typeAt = fields.findIndex((f, n) => n > 0 && /^(ssh-|ecdsa-|sk-)/.test(f));
    if (typeAt < 1 || fields[typeAt + 1] === undefined) throw new Error(`allowed signers line ${String(i + 1)}: expected "principals [options] keytype base64-key", got ${JSON.stringify(line.slice(0, 80))}`);
    const options = fields.slice(1, typeAt).join(",");
    if (/(^|,)cert-authority(,|$)/.test(options)) throw new Error(`allowed signers line ${String(i + 1)}: cert-authority keys are not supported; list the signing keys themselves`);
    const ns = /(?:^|,)namespaces="([^"]*)"/.exec(options)?.[1];
    const keyBlob = Buffer.from(fields[typeAt + 1]!, "base64");
    if (readString(keyBlob, 0).value.toString() !== fields[typeAt]) throw new Error(`allowed signers line ${String(i + 1)}: the key does not decode as ${fields[typeAt]!}`);
    out.push({ principals: fields[0]!, keyBlob, namespaces: ns?.split(",") });
  }
  return out;
}

function splitFields(line: string): string[] {
  const fields: string[] = [];
  let cur = "";
  let quoted = false;
  for (const ch of line) {
    if (ch === '"') quoted = !quoted;
    if (/\s/.test(ch) && !quoted) {
      if (cur) fields.push(cur);
      cur = "";
    } else cur += ch;
  }
  if (cur) fields.push(cur);
  return fields;
}

function readString(buf: Buffer, at: number): { value: Buffer; next: number } {
  if (at + 4 > buf.length) throw new Error("truncated SSH data");
  const len = buf.readUInt32BE(at);
  if (at + 4 + len > buf.length) throw new Error("truncated SSH data");
  return { value: buf.subarray(at + 4, at + 4 + len), next: at + 4 + len };
}
const sshString = (b: Buffer | string) => {
  const v = typeof b === "string" ? Buffer.from(b) : b;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(v.length);
  return Buffer.concat([len, v]);
};
const b64url = (b: Buffer) => b.toString("base64url");
/** An SSH mpint as unsigned big-endian bytes. */
const unsigned = (b: Buffer) => (b[0] === 0 ? b.subarray(1) : b);

/** The public key of an SSH wire-format key blob. */
function publicKeyOf(blob: Buffer): { type: string; key: KeyObject } {
  const type = readString(blob, 0);
  const name = type.value.toString();
  if (name === "ssh-ed25519") {
    const pk = readString(blob, type.next).value;
    return { type: name, key: createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: b64url(pk) }, format: "jwk" }) };
  }
  if (name === "ssh-rsa") {
    const e = readString(blob, type.next);
    const n = readString(blob, e.next);
    return { type: name, key: createPublicKey({ key: { kty: "RSA", e: b64url(unsigned(e.value)), n: b64url(unsigned(n.value)) }, format: "jwk" }) };
  }
  const ec = /^ecdsa-sha2-nistp(256|384|521)$/.exec(name);
  if (ec) {
    const curve = readString(blob, type.next);
    const q = readString(blob, curve.next).value;
    const size = (q.length - 1) / 2;
    return { type: name, key: createPublicKey({ key: { kty: "EC", crv: `P-${ec[1]!}`, x: b64url(q.subarray(1, 1 + size)), y: b64url(q.subarray(1 + size)) }, format: "jwk" }) };
  }
  throw new Error(`key type ${name} is not supported (use ssh-ed25519, ssh-rsa or ecdsa-sha2-nistp*)`);
}

/** Checks an armored SSHSIG over `message` (namespace git); answers the key blob that signed it. */
export function verifySshSignature(armored: string, message: Buffer): { keyBlob: Buffer } {
  const body = armored.replace(/-----(BEGIN|END) SSH SIGNATURE-----/g, "").replace(/\s+/g, "");
  const blob = Buffer.from(body, "base64");
  if (blob.subarray(0, 6).toString() !== "SSHSIG") throw new Error("not an SSH signature (no SSHSIG magic)");
  const version = blob.readUInt32BE(6);
  if (version !== 1) throw new Error(`SSH signature version ${String(version)} is not supported`);
  const pub = readString(blob, 10);
  const namespace = readString(blob, pub.next);
  const reserved = readString(blob, namespace.next);
  const hashAlg = readString(blob, reserved.next);
  const sig = readString(blob, hashAlg.next);
  if (namespace.value.toString() !== "git") throw new Error(`signed for namespace "${namespace.value.toString()}", not "git"`);
  const alg = hashAlg.value.toString();
  if (alg !== "sha512" && alg !== "sha256") throw new Error(`hash algorithm ${alg} is not supported`);
  const signed = Buffer.concat([Buffer.from("SSHSIG"), sshString(namespace.value), sshString(reserved.value), sshString(alg), sshString(createHash(alg).update(message).digest())]);
  const sigType = readString(sig.value, 0);
  const sigBytes = readString(sig.value, sigType.next).value;
  const { type, key } = publicKeyOf(pub.value);
  const sigName = sigType.value.toString();
  let ok: boolean;
  if (type === "ssh-ed25519" && sigName === "ssh-ed25519") ok = cryptoVerify(null, signed, key, sigBytes);
  else if (type === "ssh-rsa" && (sigName === "rsa-sha2-512" || sigName === "rsa-sha2-256")) ok = cryptoVerify(sigName === "rsa-sha2-512" ? "sha512" : "sha256", signed, key, sigBytes);
  else if (type.startsWith("ecdsa-sha2-nistp") && sigName === type) {
    const r = readString(sigBytes, 0);
    const s = readString(sigBytes, r.next);
    const bits = Number(type.slice("ecdsa-sha2-nistp".length));
    const size = Math.ceil(bits / 8);
    const pad = (x: Buffer) => Buffer.concat([Buffer.alloc(Math.max(0, size - unsigned(x).length)), unsigned(x)]);
    ok = cryptoVerify(bits === 256 ? "sha256" : bits === 384 ? "sha384" : "sha512", signed, { key, dsaEncoding: "ieee-p1363" }, Buffer.concat([pad(r.value), pad(s.value)]));
  } else throw new Error(`signature type ${sigName} does not match key type ${type}`);
  if (!ok) throw new Error("the signature does not match the commit (modified after signing, or a forged signature)");
  return { keyBlob: pub.value };
}

/**
 * Splits a raw commit object into the signed payload (the object without its `gpgsig` header, which is
 * what git signs) and the signature. isomorphic-git's `readCommit().payload` is not used: it mangles
 * commits signed with SSH keys.
 */
export function splitSignedCommit(raw: string): { payload: string; signature: string | undefined } {
  const end = raw.indexOf("\n\n");
  const head = end < 0 ? raw : raw.slice(0, end);
  const lines = head.split("\n");
  const kept: string[] = [];
  const sig: string[] = [];
  let inSig = false;
  for (const line of lines) {
    if (line.startsWith("gpgsig ")) {
      inSig = true;
      sig.push(line.slice("gpgsig ".length));
      continue;
    }
    if (inSig && line.startsWith(" ")) {
      sig.push(line.slice(1));
      continue;
    }
    inSig = false;
    kept.push(line);
  }
  return { payload: kept.join("\n") + (end < 0 ? "" : raw.slice(end)), signature: sig.length > 0 ? sig.join("\n") : undefined };
}

export async function createCommitVerifier(options: CommitVerifierOptions): Promise<CommitVerifier> {
  const signers = options.allowedSigners === undefined ? [] : parseAllowedSigners(options.allowedSigners);
  // Public parts only: a private key given by mistake is never kept in memory.
  const pgpKeys = options.openpgpKeys === undefined ? [] : (await (await loadOpenpgp()).readKeys({ armoredKeys: options.openpgpKeys })).map((k) => k.toPublic());
  if (signers.length === 0 && pgpKeys.length === 0) throw new Error("commit verification needs at least one trusted key (allowed signers or OpenPGP keys)");
  const describe = `${String(signers.length)} SSH key(s), ${String(pgpKeys.length)} OpenPGP key(s)`;
  return {
    describe,
    async verify(payload, signature) {
      if (signature === undefined || signature.trim() === "") return { ok: false, reason: "the commit is not signed" };
      const message = Buffer.from(payload, "utf8");
      if (signature.includes("BEGIN SSH SIGNATURE")) {
        let keyBlob: Buffer;
        try {
          keyBlob = verifySshSignature(signature, message).keyBlob;
        } catch (err) {
          return { ok: false, reason: `SSH signature: ${err instanceof Error ? err.message : String(err)}` };
        }
        const fingerprint = `SHA256:${createHash("sha256").update(keyBlob).digest("base64").replace(/=+$/, "")}`;
        const allowed = signers.find((s) => s.keyBlob.equals(keyBlob) && (s.namespaces === undefined || s.namespaces.includes("git")));
        if (!allowed) return { ok: false, reason: `signed with SSH key ${fingerprint}, which is not in the allowed signers` };
        return { ok: true, signer: `${allowed.principals} (SSH ${fingerprint})` };
      }
      if (signature.includes("BEGIN PGP SIGNATURE")) {
        try {
          const openpgp = await loadOpenpgp();
          const sig = await openpgp.readSignature({ armoredSignature: signature });
          const ids = sig.getSigningKeyIDs().map((k) => k.toHex().toUpperCase());
          if (pgpKeys.length === 0) return { ok: false, reason: `signed with OpenPGP key ${ids.join(", ")}, but no OpenPGP key is trusted` };
          const result = await openpgp.verify({ message: await openpgp.createMessage({ binary: message }), signature: sig, verificationKeys: pgpKeys });
          const first = result.signatures[0];
          if (!first) return { ok: false, reason: "the OpenPGP signature holds no signature packet" };
          try {
            await first.verified;
          } catch (err) {
            const msg = err instanceof Error ? err.message : String(err);
            return { ok: false, reason: /Could not find signing key/i.test(msg) ? `signed with OpenPGP key ${ids.join(", ")}, which is not trusted` : `OpenPGP signature: ${msg}` };
          }
          const key = pgpKeys.find((k) => k.getKeyIDs().some((id) => id.equals(first.keyID)));
          const user = key?.getUserIDs()[0] ?? "";
          return { ok: true, signer: `${user} (OpenPGP ${first.keyID.toHex().toUpperCase()})` };
        } catch (err) {
          return { ok: false, reason: `OpenPGP signature: ${err instanceof Error ? err.message : String(err)}` };
        }
      }
      return { ok: false, reason: "the signature is neither an SSH nor an OpenPGP signature" };
    },
  };
}
