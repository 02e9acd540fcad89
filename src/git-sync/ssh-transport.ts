/**
 * Git over SSH for isomorphic-git, through its `http` plugin seam: isomorphic-git speaks the smart
 * protocol to an `HttpClient` (a GET of `…/info/refs?service=<service>`, then a POST of
 * `…/<service>`), and this client answers each request by running that service on the SSH server
 * (`git-upload-pack '<path>'` / `git-receive-pack '<path>'` on an exec channel of `ssh2`, a well-kept
 * SSH implementation — no SSH protocol here).
 *
 * Protocol v0/v1 over SSH is stateful where smart HTTP is stateless, but every isomorphic-git request
 * body is complete on its own (the wants, shallows, haves and `done`; the commands and the pack), which
 * a stateful service reads just as well:
 *
 * - GET: run the service, read its ref advertisement (pkt-lines up to the flush) and answer as smart
 *   HTTP does (`# service=…` + flush + advertisement); the channel is then kept ("parked") for a few
 *   seconds: the POST that follows (a fetch's or a push's) is written to the very service that
 *   advertised, which is waiting for it. Nothing follows: it is told "nothing" (a flush, as
 *   `git ls-remote` does) and closed;
 * - POST: on the parked channel, or on a fresh one whose advertisement is read and dropped (the
 *   `--stateless-rpc` way): send the body, close our side, stream the service's output back.
 *
 * One authenticated connection serves the requests that follow each other (SSH_IDLE_CLOSE_MS), so a
 * poll that finds nothing new costs one exec of `git-upload-pack` and no new key exchange.
 *
 * Security: the server's host key must be the one `known_hosts` lists for that host and port (unknown
 * and changed keys are refused; `acceptUnknownHosts` trusts an unknown host on first use and pins its
 * key for the life of the client). The private key and its passphrase are read from files on each
 * connection (a rotated Kubernetes Secret takes effect without a restart) and never logged.
 */
import { readFile } from "node:fs/promises";
import { Socket } from "node:net";
import type { GitHttpRequest, GitHttpResponse, HttpClient } from "isomorphic-git";
import ssh2, { type Client as SshClient, type ClientChannel, type ConnectConfig, type ParsedKey, type PublicKeyAuthMethod } from "ssh2";
import { describeError } from "../core/index.js";
import { GitAuthError, GitHostKeyError, GitRefNotFoundError, GitTransportError } from "./errors.js";
import { hostKeyAlgorithmsFor, keyFingerprint, keyTypeOf, knownHostsName, parseKnownHosts, verifyHostKey, type HostKeyVerdict } from "./known-hosts.js";
import { sshGitCommand, type SshUrl } from "./ssh-url.js";

export interface SshAuthOptions {
  /** File holding the private key (OpenSSH or PEM; ed25519, ecdsa or rsa), e.g. a deploy key. */
  readonly privateKeyFile: string;
  /** Passphrase of an encrypted key (default: none). Never logged. */
  readonly passphrase?: string;
  /** OpenSSH known_hosts file listing the server's host key (required unless `acceptUnknownHosts`). */
  readonly knownHostsFile?: string;
  /**
   * Trust on first use: a host that known_hosts does not list is accepted (its key is logged with its
   * fingerprint and pinned for the life of this client); a listed host whose key differs is still refused.
   * Default false: an unknown host is refused.
   */
  readonly acceptUnknownHosts?: boolean;
  /** How long connecting, the key exchange and authentication may take (default 20 s). */
  readonly connectTimeoutMs?: number;
}

export interface SshGitClientOptions extends SshAuthOptions {
  readonly remote: SshUrl;
  /** Told when an unknown host is trusted on first use (with `acceptUnknownHosts`). */
  readonly onHostTrusted?: (host: string, keyType: string, fingerprint: string) => void;
}

/** Default time allowed for the TCP connection, key exchange and authentication. */
export const SSH_CONNECT_TIMEOUT_MS = 20_000;

/** How long an idle SSH connection stays open for the next request. */
export const SSH_IDLE_CLOSE_MS = 10_000;

/** How long the channel of a ref advertisement waits for the request that follows it (then it is told "nothing" and closed). */
const SSH_PARK_MS = 3_000;

// ssh2 is CommonJS whose exports Node's ESM loader cannot see by name: take them from the module object.
const { Client, utils } = ssh2;

type Service = "git-upload-pack" | "git-receive-pack";

/** The http(s) URL isomorphic-git is given for an SSH remote; only the client made for it understands it. */
export function sshPseudoUrl(remote: SshUrl): string {
  return `https://ssh.invalid/${encodeURIComponent(remote.display)}`;
}

/** An isomorphic-git `HttpClient` that carries the smart protocol over SSH to `options.remote`. */
export function createSshGitClient(options: SshGitClientOptions): HttpClient {
  const pool = connectionPool(options, { pinned: new Map<string, Buffer>(), keys: keyCache() });
  // The channel of the last ref advertisement, kept for the request that follows it (a fetch's or a
  // push's POST): the service is already waiting for it, one exec of the service instead of two.
  let parked: { readonly service: Service; readonly session: Session; readonly timer: NodeJS.Timeout } | undefined;
  const unpark = (service?: Service): Session | undefined => {
    const p = parked;
    if (p === undefined) return undefined;
    parked = undefined;
    clearTimeout(p.timer);
    if (p.service === service) return p.session;
    p.session.finish(FLUSH);
    return undefined;
  };
  const park = (service: Service, session: Session) => {
    unpark();
    const timer = setTimeout(() => {
      if (parked?.session === session) unpark();
    }, SSH_PARK_MS);
    timer.unref();
    parked = { service, session, timer };
  };
  return {
    async request(req: GitHttpRequest): Promise<GitHttpResponse> {
      const { service, rpc } = route(req);
      const reused = rpc ? unpark(service) : undefined;
      const session = reused ?? (await openSession(pool, options.remote, service));
      session.bind(req.signal);
      try {
        const advertisement = reused ? undefined : await session.readAdvertisement();
        if (!rpc) {
          park(service, session);
          const body = Buffer.concat([pktLine(`# service=${service}\n`), FLUSH, advertisement ?? Buffer.alloc(0)]);
          return response(req, service, "advertisement", once(body));
        }
        await session.send(req.body);
        return response(req, service, "result", session.output());
      } catch (err) {
        session.close();
        throw err;
      }
    },
  };
}

const FLUSH = Buffer.from("0000");

function pktLine(text: string): Buffer {
  const payload = Buffer.from(text);
  return Buffer.concat([Buffer.from((payload.length + 4).toString(16).padStart(4, "0")), payload]);
}

function route(req: GitHttpRequest): { service: Service; rpc: boolean } {
  const m = /\/(?:info\/refs\?service=(git-upload-pack|git-receive-pack)|(git-upload-pack|git-receive-pack))$/.exec(req.url);
  const service = (m?.[1] ?? m?.[2]) as Service | undefined;
  if (service === undefined) throw new GitTransportError(`Git over SSH: unexpected request ${req.method ?? "GET"} ${req.url}`);
  return { service, rpc: m?.[2] !== undefined };
}

function response(req: GitHttpRequest, service: Service, kind: string, body: AsyncIterableIterator<Uint8Array>): GitHttpResponse {
  return { url: req.url, method: req.method ?? "GET", statusCode: 200, statusMessage: "OK", headers: { "content-type": `application/x-${service}-${kind}` }, body };
}

function once(chunk: Uint8Array): AsyncIterableIterator<Uint8Array> {
  let sent = false;
  const it: AsyncIterableIterator<Uint8Array> = {
    next: () => {
      const done = sent;
      sent = true;
      return Promise.resolve(done ? { done: true, value: undefined } : { done: false, value: chunk });
    },
    [Symbol.asyncIterator]: () => it,
  };
  return it;
}

interface Session {
  /** Closes the channel when `signal` aborts (the request's; a parked session is bound to the next one). */
  bind(signal: AbortSignal | undefined): void;
  /** The ref advertisement: pkt-lines up to and including the flush. */
  readAdvertisement(): Promise<Buffer>;
  /** Writes the request body and closes our side of the channel. */
  send(body: GitHttpRequest["body"]): Promise<void>;
  /** Writes `last` and closes the channel. */
  finish(last: Buffer): void;
  /** The rest of the service's output; the channel closes when it ends or the reader stops. */
  output(): AsyncIterableIterator<Uint8Array>;
  close(): void;
}

/** One use of a pooled connection. */
interface Lease {
  readonly conn: SshClient;
  /** True when the connection was made for this use (not reused). */
  readonly fresh: boolean;
  release(): void;
  /** Releases and closes the connection (it failed). */
  discard(): void;
}

interface ConnectionPool {
  acquire(): Promise<Lease>;
}

/**
 * One authenticated connection, reused by the requests that follow within `SSH_IDLE_CLOSE_MS` (a fetch
 * is two requests, a sync or a diff several): each request then costs an exec channel, not a TCP
 * connection, a key exchange and an authentication. An idle connection does not keep the process alive.
 */
function connectionPool(options: SshGitClientOptions, state: ClientState): ConnectionPool {
  interface Entry {
    readonly conn: SshClient;
    readonly sock: Socket;
    users: number;
    alive: boolean;
    timer: NodeJS.Timeout | undefined;
  }
  let current: Entry | undefined;
  const drop = (e: Entry) => {
    e.alive = false;
    if (current === e) current = undefined;
  };
  const idle = (e: Entry) => {
    e.sock.unref();
    e.timer = setTimeout(() => {
      if (e.users > 0) return;
      drop(e);
      e.conn.end();
    }, SSH_IDLE_CLOSE_MS);
    e.timer.unref();
  };
  const lease = (e: Entry, fresh: boolean): Lease => {
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      e.users--;
      if (e.users === 0 && e.alive) idle(e);
      else if (e.users === 0) e.conn.end();
    };
    return {
      conn: e.conn,
      fresh,
      release,
      discard: () => {
        drop(e);
        release();
      },
    };
  };
  return {
    async acquire() {
      const reuse = current;
      if (reuse?.alive === true) {
        clearTimeout(reuse.timer);
        reuse.users++;
        reuse.sock.ref();
        return lease(reuse, false);
      }
      const { conn, sock } = await connect(options, state);
      const e: Entry = { conn, sock, users: 1, alive: true, timer: undefined };
      conn.on("close", () => drop(e));
      current = e;
      return lease(e, true);
    },
  };
}

/** Connects, verifies the host key and authenticates. */
async function connect(options: SshGitClientOptions, state: ClientState): Promise<{ conn: SshClient; sock: Socket }> {
  const { remote } = options;
  const where = `${remote.user}@${knownHostsName(remote.host, remote.port)}`;
  const config = await connectConfig(options, state);
  const conn = new Client();
  const sock = new Socket();
  // For the connection's whole life: an error after the first (the server resetting the socket after a
  // refused host key, say) must never reach the process as an uncaught exception. Errors after the
  // handshake are reported by the channels' reads.
  conn.on("error", () => undefined);
  try {
    await new Promise<void>((resolve, reject) => {
      conn.once("ready", resolve);
      conn.once("error", (err: Error & { level?: string }) => reject(connectError(err, options, config, where)));
      conn.once("close", () => reject(new GitTransportError(`Git over SSH: ${where} closed the connection before it was ready`)));
      conn.connect({ ...config.connect, sock });
      sock.connect({ host: remote.host, port: remote.port });
    });
  } catch (err) {
    // A connection that never became ready is closed here: nothing else holds it.
    conn.end();
    sock.destroy();
    throw err;
  }
  return { conn, sock };
}

/** Starts `service` on an exec channel of a pooled connection (a fresh one when a reused one fails). */
async function openSession(pool: ConnectionPool, remote: SshUrl, service: Service): Promise<Session> {
  for (;;) {
    const lease = await pool.acquire();
    try {
      const channel = await new Promise<ClientChannel>((resolve, reject) => {
        lease.conn.exec(sshGitCommand(service, remote.path), (err, ch) =>
          err ? reject(new GitTransportError(`Git over SSH: ${remote.host} refused to run ${service}: ${err.message}`, { cause: err })) : resolve(ch),
        );
      });
      return channelSession(lease, channel, service, remote);
    } catch (err) {
      lease.discard();
      if (!lease.fresh) continue; // the server closed an idle connection: once more on a new one
      throw err;
    }
  }
}

function channelSession(lease: Lease, channel: ClientChannel, service: Service, remote: SshUrl): Session {
  let stderr = "";
  channel.stderr.on("data", (d: Buffer) => {
    if (stderr.length < 4096) stderr += d.toString("utf8");
  });
  const exited = new Promise<number | undefined>((resolve) => {
    channel.once("exit", (code: number | null) => resolve(code ?? undefined));
    channel.once("close", () => resolve(undefined));
  });
  channel.on("error", () => undefined);
  const chunks = channel[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let pending = Buffer.alloc(0);
  let signal: AbortSignal | undefined;
  const unbind = () => signal?.removeEventListener("abort", onAbort);
  // An aborted request (the idle timeout, a caller's signal) closes its connection too: a server that
  // stopped answering one channel is not trusted with the next request.
  function onAbort() {
    unbind();
    channel.destroy();
    lease.discard();
  }
  const close = () => {
    unbind();
    if (!channel.destroyed) channel.destroy();
    lease.release();
  };
  channel.once("close", () => {
    unbind();
    lease.release();
  });

  const failed = async (): Promise<Error> => {
    const code = await exited;
    return serviceError(service, remote, code, stderr.trim());
  };

  return {
    bind(next) {
      unbind();
      signal = next;
      if (next?.aborted === true) onAbort();
      else next?.addEventListener("abort", onAbort, { once: true });
    },
    async readAdvertisement() {
      for (;;) {
        const end = advertisementEnd(pending);
        if (end === "error") throw await failed();
        if (end !== undefined) {
          const ad = pending.subarray(0, end);
          pending = pending.subarray(end);
          if (ad.length >= 8 && ad.subarray(4, 8).toString() === "ERR ") {
            throw new GitRefNotFoundError(`Git over SSH: ${remote.display}: ${ad.subarray(8).toString().trim()}`);
          }
          return ad;
        }
        const next = await chunks.next();
        if (next.done === true) throw await failed();
        pending = Buffer.concat([pending, next.value]);
      }
    },
    async send(body) {
      for await (const chunk of body ?? []) {
        if (!channel.write(chunk)) await new Promise((resolve) => channel.once("drain", resolve));
      }
      channel.end();
    },
    finish(last) {
      unbind();
      channel.end(last);
    },
    async *output() {
      try {
        if (pending.length > 0) yield pending;
        for (;;) {
          const next = await chunks.next();
          if (next.done === true) break;
          yield next.value;
        }
      } finally {
        close();
      }
    },
    close,
  };
}

/**
 * Where the ref advertisement ends in `buf` (after its flush-pkt), undefined when more is needed,
 * "error" when the bytes are not pkt-lines (the service did not start: a shell message, say).
 */
function advertisementEnd(buf: Buffer): number | "error" | undefined {
  let at = 0;
  while (at + 4 <= buf.length) {
    const hex = buf.subarray(at, at + 4).toString("latin1");
    if (!/^[0-9a-f]{4}$/i.test(hex)) return "error";
    const len = parseInt(hex, 16);
    if (len === 0) return at + 4;
    if (len < 4) return "error";
    if (at + len > buf.length) return undefined;
    if (buf.subarray(at + 4, at + 8).toString() === "ERR ") return at + len;
    at += len;
  }
  return undefined;
}

/** What the server's refusal to serve the repository means, from the service's exit status and stderr. */
function serviceError(service: Service, remote: SshUrl, code: number | undefined, stderr: string): Error {
  const said = stderr === "" ? `exit status ${code === undefined ? "unknown" : String(code)}` : stderr.split("\n").slice(0, 5).join("; ");
  const what = `Git over SSH: ${service} ${remote.path} on ${remote.host}`;
  if (/not (appear to be )?a git repository|repository not found|does not exist|no such (file|repository)|not found/i.test(stderr)) {
    return new GitRefNotFoundError(`${what}: the repository does not exist (${said}) — check the path in ${remote.display}`);
  }
  if (/permission denied|access denied|denied to|not authori[sz]ed|forbidden/i.test(stderr)) {
    return new GitAuthError(`${what}: access refused (${said}) — give the key access to the repository (for the audit branch: write access)`);
  }
  if (code === 127 || /command not found/i.test(stderr)) {
    return new GitTransportError(`${what}: the server cannot run ${service} (${said}) — is git installed there, and is this a Git host?`);
  }
  return new GitTransportError(`${what} ended before it advertised refs (${said})`);
}

interface PreparedConnect {
  readonly connect: ConnectConfig;
  /** The host-key check's verdict, once the server offered its key. */
  verdict(): { readonly verdict: HostKeyVerdict; readonly offered: Buffer } | undefined;
  /** The host key types known_hosts (or a key trusted on first use) holds for this host; the server was asked for these only. */
  readonly expectedTypes: readonly string[];
}

/** ssh2's connection settings: the key (read and decrypted here, for clear errors), the host-key check. */
async function connectConfig(options: SshGitClientOptions, { pinned, keys }: ClientState): Promise<PreparedConnect> {
  const { remote } = options;
  const key = await keys.read(options);
  const knownHosts = parseKnownHosts(options.knownHostsFile === undefined ? "" : await readText(options.knownHostsFile, "known_hosts file"));
  const name = knownHostsName(remote.host, remote.port);
  const listed = knownHosts.keysFor(remote.host, remote.port).filter((k) => !k.revoked);
  const pin = pinned.get(name);
  const types = pin !== undefined ? [keyTypeOf(pin)] : listed.map((k) => k.type);
  // Ask for a key of a type we hold: a server that also has an ed25519 key must not look "changed"
  // because it offered that one first while known_hosts lists its RSA key.
  const serverHostKey = hostKeyAlgorithmsFor(types);
  let seen: { verdict: HostKeyVerdict; offered: Buffer } | undefined;
  const hostVerifier = (offered: Buffer): boolean => {
    let verdict = verifyHostKey(knownHosts, remote.host, remote.port, offered);
    if (verdict.kind === "unknown" && pin !== undefined) {
      verdict = pin.equals(offered) ? { kind: "match", line: 0 } : { kind: "changed", expected: [{ type: keyTypeOf(pin), key: pin, line: 0, revoked: false }] };
    }
    seen = { verdict, offered };
    if (verdict.kind === "match") return true;
    if (verdict.kind === "unknown" && options.acceptUnknownHosts === true) {
      pinned.set(name, Buffer.from(offered));
      options.onHostTrusted?.(name, keyTypeOf(offered), keyFingerprint(offered));
      return true;
    }
    return false;
  };
  return {
    connect: {
      host: remote.host,
      port: remote.port,
      username: remote.user,
      // the key as parsed (and decrypted) once: an encrypted key's KDF costs seconds in JavaScript
      authHandler: [publicKeyAuth(remote.user, key)],
      hostVerifier,
      readyTimeout: options.connectTimeoutMs ?? SSH_CONNECT_TIMEOUT_MS,
      ...(serverHostKey.length > 0 ? { algorithms: { serverHostKey: serverHostKey as NonNullable<NonNullable<ConnectConfig["algorithms"]>["serverHostKey"]> } } : {}),
    },
    verdict: () => seen,
    expectedTypes: types,
  };
}

function publicKeyAuth(username: string, key: ParsedKey): PublicKeyAuthMethod {
  return { type: "publickey", username, key };
}

/** What one client keeps between requests: keys trusted on first use, and the last parsed private key. */
interface ClientState {
  readonly pinned: Map<string, Buffer>;
  readonly keys: KeyCache;
}

interface KeyCache {
  read(options: SshAuthOptions): Promise<ParsedKey>;
}

/** The key file is read on every connection; it is parsed again only when its content changed. */
function keyCache(): KeyCache {
  let last: { readonly text: string; readonly key: ParsedKey } | undefined;
  return {
    async read(options) {
      const text = await readText(options.privateKeyFile, "SSH private key file");
      if (last?.text === text) return last.key;
      const key = parsePrivateKey(text, options);
      last = { text, key };
      return key;
    },
  };
}

/** The private key, decrypted; a wrong passphrase or a file without a key is said naming the file. */
function parsePrivateKey(text: string, options: SshAuthOptions): ParsedKey {
  const file = options.privateKeyFile;
  const parsed = utils.parseKey(text, options.passphrase);
  const key: ParsedKey | undefined = Array.isArray(parsed) ? (parsed[0] as ParsedKey | undefined) : parsed instanceof Error ? undefined : parsed;
  if (parsed instanceof Error || key === undefined) {
    const reason = parsed instanceof Error ? parsed.message : "no key in it";
    const hint = /passphrase/i.test(reason)
      ? options.passphrase === undefined
        ? "the key is encrypted: give its passphrase"
        : "the passphrase does not decrypt it"
      : "it must hold an OpenSSH or PEM private key (ed25519, ecdsa or rsa)";
    throw new GitAuthError(`SSH private key ${file} cannot be used: ${reason} — ${hint}`);
  }
  if (!key.isPrivateKey()) throw new GitAuthError(`SSH private key ${file} holds a public key — give the private key (the file without .pub)`);
  return key;
}

async function readText(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    throw new GitAuthError(`${what} ${file} cannot be read: ${describeError(err)}`, { cause: err });
  }
}

/** One error per way the connection can fail, each saying what to do. */
function connectError(err: Error & { level?: string }, options: SshGitClientOptions, config: PreparedConnect, where: string): Error {
  const seen = config.verdict();
  if (seen !== undefined && seen.verdict.kind !== "match" && !(seen.verdict.kind === "unknown" && options.acceptUnknownHosts === true)) {
    return hostKeyError(seen.verdict, seen.offered, options, where);
  }
  if (seen === undefined && /no matching host key/i.test(err.message) && config.expectedTypes.length > 0) {
    // known_hosts names the host, but the server has no key of those types any more: a changed key.
    return new GitHostKeyError(
      `Git over SSH: the host key of ${knownHostsName(options.remote.host, options.remote.port)} CHANGED: ${options.knownHostsFile ?? "known_hosts"} lists ${config.expectedTypes.join(", ")} keys for it, and the server offers none of those types. ` +
        `Confirm the server's new key with the Git host's operators before replacing the line in known_hosts`,
      { cause: err },
    );
  }
  if (err.level === "client-authentication") {
    return new GitAuthError(
      `Git over SSH: ${where} refused the key ${options.privateKeyFile} — add its public key as a deploy key of the repository (write access for the audit branch), or configure the key that is`,
      { cause: err },
    );
  }
  if (err.level === "client-timeout") return new GitTransportError(`Git over SSH: ${where} did not complete the SSH handshake in time (${describeError(err)})`, { cause: err });
  return new GitTransportError(`Git over SSH: cannot connect to ${where}: ${describeError(err)}`, { cause: err });
}

function hostKeyError(verdict: HostKeyVerdict, offered: Buffer, options: SshGitClientOptions, where: string): GitHostKeyError {
  const key = `${keyTypeOf(offered)} ${keyFingerprint(offered)}`;
  const file = options.knownHostsFile ?? "(no known_hosts file configured)";
  const name = knownHostsName(options.remote.host, options.remote.port);
  if (verdict.kind === "revoked") {
    return new GitHostKeyError(`Git over SSH: ${where} offered host key ${key}, which line ${String(verdict.line)} of ${file} marks @revoked — refused`);
  }
  if (verdict.kind === "changed") {
    const expected = verdict.expected.map((k) => `${k.type} ${keyFingerprint(k.key)}${k.line > 0 ? ` (line ${String(k.line)})` : " (trusted on first use)"}`).join(", ");
    return new GitHostKeyError(
      `Git over SSH: the host key of ${name} CHANGED: it offered ${key}, ${file} expects ${expected}. Someone may be intercepting the connection, or the server was re-keyed — ` +
        `confirm the new fingerprint with the Git host's operators before replacing the line in known_hosts`,
    );
  }
  return new GitHostKeyError(
    `Git over SSH: the host key of ${name} (${key}) is not in ${file} — check the fingerprint with the Git host (GitHub and GitLab publish theirs), then add the line ` +
      `(\`ssh-keyscan${options.remote.port === 22 ? "" : ` -p ${String(options.remote.port)}`} ${options.remote.host}\` prints it); or allow trust on first use explicitly`,
  );
}
