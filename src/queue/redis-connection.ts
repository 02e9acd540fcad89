/**
 * The one place that turns the configured Redis address into ioredis clients: `parseRedisUrl`
 * validates a URL once (at the composition root) into a frozen `RedisConnectionConfig`, and
 * `createRedisClient` builds a client for it — a `Redis` for a single server or a Sentinel-managed
 * primary, a `Cluster` for Redis Cluster. See README.md "Redis topologies".
 *
 *   redis://[user:password@]host[:6379][/db]
 *   rediss://…                                           TLS
 *   redis-sentinel://[user:password@]s1[:26379],s2,s3/<master name>[/db][?sentinelPassword=…&sentinelUsername=…&db=N]
 *   rediss-sentinel://…                                  TLS to the sentinels and the data nodes
 *   redis-cluster://[user:password@]n1[:6379],n2,n3      seed nodes; the others are discovered
 *   rediss-cluster://…                                   TLS
 *
 * `redis+sentinel://` and `redis+cluster://` (the spelling of Python's redis-sentinel-url and of
 * Prefect) are accepted too; `sentinelMasterId=` (Lettuce's) may name the master instead of the path.
 * The user name and password are those of the data nodes (Redis ACL or `requirepass`); Sentinel's
 * own are the query parameters. Credentials never appear in `display` or in an error.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import { NeedsHumanError, stripCredentials } from "../core/index.js";

/** A client of any topology; the store, the lock and BullMQ take either. */
export type RedisClient = Redis | Cluster;

export type RedisTopology = "standalone" | "sentinel" | "cluster";

export interface RedisNode {
  /** Host name or IP address (IPv6 without brackets). */
  readonly host: string;
  readonly port: number;
}

interface RedisConfigBase {
  readonly kind: RedisTopology;
  /** TLS to every node (rediss…://). Trust: the system's roots plus NODE_EXTRA_CA_CERTS. */
  readonly tls: boolean;
  /** Data nodes' user (Redis 6 ACL); absent: `default`. */
  readonly username?: string;
  /** Data nodes' password; absent: no AUTH. */
  readonly password?: string;
  /** The address without credentials, normalised (logs, status, errors). */
  readonly display: string;
}

export interface StandaloneRedisConfig extends RedisConfigBase {
  readonly kind: "standalone";
  readonly node: RedisNode;
  readonly db: number;
}

export interface SentinelRedisConfig extends RedisConfigBase {
  readonly kind: "sentinel";
  readonly sentinels: readonly RedisNode[];
  /** The master group name the sentinels monitor (`sentinel monitor <name> …`). */
  readonly masterName: string;
  readonly db: number;
  readonly sentinelUsername?: string;
  readonly sentinelPassword?: string;
}

export interface ClusterRedisConfig extends RedisConfigBase {
  readonly kind: "cluster";
  /** Seed nodes; the client discovers the others (CLUSTER SLOTS). */
  readonly nodes: readonly RedisNode[];
}

export type RedisConnectionConfig = StandaloneRedisConfig | SentinelRedisConfig | ClusterRedisConfig;

/** A Redis URL that cannot be used; the message says what to write instead and never holds a credential. */
export class RedisUrlError extends NeedsHumanError {}

const SCHEMES: Readonly<Record<string, { readonly kind: RedisTopology; readonly tls: boolean }>> = {
  redis: { kind: "standalone", tls: false },
  rediss: { kind: "standalone", tls: true },
  "redis-sentinel": { kind: "sentinel", tls: false },
  "rediss-sentinel": { kind: "sentinel", tls: true },
  "redis-cluster": { kind: "cluster", tls: false },
  "rediss-cluster": { kind: "cluster", tls: true },
};
const DEFAULT_PORT: Readonly<Record<RedisTopology, number>> = { standalone: 6379, sentinel: 26379, cluster: 6379 };
const QUERY_PARAMS: Readonly<Record<RedisTopology, readonly string[]>> = {
  standalone: ["db"],
  sentinel: ["db", "sentinelPassword", "sentinelUsername", "sentinelMasterId"],
  cluster: [],
};
const FORMS =
  "redis://[user:password@]host:6379[/db], rediss://… (TLS), redis-sentinel://[user:password@]sentinel1:26379,sentinel2:26379,sentinel3:26379/<master name>[?sentinelPassword=…] or redis-cluster://[user:password@]node1:6379,node2:6379,node3:6379";
const HOST_NAME = /^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/;
const IPV6 = /^[0-9A-Fa-f:.]+$/;

/**
 * Parses and validates a Redis URL (forms above). Throws `RedisUrlError` whose message shows the URL
 * without credentials and says what to write; the caller adds where the URL came from (flag, env).
 */
export function parseRedisUrl(url: string): RedisConnectionConfig {
  const raw = url.trim();
  // What an error shows: never the user information, whatever characters the password holds.
  let shown = `"${stripCredentials(raw.includes("@") ? `…@${raw.slice(raw.lastIndexOf("@") + 1)}` : raw)}"`;
  const fail: (what: string) => never = (what) => {
    throw new RedisUrlError(`Redis URL ${shown} ${what}`);
  };
  const schemeEnd = raw.indexOf("://");
  if (schemeEnd <= 0) fail(`has no scheme; write ${FORMS}`);
  const schemeText = raw.slice(0, schemeEnd).toLowerCase();
  const scheme = SCHEMES[schemeText.replace("+", "-")];
  if (scheme === undefined) fail(`has the unknown scheme "${schemeText}"; write ${FORMS}`);
  const { kind, tls } = scheme;
  const rest = raw.slice(schemeEnd + 3);
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd);
  const tail = authorityEnd === -1 ? "" : rest.slice(authorityEnd);
  if (tail.includes("@")) {
    // A password with an unencoded / ? # cuts the URL in the wrong place: say so without echoing any part of it.
    throw new RedisUrlError(`Redis URL for ${schemeText}:// has a user name or password with a character that must be percent-encoded (/ → %2F, ? → %3F, # → %23, @ → %40)`);
  }
  const at = authority.lastIndexOf("@");
  const userinfo = at === -1 ? undefined : authority.slice(0, at);
  const hostList = at === -1 ? authority : authority.slice(at + 1);
  shown = `"${schemeText}://${stripCredentials(`${hostList}${tail}`)}"`;

  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(":");
    const decode = (s: string): string => {
      try {
        return decodeURIComponent(s);
      } catch {
        throw new RedisUrlError(`Redis URL for ${schemeText}:// has a user name or password that is not valid percent-encoding (write %25 for a literal %)`);
      }
    };
    const user = decode(colon === -1 ? userinfo : userinfo.slice(0, colon));
    const pass = colon === -1 ? undefined : decode(userinfo.slice(colon + 1));
    if (user !== "") username = user;
    if (pass !== undefined && pass !== "") password = pass;
  }

  if (hostList === "") fail(`names no host; write ${FORMS}`);
  const nodes = hostList.split(",").map((entry) => parseNode(entry, DEFAULT_PORT[kind], fail));
  const seen = new Set<string>();
  for (const n of nodes) {
    const key = `${n.host}:${n.port}`;
    if (seen.has(key)) fail(`lists ${formatNode(n)} twice`);
    seen.add(key);
  }

  const hashAt = tail.indexOf("#");
  if (hashAt !== -1) fail(`has a fragment (#…), which means nothing here; remove it`);
  const queryAt = tail.indexOf("?");
  const path = queryAt === -1 ? tail : tail.slice(0, queryAt);
  const query = new Map<string, string>();
  if (queryAt !== -1) {
    for (const part of tail.slice(queryAt + 1).split("&")) {
      if (part === "") continue;
      const eq = part.indexOf("=");
      const name = eq === -1 ? part : part.slice(0, eq);
      let value: string;
      try {
        value = decodeURIComponent(eq === -1 ? "" : part.slice(eq + 1));
      } catch {
        return fail(`has a query parameter "${name}" that is not valid percent-encoding`);
      }
      const known = QUERY_PARAMS[kind];
      if (!known.includes(name)) fail(`has the query parameter "${name}", which ${schemeText}:// does not take${known.length === 0 ? "" : ` (it takes ${known.join(", ")})`}`);
      if (query.has(name)) fail(`gives the query parameter "${name}" twice`);
      query.set(name, value);
    }
  }
  const segments = path.split("/").filter((s) => s !== "");
  const parseDb = (text: string): number => {
    if (!/^\d{1,5}$/.test(text)) fail(`has the database "${text}"; a database is a number (0, 1, …)`);
    return Number(text);
  };
  const pickDb = (fromPath: string | undefined): number => {
    const a = fromPath === undefined ? undefined : parseDb(fromPath);
    const b = query.has("db") ? parseDb(query.get("db")!) : undefined;
    if (a !== undefined && b !== undefined && a !== b) fail(`names two databases (${a} in the path, ${b} in ?db=); give one`);
    return a ?? b ?? 0;
  };
  const auth = { ...(username === undefined ? {} : { username }), ...(password === undefined ? {} : { password }) };
  const hostsText = nodes.map(formatNode).join(",");
  const secure = tls ? "s" : "";

  if (kind === "standalone") {
    if (nodes.length > 1) fail(`lists ${nodes.length} hosts, but redis${secure}:// takes one; for Sentinel write redis${secure}-sentinel://${hostsText}/<master name>, for a Cluster redis${secure}-cluster://${hostsText}`);
    if (segments.length > 1) fail(`has the path "${path}"; after the host comes at most the database: redis${secure}://${hostsText}/0`);
    const db = pickDb(segments[0]);
    return Object.freeze({ kind, tls, node: Object.freeze(nodes[0]!), db, ...auth, display: `redis${secure}://${hostsText}/${db}` });
  }
  if (kind === "sentinel") {
    const fromQuery = query.get("sentinelMasterId");
    let masterName = segments[0] === undefined ? undefined : decodeSegment(segments[0], fail);
    if (fromQuery !== undefined && masterName !== undefined && fromQuery !== masterName) fail(`names two masters ("${masterName}" in the path, "${fromQuery}" in ?sentinelMasterId=); give one`);
    masterName ??= fromQuery;
    if (masterName === undefined || masterName === "") fail(`names no master; write the name the sentinels monitor after the hosts: redis${secure}-sentinel://${hostsText}/mymaster`);
    if (segments.length > 2) fail(`has the path "${path}"; write /<master name>[/<db>]`);
    const db = pickDb(segments[1]);
    const sentinelUsername = query.get("sentinelUsername") || undefined;
    const sentinelPassword = query.get("sentinelPassword") || undefined;
    return Object.freeze({
      kind,
      tls,
      sentinels: Object.freeze(nodes.map((n) => Object.freeze(n))),
      masterName,
      db,
      ...auth,
      ...(sentinelUsername === undefined ? {} : { sentinelUsername }),
      ...(sentinelPassword === undefined ? {} : { sentinelPassword }),
      display: `redis${secure}-sentinel://${hostsText}/${encodeURIComponent(masterName)}/${db}`,
    });
  }
  if (segments.length > 1 || (segments[0] !== undefined && segments[0] !== "0")) fail(`has the path "${path}"; a Redis Cluster has only database 0, so write no path: redis${secure}-cluster://${hostsText}`);
  return Object.freeze({ kind, tls, nodes: Object.freeze(nodes.map((n) => Object.freeze(n))), ...auth, display: `redis${secure}-cluster://${hostsText}` });
}

/** What is wrong with a Redis URL (the RedisUrlError's message), or undefined: for configuration checks that collect problems. */
export function redisUrlProblem(url: string): string | undefined {
  try {
    parseRedisUrl(url);
    return undefined;
  } catch (err) {
    if (err instanceof RedisUrlError) return err.message;
    throw err;
  }
}

function decodeSegment(s: string, fail: (what: string) => never): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return fail(`has a path that is not valid percent-encoding`);
  }
}

function parseNode(entry: string, defaultPort: number, fail: (what: string) => never): RedisNode {
  let host: string;
  let portText: string | undefined;
  const v6 = /^\[([^\]]*)\](?::(.*))?$/.exec(entry);
  if (v6 !== null) {
    host = v6[1]!;
    portText = v6[2];
    if (!IPV6.test(host)) fail(`has the host "[${host}]", which is not an IPv6 address`);
  } else {
    const colon = entry.lastIndexOf(":");
    host = colon === -1 ? entry : entry.slice(0, colon);
    portText = colon === -1 ? undefined : entry.slice(colon + 1);
    if (host === "") fail(`has an empty host in its host list; write host:port, separated by commas`);
    if (!HOST_NAME.test(host)) fail(`has the host "${host}", which is not a host name or IP address (an IPv6 address goes in brackets: [::1]:6379)`);
  }
  if (portText === undefined) return { host, port: defaultPort };
  if (!/^\d{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) fail(`has the port "${portText}" for ${host}; a port is a number from 1 to 65535`);
  return { host, port: Number(portText) };
}

const formatNode = (n: RedisNode): string => `${n.host.includes(":") ? `[${n.host}]` : n.host}:${n.port}`;

/** How a client behaves; every field has ioredis' default when absent. */
export interface RedisClientOptions {
  /** Retries of one command across reconnections; `null`: until it succeeds (BullMQ's connections need `null`). Default 20. */
  readonly maxRetriesPerRequest?: number | null;
  /** Queue commands while not connected. Default true; false: they fail at once. */
  readonly enableOfflineQueue?: boolean;
  /** Connect only on `connect()`. Default false. */
  readonly lazyConnect?: boolean;
  /** Delay in ms before reconnection attempt `times`; null: give up (also when no sentinel answers). Default min(times × 50, 2000). */
  readonly retryStrategy?: (times: number) => number | null;
  /** Time allowed for a connection, ms. Default 10 000. */
  readonly connectTimeout?: number;
  /** Subscribe again to the channels of a lost connection (single server, Sentinel). Default true; false: the caller subscribes on `ready`. */
  readonly autoResubscribe?: boolean;
}

// A primary that became a replica (failover behind a fixed address, or a client that missed the
// switch) answers writes with READONLY: reconnect (through the sentinels) and resend the command.
const reconnectOnReadonly = (err: Error): 2 | false => (err.message.startsWith("READONLY") ? 2 : false);

/** A new ioredis client for `config`: `Redis` (single server, Sentinel) or `Cluster`. The caller closes it. */
export function createRedisClient(config: RedisConnectionConfig, options: RedisClientOptions = {}): RedisClient {
  const auth = { ...(config.username === undefined ? {} : { username: config.username }), ...(config.password === undefined ? {} : { password: config.password }) };
  const perCommand = {
    ...(options.maxRetriesPerRequest === undefined ? {} : { maxRetriesPerRequest: options.maxRetriesPerRequest }),
    ...(options.connectTimeout === undefined ? {} : { connectTimeout: options.connectTimeout }),
  };
  const connecting = {
    ...(options.enableOfflineQueue === undefined ? {} : { enableOfflineQueue: options.enableOfflineQueue }),
    ...(options.lazyConnect === undefined ? {} : { lazyConnect: options.lazyConnect }),
  };
  if (config.kind === "cluster") {
    const clusterOptions: ClusterOptions = {
      ...connecting,
      ...(options.retryStrategy === undefined ? {} : { clusterRetryStrategy: options.retryStrategy }),
      // BullMQ reads maxRetriesPerRequest from here for a Cluster; ioredis applies it per node.
      redisOptions: { ...auth, ...perCommand, ...(config.tls ? { tls: {} } : {}) },
      // With TLS, keep host names as given so that certificates are checked against them.
      ...(config.tls ? { dnsLookup: (address: string, callback: (err: Error | null, address: string) => void) => callback(null, address) } : {}),
    };
    return new Cluster(
      config.nodes.map((n) => ({ host: n.host, port: n.port })),
      clusterOptions,
    );
  }
  const common: RedisOptions = {
    ...auth,
    ...perCommand,
    ...connecting,
    ...(options.retryStrategy === undefined ? {} : { retryStrategy: options.retryStrategy }),
    db: config.db,
    reconnectOnError: reconnectOnReadonly,
    ...(options.autoResubscribe === undefined ? {} : { autoResubscribe: options.autoResubscribe }),
  };
  if (config.kind === "standalone") return new Redis({ ...common, host: config.node.host, port: config.node.port, ...(config.tls ? { tls: {} } : {}) });
  return new Redis({
    ...common,
    sentinels: config.sentinels.map((n) => ({ host: n.host, port: n.port })),
    name: config.masterName,
    ...(config.sentinelUsername === undefined ? {} : { sentinelUsername: config.sentinelUsername }),
    ...(config.sentinelPassword === undefined ? {} : { sentinelPassword: config.sentinelPassword }),
    ...(config.tls ? { tls: {}, enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
    // When no sentinel answers, retry (or give up) as for the primary; ioredis' default retries forever.
    ...(options.retryStrategy === undefined ? {} : { sentinelRetryStrategy: options.retryStrategy }),
    // No `failoverDetector` (ioredis' +switch-master subscription; off by default there too): a switch
    // announced while the client is reconnecting aborts that connection attempt, and ioredis then ends
    // the client for good (status "end": seen in the failover test). A dead primary closes the
    // connection anyway, and a demoted one answers READONLY (reconnectOnError above).
  });
}

/**
 * The key prefix to use with `config`. A Cluster runs a multi-key command (Lua scripts,
 * transactions, BullMQ's scripts) only when all its keys hash to one slot, so there the whole prefix
 * becomes a hash tag — `gitmesh:` → `{gitmesh}:` — and every gitmesh key (store, queues, locks) lives
 * in one slot: a Cluster gives availability, not sharding of gitmesh's (small) data set. A prefix
 * that has a hash tag already is kept; other topologies keep the prefix as it is.
 */
export function redisKeyPrefix(config: RedisConnectionConfig | undefined, prefix: string): string {
  if (config?.kind !== "cluster" || /\{[^}]+\}/.test(prefix)) return prefix;
  const m = /^(.*?)(:*)$/.exec(prefix)!;
  if (m[1] === "") throw new RedisUrlError(`a Redis Cluster needs a key prefix to put gitmesh's keys in one slot (got "${prefix}")`);
  return `{${m[1]}}${m[2]}`;
}

/** Every key matching `pattern` (SCAN); on a Cluster, from every primary (the client must be ready: it knows them then). */
export async function scanRedisKeys(client: RedisClient, pattern: string): Promise<string[]> {
  const targets: Redis[] = client instanceof Cluster ? client.nodes("master") : [client];
  if (targets.length === 0) throw new Error(`Redis Cluster: no primary known yet (client ${client.status}); scan once it is ready`);
  const out = new Set<string>();
  for (const node of targets) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 500);
      cursor = next;
      for (const k of keys) out.add(k);
    } while (cursor !== "0");
  }
  return [...out];
}
