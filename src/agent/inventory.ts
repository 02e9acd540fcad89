/**
 * The inventory: what this agent created (or was explicitly handed over), kept in the cluster so a
 * restart, a crash or a new leader never loses ownership knowledge (cli-utils/Flux style). One
 * ConfigMap in the agent's namespace (default `gitmesh-agent-inventory`), its entries as
 * gzip-compressed JSON in `binaryData` (2,000 objects take a few tens of KiB; the ConfigMap limit is
 * 1 MiB, about 40,000 objects — beyond that the write fails with a message, nothing is lost).
 *
 * Each entry is an object's identity: apiVersion (group and version), kind, namespace, name and
 * the `uid` the API server gave it. An entry without a uid is an INTENT: written before the agent
 * creates the object, confirmed with the uid after; an intent left by a crash is confirmed on the
 * next apply only when the live object carries the agent's own field manager.
 *
 * Writes use optimistic concurrency (resourceVersion); on a conflict the stored entries are merged
 * with ours (the union: a stale extra entry is harmless because every use checks the live uid).
 * Labels are never proof of ownership: only membership with a matching uid is.
 */
import { gunzipSync, gzipSync } from "node:zlib";
import { NeedsHumanError } from "../core/index.js";
import { KINDS, statusOf, type FieldOwnerWriter, type KubeObject, type KubeReader } from "./kube.js";

export interface InventoryEntry {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  /** Absent: intent (the agent is about to create the object). */
  readonly uid?: string;
}

export const INVENTORY_FORMAT = "gitmesh.io/inventory-v1";
export const INVENTORY_DATA_KEY = "entries.json.gz";
/** ConfigMaps hold at most 1 MiB; keep a margin for metadata. */
export const INVENTORY_MAX_BYTES = 1_000_000;

export function entryKey(e: { apiVersion: string; kind: string; namespace?: string | undefined; name: string }): string {
  return `${e.apiVersion}/${e.kind}/${e.namespace ?? ""}/${e.name}`;
}

export interface InventoryOptions {
  readonly reader: KubeReader;
  readonly writer: FieldOwnerWriter;
  readonly namespace: string;
  /** ConfigMap name (default `gitmesh-agent-inventory`; chart value inventory.configMapName). */
  readonly name?: string;
  readonly cluster: string;
}

export interface Inventory {
  readonly name: string;
  readonly namespace: string;
  /** Reads the ConfigMap (once; later calls return the cached state). `existed` is false on a first start. */
  load(): Promise<{ existed: boolean }>;
  get(key: string): InventoryEntry | undefined;
  entries(): readonly InventoryEntry[];
  set(entry: InventoryEntry): void;
  remove(key: string): void;
  /** Writes the ConfigMap when something changed since the last write. */
  flush(): Promise<void>;
  /** Bytes of the last write (compressed entries). */
  readonly storedBytes: number;
}

function encode(entries: readonly InventoryEntry[]): Buffer {
  const list = [...entries].sort((a, b) => (entryKey(a) < entryKey(b) ? -1 : 1)).map((e) => [e.apiVersion, e.kind, e.namespace ?? "", e.name, e.uid ?? ""]);
  return gzipSync(JSON.stringify(list));
}

function decode(cm: KubeObject): InventoryEntry[] {
  const b64 = (cm.binaryData as Record<string, string> | undefined)?.[INVENTORY_DATA_KEY];
  if (b64 === undefined) return [];
  const unreadable = (why: string) =>
    new NeedsHumanError(`inventory ConfigMap ${cm.metadata.namespace ?? ""}/${cm.metadata.name} is unreadable (${why}): the agent will not apply or prune until it is fixed or deleted`);
  let rows: unknown;
  try {
    rows = JSON.parse(gunzipSync(Buffer.from(b64, "base64")).toString("utf8"));
  } catch (err) {
    throw unreadable(err instanceof Error ? err.message : String(err));
  }
  // Anything but a list of rows is not an inventory this agent wrote: read as empty, it would lose every entry.
  if (!Array.isArray(rows)) throw unreadable(`${INVENTORY_DATA_KEY} holds ${rows === null ? "null" : typeof rows}, not a list of entries`);
  const out: InventoryEntry[] = [];
  for (const r of rows) {
    if (!Array.isArray(r) || r.length < 5 || !r.every((x) => typeof x === "string")) continue;
    const [apiVersion = "", kind = "", namespace = "", name = "", uid = ""] = r;
    out.push({ apiVersion, kind, name, ...(namespace ? { namespace } : {}), ...(uid ? { uid } : {}) });
  }
  return out;
}

export function createInventory(options: InventoryOptions): Inventory {
  const name = options.name ?? "gitmesh-agent-inventory";
  const { namespace } = options;
  let entries = new Map<string, InventoryEntry>();
  const removed = new Set<string>();
  let resourceVersion: string | undefined;
  let loaded: Promise<{ existed: boolean }> | undefined;
  let dirty = false;
  let storedBytes = 0;
  let writing: Promise<void> = Promise.resolve();

  const read = async (): Promise<KubeObject | undefined> => options.reader.get(KINDS.ConfigMap, namespace, name);

  const body = (data: Buffer): KubeObject => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name,
      namespace,
      labels: { "app.kubernetes.io/managed-by": "gitmesh-agent", "gitmesh.io/inventory": "true" },
      annotations: { "gitmesh.io/cluster": options.cluster },
      ...(resourceVersion === undefined ? {} : { resourceVersion }),
    },
    data: { format: INVENTORY_FORMAT, count: String(entries.size) },
    binaryData: { [INVENTORY_DATA_KEY]: data.toString("base64") },
  });

  async function write(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      const data = encode([...entries.values()]);
      if (data.length > INVENTORY_MAX_BYTES) {
        throw new NeedsHumanError(`the inventory of ${entries.size} objects needs ${data.length} bytes compressed, more than a ConfigMap holds (${INVENTORY_MAX_BYTES}); split the cluster's output`);
      }
      try {
        const out = resourceVersion === undefined ? await options.writer.create(body(data)) : await options.writer.replace(body(data));
        resourceVersion = out.metadata.resourceVersion;
        storedBytes = data.length;
        return;
      } catch (err) {
        const code = statusOf(err);
        if ((code !== 409 && !(code === 404 && resourceVersion !== undefined)) || attempt >= 4) throw err;
        // Someone else wrote it (or deleted it): merge theirs with ours and retry.
        const cm = await read();
        resourceVersion = cm?.metadata.resourceVersion;
        if (cm) for (const e of decode(cm)) if (!entries.has(entryKey(e)) && !removed.has(entryKey(e))) entries.set(entryKey(e), e);
      }
    }
  }

  return {
    name,
    namespace,
    get storedBytes() {
      return storedBytes;
    },
    load() {
      loaded ??= (async () => {
        const cm = await read();
        if (!cm) return { existed: false };
        resourceVersion = cm.metadata.resourceVersion;
        entries = new Map(decode(cm).map((e) => [entryKey(e), e]));
        return { existed: true };
      })().catch((err: unknown) => {
        loaded = undefined;
        throw err;
      });
      return loaded;
    },
    get: (key) => entries.get(key),
    entries: () => [...entries.values()],
    set(entry) {
      const key = entryKey(entry);
      const cur = entries.get(key);
      if (cur && cur.uid === entry.uid && cur.apiVersion === entry.apiVersion) return;
      entries.set(key, entry);
      removed.delete(key);
      dirty = true;
    },
    remove(key) {
      if (!entries.delete(key)) return;
      removed.add(key);
      dirty = true;
    },
    flush() {
      // One write at a time (apply and drift repair both flush); each sees the entries of its time.
      const run = async () => {
        if (!dirty && resourceVersion !== undefined) return;
        dirty = false;
        const removedNow = [...removed];
        try {
          await write();
          for (const k of removedNow) removed.delete(k);
        } catch (err) {
          dirty = true;
          throw err;
        }
      };
      const next = writing.then(run, run);
      writing = next.catch(() => undefined);
      return next;
    },
  };
}
