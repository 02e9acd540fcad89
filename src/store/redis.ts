/**
 * Redis snapshot store. Layout under the prefix (default `gitmesh:`):
 *
 * | key | type | holds | bounded by (retention.ts) |
 * |---|---|---|---|
 * | `desired:<commit>` | string | DesiredRecord (encoded, see codec.ts) | `desiredStates` newest; PEXPIRE `maxAgeMs` once superseded; the current one never |
 * | `desired:pointer` | string | JSON {commit, generation} of the current desired state | one key |
 * | `desired:commits` | list | commits stored, newest first | trimmed to `desiredStates` + 1 |
 * | `discovery` / `discovery:sum` | hash | cluster → DiscoveryRecord / checksum | clusters that reported (see README) |
 * | `discovery:ver` / `wsstatus:ver` | string | a random token set with every discovery / workspace status write (versions()) | one key each |
 * | `frag:<cluster>` | hash | workspace → FragmentRecord | emptied (so deleted) when no workspace renders for the cluster |
 * | `fraghash:<workspace>` | hash | cluster → fragment hash | emptied (so deleted) with the workspace's last fragment |
 * | `output:<cluster>` / `outver` | string / hash | OutputRecord / cluster → version | clusters ever registered: kept (see README) |
 * | `outsrc` / `outsrc:refs` | hash / hash | cluster → source commit of its output / commit → how many outputs come from it | as the outputs |
 * | `wsstatus` | hash | workspace → WorkspaceStatus (JSON) | workspaces ever translated: kept (see README) |
 * | `pending:<commit>` | set | workspaces still to translate for the commit | deleted when empty; PEXPIRE `pendingTtlMs` from its last change |
 * | `conv:<commit>` | hash | cluster → ClusterConvergence (JSON) | `convergenceCommits` newest; PEXPIRE `maxAgeMs` from its last entry; never while kept (the current commit's, or one some output comes from) |
 * | `conv:commits` | sorted set | commit → ms of its first convergence entry (the count bound's order) | trimmed with the records |
 * | `unitlock:<name>` | string | lease token of a unit lock | PX lease |
 *
 * Versions and the desired pointer only move forward (Lua compare-and-set). Every script names all
 * the keys it touches in KEYS, all under the one prefix (one slot on Redis Cluster with a hash-tag prefix).
 */
import { createHash, randomUUID } from "node:crypto";
import { Cluster, type ChainableCommander, type Redis } from "ioredis";
import { TransientError } from "../core/index.js";
import { decodeValue, encodeValue } from "./codec.js";
import { resolveRetention, type RetentionOptions } from "./retention.js";
import type {
  ClusterConvergence,
  ConvergenceRecord,
  DesiredPointer,
  DesiredRecord,
  DiscoveryRecord,
  FragmentRecord,
  OutputRecord,
  SnapshotStore,
  WorkspaceStatus,
} from "./types.js";

export interface RedisStoreOptions {
  /**
   * A connected ioredis client; the store does not close it. On a Cluster the prefix must be a hash
   * tag (`{gitmesh}:`, see src/queue redisKeyPrefix) so that every multi-key command stays in one slot.
   */
  readonly redis: Redis | Cluster;
  /** Key prefix. Default `gitmesh:`. */
  readonly prefix?: string;
  /** Bounds of what is kept per commit (defaults: DEFAULT_RETENTION). */
  readonly retention?: RetentionOptions | undefined;
  /**
   * Clock (ms) for the order of convergence records (their first entry). Default Date.now. Ages are
   * Redis's own (PEXPIRE), so keys expire even while no gitmesh process runs.
   */
  readonly now?: (() => number) | undefined;
}

export interface RedisStore extends SnapshotStore {
  readonly kind: "redis";
  readonly prefix: string;
}

export const DEFAULT_PREFIX = "gitmesh:";

/** Lua: the commit of the desired pointer at `key` ('' = none). */
const CURRENT = `
local function current(key)
  local s = redis.call('GET', key)
  return s and string.match(s, '"commit":"([^"]*)"') or ''
end
`;

// A convergence record is KEPT (no TTL, never trimmed) while the current state refers to it: it is the
// current commit's, or some cluster's current output comes from its commit (outsrc:refs) — the server
// reads that record to tell that a cluster whose output a later commit left unchanged runs that commit.

// Stores a desired state and moves the pointer unless it holds a newer generation; what stops being
// current (the previous desired state, and its convergence record unless an output comes from it) starts to age.
// KEYS[1] pointer, KEYS[2] desired:<commit>, KEYS[3] conv:<commit>, KEYS[4] desired:<previous>, KEYS[5] conv:<previous>, KEYS[6] outsrc:refs
// ARGV[1] generation, ARGV[2] pointer JSON, ARGV[3] commit, ARGV[4] value, ARGV[5] previous as read ('' = none), ARGV[6] maxAgeMs
// Returns 1 (current now), 0 (stored, an older generation), -1 (the pointer moved since it was read: read it again).
const PUT_DESIRED = `
local cur = redis.call('GET', KEYS[1])
local previous = cur and string.match(cur, '"commit":"([^"]*)"') or ''
if previous ~= ARGV[5] then return -1 end
redis.call('SET', KEYS[2], ARGV[4])
local g = cur and tonumber(string.match(cur, '"generation":(%d+)'))
if g and g > tonumber(ARGV[1]) then
  if previous ~= ARGV[3] then redis.call('PEXPIRE', KEYS[2], ARGV[6]) end
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('PERSIST', KEYS[3])
if previous ~= '' and previous ~= ARGV[3] then
  redis.call('PEXPIRE', KEYS[4], ARGV[6])
  if redis.call('HEXISTS', KEYS[6], previous) == 0 then redis.call('PEXPIRE', KEYS[5], ARGV[6]) end
end
return 1`;

// Merges one cluster's entry into what is recorded (its fields replace the same fields, the others stay), in
// the script so that two writers of one cluster's entry (a job recording the publication, the replica that
// holds the agent recording its ACK) cannot lose each other's fields; a kept record stays without a TTL,
// any other lives maxAgeMs from its last entry.
// KEYS[1] conv:<commit>, KEYS[2] conv:commits, KEYS[3] pointer, KEYS[4] outsrc:refs
// ARGV[1] cluster, ARGV[2] entry JSON, ARGV[3] commit, ARGV[4] now (ms), ARGV[5] maxAgeMs
// Returns 1 when the commit is new to conv:commits (then the count bound is applied).
const RECORD_CONVERGENCE = `${CURRENT}
local entry = ARGV[2]
local prev = redis.call('HGET', KEYS[1], ARGV[1])
if prev then
  local merged = cjson.decode(prev)
  for field, value in pairs(cjson.decode(entry)) do merged[field] = value end
  entry = cjson.encode(merged)
end
redis.call('HSET', KEYS[1], ARGV[1], entry)
if ARGV[3] == current(KEYS[3]) or redis.call('HEXISTS', KEYS[4], ARGV[3]) == 1 then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
end
return redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[3])`;

// The bounds over conv:commits: ARGV[1] 'drop' (beyond the newest convergenceCommits: deleted) or 'age'
// (within them: one that lost its protection gets its TTL); a kept record is left (and kept) either way.
// KEYS[1] conv:commits, KEYS[2] pointer, KEYS[3] outsrc:refs, KEYS[3 + i] conv:<ARGV[2 + i]>; ARGV[2] maxAgeMs
const RETAIN_CONVERGENCE = `${CURRENT}
local cur = current(KEYS[2])
for i = 3, #ARGV do
  local c, key = ARGV[i], KEYS[i + 1]
  if c == cur or redis.call('HEXISTS', KEYS[3], c) == 1 then
    redis.call('PERSIST', key)
  elseif ARGV[1] == 'drop' then
    redis.call('DEL', key)
    redis.call('ZREM', KEYS[1], c)
  elseif redis.call('PTTL', key) == -1 then
    redis.call('PEXPIRE', key, ARGV[2])
  end
end
return 0`;

// Stores an output if its version moves forward, and which commit it comes from (outsrc, outsrc:refs): the
// convergence record of that commit is kept from now on; the one the cluster's previous output came from ages
// when no output comes from it any more (unless current).
// KEYS[1] outver, KEYS[2] output:<cluster>, KEYS[3] outsrc, KEYS[4] outsrc:refs, KEYS[5] conv:<source>,
// KEYS[6] conv:<previous source as read>, KEYS[7] pointer
// ARGV[1] cluster, ARGV[2] version, ARGV[3] expected previous version (-1 = any lower), ARGV[4] value,
// ARGV[5] source commit, ARGV[6] previous source as read, ARGV[7] maxAgeMs
const PUT_OUTPUT = `${CURRENT}
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local v = tonumber(ARGV[2])
local expected = tonumber(ARGV[3])
if v <= cur then return 0 end
if expected >= 0 and cur ~= expected then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[4])
local old = redis.call('HGET', KEYS[3], ARGV[1])
if old ~= ARGV[5] then
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[5])
  redis.call('HINCRBY', KEYS[4], ARGV[5], 1)
  redis.call('PERSIST', KEYS[5])
  if old and redis.call('HINCRBY', KEYS[4], old, -1) <= 0 then
    redis.call('HDEL', KEYS[4], old)
    if old == ARGV[6] and old ~= current(KEYS[7]) then redis.call('PEXPIRE', KEYS[6], ARGV[7]) end
  end
end
return 1`;

// An installation without retention: its outputs' source commits are recorded once (first writer wins).
// KEYS[1] outsrc, KEYS[2] outsrc:refs; ARGV[1] cluster, ARGV[2] source commit
const ADOPT_OUTPUT_SOURCE = `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then redis.call('HINCRBY', KEYS[2], ARGV[2], 1) end
return 0`;

// A key written without a TTL by a gitmesh without retention gets one, unless it is kept: the current
// commit's desired state or convergence record, a convergence record an output comes from.
// KEYS[1] key, KEYS[2] pointer, KEYS[3] outsrc:refs; ARGV[1] the key's commit, ARGV[2] ttl ms, ARGV[3] 'desired', 'conv' or 'pending'
const EXPIRE_UNBOUNDED = `${CURRENT}
if redis.call('PTTL', KEYS[1]) ~= -1 then return 0 end
if ARGV[3] ~= 'pending' and current(KEYS[2]) == ARGV[1] then return 0 end
if ARGV[3] == 'conv' and redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])`;

const UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const redis = options.redis;
  const p = options.prefix ?? DEFAULT_PREFIX;
  const retention = resolveRetention(options.retention);
  const now = options.now ?? Date.now;
  const k = {
    desired: (c: string) => `${p}desired:${c}`,
    pointer: `${p}desired:pointer`,
    commits: `${p}desired:commits`,
    discovery: `${p}discovery`,
    discoverySum: `${p}discovery:sum`,
    discoveryVersion: `${p}discovery:ver`,
    statusVersion: `${p}wsstatus:ver`,
    frag: (c: string) => `${p}frag:${c}`,
    fragHash: (w: string) => `${p}fraghash:${w}`,
    output: (c: string) => `${p}output:${c}`,
    outver: `${p}outver`,
    outsrc: `${p}outsrc`,
    outsrcRefs: `${p}outsrc:refs`,
    status: `${p}wsstatus`,
    pending: (c: string) => `${p}pending:${c}`,
    conv: (c: string) => `${p}conv:${c}`,
    convCommits: `${p}conv:commits`,
    lock: (n: string) => `${p}unitlock:${n}`,
  };
  const decodeAll = <T>(values: Buffer[]): T[] => values.map((v) => decodeValue<T>(v));
  const sortBy = <T>(items: T[], key: (t: T) => string): T[] => items.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const maxAge = String(retention.maxAgeMs);
  const pendingTtl = String(retention.pendingTtlMs);

  /**
   * The last record seen per output and per fragment (written here or decoded), under a digest of its
   * stored bytes: a read whose bytes have that digest returns it instead of inflating and parsing them
   * again (every cluster job reads its cluster's fragments and previous output, mostly unchanged or
   * just written by this process). Content-addressed, so never stale: other writers change the bytes.
   * One entry per live record, the object shared as the memory store shares its records (immutable).
   */
  const known = new Map<string, { readonly digest: string; readonly value: unknown }>();
  const digestOf = (buf: Buffer): string => createHash("sha1").update(buf).digest("base64");
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller states the stored type (as decodeValue)
  const decodeKnown = <T>(slot: string, buf: Buffer): T => {
    const digest = digestOf(buf);
    const hit = known.get(slot);
    if (hit?.digest === digest) return hit.value as T;
    const value = decodeValue<T>(buf);
    known.set(slot, { digest, value });
    return value;
  };
  const fragSlot = (cluster: string, workspace: string) => `frag\n${cluster}\n${workspace}`;
  const outputSlot = (cluster: string) => `output\n${cluster}`;

  const putOutput = async (record: OutputRecord, expected: number): Promise<boolean> => {
    const previousSource = (await redis.hget(k.outsrc, record.cluster)) ?? "";
    const encoded = encodeValue(record);
    const r = await redis.eval(
      PUT_OUTPUT,
      7,
      k.outver,
      k.output(record.cluster),
      k.outsrc,
      k.outsrcRefs,
      k.conv(record.sourceCommit),
      k.conv(previousSource),
      k.pointer,
      record.cluster,
      String(record.version),
      String(expected),
      encoded,
      record.sourceCommit,
      previousSource,
      maxAge,
    );
    if (r === 1) known.set(outputSlot(record.cluster), { digest: digestOf(encoded), value: record });
    return r === 1;
  };

  /**
   * The count bound, when a commit got its first convergence entry: records beyond the newest
   * `convergenceCommits` commits are deleted unless kept; a record within them that is no longer
   * kept (its outputs moved on) gets its age.
   */
  const retainConvergence = async (): Promise<void> => {
    const all = await redis.zrange(k.convCommits, 0, -1);
    const cut = Math.max(0, all.length - retention.convergenceCommits);
    for (const [mode, commits] of [["drop", all.slice(0, cut)], ["age", all.slice(cut)]] as const) {
      for (let i = 0; i < commits.length; i += 100) {
        const batch = commits.slice(i, i + 100);
        await redis.eval(RETAIN_CONVERGENCE, 3 + batch.length, k.convCommits, k.pointer, k.outsrcRefs, ...batch.map(k.conv), mode, maxAge, ...batch);
      }
    }
  };

  /**
   * Keys that a gitmesh without retention wrote (no TTL) get their age bound, so that an upgraded
   * installation is bounded too. Once per store, in the background of its first desired state (a
   * SCAN of the keyspace; tried again with the next desired state if it fails).
   */
  let olderKeysBound: Promise<void> | undefined;
  const boundOlderKeys = async (): Promise<void> => {
    const sources = await redis.hgetall(k.outsrc);
    for (const cluster of (await redis.hkeys(k.outver)).filter((c) => sources[c] === undefined)) {
      const buf = await redis.getBuffer(k.output(cluster));
      if (buf !== null) await redis.eval(ADOPT_OUTPUT_SOURCE, 2, k.outsrc, k.outsrcRefs, cluster, decodeValue<OutputRecord>(buf).sourceCommit);
    }
    const fixed = new Set([k.pointer, k.commits, k.convCommits]);
    const kinds = [
      { prefix: `${p}pending:`, ttl: pendingTtl, kind: "pending" },
      { prefix: `${p}conv:`, ttl: maxAge, kind: "conv" },
      { prefix: `${p}desired:`, ttl: maxAge, kind: "desired" },
    ];
    for (const key of await scanKeys(redis, `${p}*`)) {
      const kind = kinds.find((x) => key.startsWith(x.prefix));
      if (kind === undefined || fixed.has(key)) continue;
      await redis.eval(EXPIRE_UNBOUNDED, 3, key, k.pointer, k.outsrcRefs, key.slice(kind.prefix.length), kind.ttl, kind.kind);
    }
  };

  return {
    kind: "redis",
    prefix: p,
    async putDesired(record) {
      olderKeysBound ??= boundOlderKeys().catch(() => {
        olderKeysBound = undefined;
      });
      const pointer = JSON.stringify({ commit: record.commit, generation: record.generation } satisfies DesiredPointer);
      const value = encodeValue(record);
      let current: string | undefined;
      for (let attempt = 0; current === undefined; attempt++) {
        if (attempt === 10) throw new TransientError(`snapshot store: the desired pointer kept moving while commit ${record.commit} was stored; retry`);
        const previous = (await this.getDesiredPointer())?.commit ?? "";
        const moved = await redis.eval(PUT_DESIRED, 6, k.pointer, k.desired(record.commit), k.conv(record.commit), k.desired(previous), k.conv(previous), k.outsrcRefs, String(record.generation), pointer, record.commit, value, previous, maxAge);
        if (moved === 1) current = record.commit;
        else if (moved === 0) current = previous;
      }
      // Count bound: the newest `desiredStates` besides the current one (which is never deleted).
      await redis.lrem(k.commits, 0, record.commit);
      await redis.lpush(k.commits, record.commit);
      const drop = (await redis.lrange(k.commits, 0, -1)).filter((c) => c !== current).slice(retention.desiredStates);
      if (drop.length > 0) {
        const tx = redis.multi().del(...drop.map(k.desired));
        for (const c of drop) tx.lrem(k.commits, 0, c);
        await exec(tx);
      }
    },
    async getDesired(commit) {
      const buf = await redis.getBuffer(k.desired(commit));
      return buf === null ? undefined : decodeValue<DesiredRecord>(buf);
    },
    async getDesiredPointer() {
      const s = await redis.get(k.pointer);
      return s === null ? undefined : (JSON.parse(s) as DesiredPointer);
    },
    async putDiscovery(record) {
      await redis.multi().hset(k.discovery, record.cluster, encodeValue(record)).hset(k.discoverySum, record.cluster, record.checksum).set(k.discoveryVersion, randomUUID()).exec();
    },
    async getDiscovery(cluster) {
      const buf = await redis.hgetBuffer(k.discovery, cluster);
      return buf === null ? undefined : decodeValue<DiscoveryRecord>(buf);
    },
    async discoveryChecksums() {
      return new Map(Object.entries(await redis.hgetall(k.discoverySum)));
    },
    async listDiscovery() {
      return sortBy(decodeAll<DiscoveryRecord>(await redis.hvalsBuffer(k.discovery)), (r) => r.cluster);
    },
    async putFragments(workspace, list) {
      const prev = new Map(Object.entries(await redis.hgetall(k.fragHash(workspace))));
      const next = new Map(list.map((f) => [f.cluster, f]));
      const changed = new Set<string>();
      const tx = redis.multi();
      const written: [string, Buffer, FragmentRecord][] = [];
      for (const [cluster, f] of next) {
        if (prev.get(cluster) === f.hash) continue;
        changed.add(cluster);
        const encoded = encodeValue(f);
        written.push([fragSlot(cluster, workspace), encoded, f]);
        tx.hset(k.frag(cluster), workspace, encoded).hset(k.fragHash(workspace), cluster, f.hash);
      }
      for (const cluster of prev.keys()) {
        if (next.has(cluster)) continue;
        changed.add(cluster);
        tx.hdel(k.frag(cluster), workspace).hdel(k.fragHash(workspace), cluster);
        known.delete(fragSlot(cluster, workspace));
      }
      if (changed.size > 0) await tx.exec();
      else tx.discard();
      for (const [slot, encoded, f] of written) known.set(slot, { digest: digestOf(encoded), value: f });
      return [...changed].sort();
    },
    async fragmentHashes(workspace) {
      return new Map(Object.entries(await redis.hgetall(k.fragHash(workspace))));
    },
    async fragmentsForCluster(cluster) {
      const all = await redis.hgetallBuffer(k.frag(cluster));
      return sortBy(Object.entries(all).map(([workspace, buf]) => decodeKnown<FragmentRecord>(fragSlot(cluster, workspace), buf)), (f) => f.workspace);
    },
    async listFragments() {
      const out: FragmentRecord[] = [];
      for (const key of await scanKeys(redis, `${p}frag:*`)) out.push(...decodeAll<FragmentRecord>(await redis.hvalsBuffer(key)));
      return out;
    },
    putOutput: (record, expectedPrevious) => putOutput(record, expectedPrevious),
    putOutputIfNewer: (record) => putOutput(record, -1),
    async getOutput(cluster) {
      const buf = await redis.getBuffer(k.output(cluster));
      return buf === null ? undefined : decodeKnown<OutputRecord>(outputSlot(cluster), buf);
    },
    async outputVersions() {
      return new Map(Object.entries(await redis.hgetall(k.outver)).map(([c, v]) => [c, Number(v)]));
    },
    async listOutputs() {
      const clusters = [...(await this.outputVersions()).keys()].sort();
      const out: OutputRecord[] = [];
      for (const c of clusters) {
        const o = await this.getOutput(c);
        if (o !== undefined) out.push(o);
      }
      return out;
    },
    async putWorkspaceStatus(status) {
      // The token moves in the same transaction: whoever reads the token and then the statuses has statuses at least that new.
      await exec(redis.multi().hset(k.status, status.workspace, JSON.stringify(status)).set(k.statusVersion, randomUUID()));
    },
    async getWorkspaceStatus(workspace) {
      const s = await redis.hget(k.status, workspace);
      return s === null ? undefined : (JSON.parse(s) as WorkspaceStatus);
    },
    async listWorkspaceStatus() {
      return sortBy(Object.values(await redis.hgetall(k.status)).map((s) => JSON.parse(s) as WorkspaceStatus), (s) => s.workspace);
    },
    async versions() {
      const [workspaceStatus, discovery] = await redis.mget(k.statusVersion, k.discoveryVersion);
      return { workspaceStatus: workspaceStatus ?? undefined, discovery: discovery ?? undefined };
    },
    async addPending(commit, workspaces) {
      if (workspaces.length > 0) await exec(redis.multi().sadd(k.pending(commit), ...workspaces).pexpire(k.pending(commit), pendingTtl));
    },
    async removePending(commit, workspace) {
      // Redis deletes the set with its last member; a set still waiting ages from its last change.
      await exec(redis.multi().srem(k.pending(commit), workspace).pexpire(k.pending(commit), pendingTtl));
    },
    async pending(commit) {
      return (await redis.smembers(k.pending(commit))).sort();
    },
    async recordConvergence(commit, entry) {
      const added = await redis.eval(RECORD_CONVERGENCE, 4, k.conv(commit), k.convCommits, k.pointer, k.outsrcRefs, entry.cluster, JSON.stringify(entry), commit, String(now()), maxAge);
      if (added === 1) await retainConvergence();
    },
    async getConvergence(commit): Promise<ConvergenceRecord | undefined> {
      const all = await redis.hgetall(k.conv(commit));
      const entries = Object.entries(all).sort(([a], [b]) => (a < b ? -1 : 1));
      if (entries.length === 0) return undefined;
      return { commit, clusters: Object.fromEntries(entries.map(([c, v]) => [c, JSON.parse(v) as ClusterConvergence])) };
    },
    async tryLock(name, ttlMs) {
      const token = randomUUID();
      const ok = await redis.set(k.lock(name), token, "PX", ttlMs, "NX");
      return ok === "OK" ? token : undefined;
    },
    async unlock(name, token) {
      await redis.eval(UNLOCK, 1, k.lock(name), token);
    },
    async clear() {
      known.clear();
      const keys = await scanKeys(redis, `${p}*`);
      for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
    },
  };
}

/** Runs a MULTI and throws the first command's error (exec() reports them as values). */
async function exec(tx: ChainableCommander): Promise<void> {
  for (const [err] of (await tx.exec()) ?? []) if (err) throw err;
}

/** SCAN; on a Cluster every primary (SCAN without a key goes to one node only). */
async function scanKeys(redis: Redis | Cluster, pattern: string): Promise<string[]> {
  const out: string[] = [];
  const nodes = redis instanceof Cluster ? redis.nodes("master") : [redis];
  if (nodes.length === 0) throw new Error(`Redis Cluster: no primary known yet (client ${redis.status})`);
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 500);
      cursor = next;
      out.push(...keys);
    } while (cursor !== "0");
  }
  return out;
}
