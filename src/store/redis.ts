/**
 * Redis snapshot store. Layout under the prefix (default `gitmesh:`):
 *
 * | key | type | holds |
 * |---|---|---|
 * | `desired:<commit>` | string | DesiredRecord (encoded, see codec.ts) |
 * | `desired:pointer` | string | JSON {commit, generation} of the current desired state |
 * | `desired:commits` | list | commits stored, newest first (older than `keepDesired` are deleted) |
 * | `discovery` / `discovery:sum` | hash | cluster → DiscoveryRecord / checksum |
 * | `frag:<cluster>` | hash | workspace → FragmentRecord |
 * | `fraghash:<workspace>` | hash | cluster → fragment hash |
 * | `output:<cluster>` / `outver` | string / hash | OutputRecord / cluster → version |
 * | `wsstatus` | hash | workspace → WorkspaceStatus (JSON) |
 * | `pending:<commit>` | set | workspaces still to translate for the commit |
 * | `conv:<commit>` | hash | cluster → ClusterConvergence (JSON) |
 * | `unitlock:<name>` | string | lease token of a unit lock |
 *
 * Versions and the desired pointer only move forward (Lua compare-and-set).
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { decodeValue, encodeValue } from "./codec.js";
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
  /** A connected ioredis client; the store does not close it. */
  readonly redis: Redis;
  /** Key prefix. Default `gitmesh:`. */
  readonly prefix?: string;
  /** Desired states kept besides the current one. Default 8. */
  readonly keepDesired?: number;
}

export interface RedisStore extends SnapshotStore {
  readonly kind: "redis";
  readonly prefix: string;
}

export const DEFAULT_PREFIX = "gitmesh:";

// KEYS[1] pointer; ARGV[1] generation, ARGV[2] pointer JSON
const SET_POINTER = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local g = tonumber(string.match(cur, '"generation":(%d+)'))
  if g and g > tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2])
return 1`;

// KEYS[1] outver hash, KEYS[2] output key; ARGV[1] cluster, ARGV[2] version, ARGV[3] expected previous (-1 = any lower), ARGV[4] value
const PUT_OUTPUT = `
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local v = tonumber(ARGV[2])
local expected = tonumber(ARGV[3])
if v <= cur then return 0 end
if expected >= 0 and cur ~= expected then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[4])
return 1`;

const UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const redis = options.redis;
  const p = options.prefix ?? DEFAULT_PREFIX;
  const keep = options.keepDesired ?? 8;
  const k = {
    desired: (c: string) => `${p}desired:${c}`,
    pointer: `${p}desired:pointer`,
    commits: `${p}desired:commits`,
    discovery: `${p}discovery`,
    discoverySum: `${p}discovery:sum`,
    frag: (c: string) => `${p}frag:${c}`,
    fragHash: (w: string) => `${p}fraghash:${w}`,
    output: (c: string) => `${p}output:${c}`,
    outver: `${p}outver`,
    status: `${p}wsstatus`,
    pending: (c: string) => `${p}pending:${c}`,
    conv: (c: string) => `${p}conv:${c}`,
    lock: (n: string) => `${p}unitlock:${n}`,
  };
  const decodeAll = <T>(values: Buffer[]): T[] => values.map((v) => decodeValue<T>(v));
  const sortBy = <T>(items: T[], key: (t: T) => string): T[] => items.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

  const putOutput = async (record: OutputRecord, expected: number): Promise<boolean> => {
    const r = await redis.eval(PUT_OUTPUT, 2, k.outver, k.output(record.cluster), record.cluster, String(record.version), String(expected), encodeValue(record));
    return r === 1;
  };

  return {
    kind: "redis",
    prefix: p,
    async putDesired(record) {
      const pointer: DesiredPointer = { commit: record.commit, generation: record.generation };
      await redis.set(k.desired(record.commit), encodeValue(record));
      await redis.eval(SET_POINTER, 1, k.pointer, String(record.generation), JSON.stringify(pointer));
      await redis.lrem(k.commits, 0, record.commit);
      await redis.lpush(k.commits, record.commit);
      const old = await redis.lrange(k.commits, keep + 1, -1);
      const current = await this.getDesiredPointer();
      const drop = old.filter((c) => c !== current?.commit);
      if (drop.length > 0) await redis.del(...drop.map(k.desired));
      await redis.ltrim(k.commits, 0, keep);
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
      await redis.multi().hset(k.discovery, record.cluster, encodeValue(record)).hset(k.discoverySum, record.cluster, record.checksum).exec();
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
      for (const [cluster, f] of next) {
        if (prev.get(cluster) === f.hash) continue;
        changed.add(cluster);
        tx.hset(k.frag(cluster), workspace, encodeValue(f)).hset(k.fragHash(workspace), cluster, f.hash);
      }
      for (const cluster of prev.keys()) {
        if (next.has(cluster)) continue;
        changed.add(cluster);
        tx.hdel(k.frag(cluster), workspace).hdel(k.fragHash(workspace), cluster);
      }
      if (changed.size > 0) await tx.exec();
      else tx.discard();
      return [...changed].sort();
    },
    async fragmentHashes(workspace) {
      return new Map(Object.entries(await redis.hgetall(k.fragHash(workspace))));
    },
    async fragmentsForCluster(cluster) {
      return sortBy(decodeAll<FragmentRecord>(await redis.hvalsBuffer(k.frag(cluster))), (f) => f.workspace);
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
      return buf === null ? undefined : decodeValue<OutputRecord>(buf);
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
      await redis.hset(k.status, status.workspace, JSON.stringify(status));
    },
    async getWorkspaceStatus(workspace) {
      const s = await redis.hget(k.status, workspace);
      return s === null ? undefined : (JSON.parse(s) as WorkspaceStatus);
    },
    async listWorkspaceStatus() {
      return sortBy(Object.values(await redis.hgetall(k.status)).map((s) => JSON.parse(s) as WorkspaceStatus), (s) => s.workspace);
    },
    async addPending(commit, workspaces) {
      if (workspaces.length > 0) await redis.sadd(k.pending(commit), ...workspaces);
    },
    async removePending(commit, workspace) {
      await redis.srem(k.pending(commit), workspace);
    },
    async pending(commit) {
      return (await redis.smembers(k.pending(commit))).sort();
    },
    async recordConvergence(commit, entry) {
      const prev = await redis.hget(k.conv(commit), entry.cluster);
      const merged: ClusterConvergence = { ...(prev === null ? {} : (JSON.parse(prev) as ClusterConvergence)), ...entry };
      await redis.hset(k.conv(commit), entry.cluster, JSON.stringify(merged));
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
      const keys = await scanKeys(redis, `${p}*`);
      for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
    },
  };
}

async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 500);
    cursor = next;
    out.push(...keys);
  } while (cursor !== "0");
  return out;
}
