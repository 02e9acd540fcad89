/**
 * Supervised informers: client-node's makeInformer (list, then watch; relist on 410 by itself)
 * under a supervisor that restarts it with backoff after any error, so an informer is never left
 * dead (the informer reconnects after a server-side close by itself; after an error it would stop
 * for good). A restart that opens the watch again resets the backoff: a watch cut every few seconds
 * (a proxy, a load balancer's idle timeout) reconnects at once each time instead of backing off to
 * the cap. `onReconnect` tells the owner of every watch reconnect after the first, so it can relist
 * and repair what changed during the gap (drift.ts).
 */
import { makeInformer, type KubeConfig, type KubernetesListObject, type KubernetesObject } from "@kubernetes/client-node";
import { describeError, type Logger } from "../core/index.js";
import { collectionPath, toPlain, type KindRef, type KubeObject, type KubeReader } from "./kube.js";
import { backoffDelay, type BackoffOptions, type Runnable } from "./runnable.js";

export type InformerEvent = "add" | "update" | "delete";

export interface SupervisedInformer extends Runnable {
  readonly ref: KindRef;
  /** Objects in the cache (plain JSON with apiVersion and kind). */
  list(): KubeObject[];
  /** Whether the first list completed. */
  readonly synced: boolean;
  /** Resolves when the first list completed. */
  whenSynced(): Promise<void>;
  /** Number of restarts after errors. */
  readonly restarts: number;
}

export interface SupervisedInformerOptions {
  readonly kc: KubeConfig;
  readonly reader: KubeReader;
  readonly ref: KindRef;
  /** Restrict to one namespace (namespaced kinds). */
  readonly namespace?: string;
  readonly labelSelector?: string;
  readonly onEvent?: (event: InformerEvent, obj: KubeObject) => void;
  /** Called after each (re)list completed. */
  readonly onSynced?: () => void;
  /** Called when the informer failed and is going to be restarted (for metrics). */
  readonly onRestart?: (error: unknown) => void;
  /** Called at each watch reconnect after the first (after an error or a server-side close): changes during the gap may need a relist. */
  readonly onReconnect?: () => void;
  readonly backoff?: BackoffOptions;
  readonly logger: Logger;
}

export function createSupervisedInformer(options: SupervisedInformerOptions): SupervisedInformer {
  const { ref, logger } = options;
  const log = logger.child(`informer.${ref.kind}`);
  let synced = false;
  let restarts = 0;
  let attempt = 0;
  let stopped = true;
  let timer: NodeJS.Timeout | undefined;
  const syncWaiters: (() => void)[] = [];
  const withKind = (o: KubernetesObject): KubeObject => {
    const p = o as KubeObject;
    // Watch events are plain JSON already; list items are normalised by the reader.
    if (p.apiVersion !== ref.apiVersion || p.kind !== ref.kind) {
      const c = toPlain(o) as KubeObject;
      c.apiVersion = ref.apiVersion;
      c.kind = ref.kind;
      return c;
    }
    return p;
  };

  const listFn = async (): Promise<KubernetesListObject<KubernetesObject>> => {
    const res = await options.reader.list(ref, {
      ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
      ...(options.labelSelector === undefined ? {} : { labelSelector: options.labelSelector }),
    });
    // client-node adds the items to its cache right after this promise resolves.
    setImmediate(() => {
      attempt = 0;
      if (!synced) {
        synced = true;
        for (const w of syncWaiters.splice(0)) w();
      }
      options.onSynced?.();
    });
    const list = { apiVersion: "v1", kind: `${ref.kind}List`, metadata: { resourceVersion: res.resourceVersion }, items: res.items };
    return list as unknown as KubernetesListObject<KubernetesObject>; // eslint-disable-line @typescript-eslint/no-unnecessary-type-assertion -- plain JSON, not V1ListMeta instances
  };

  const informer = makeInformer<KubernetesObject>(options.kc, collectionPath(ref, options.namespace), listFn, options.labelSelector);
  const emit = (event: InformerEvent) => (o: KubernetesObject) => {
    if (stopped) return;
    try {
      options.onEvent?.(event, withKind(o));
    } catch (err) {
      log.error("event handler failed", { error: describeError(err) });
    }
  };
  informer.on("add", emit("add"));
  informer.on("update", emit("update"));
  informer.on("delete", emit("delete"));
  let connects = 0;
  informer.on("connect", () => {
    if (stopped || connects++ === 0) return;
    try {
      options.onReconnect?.();
    } catch (err) {
      log.error("reconnect handler failed", { error: describeError(err) });
    }
  });
  /** Starts (or restarts) the informer; a start that raised no error opened the watch, which resets the backoff. */
  const open = async (what: string) => {
    const before = restarts;
    await informer.start().catch((e: unknown) => log.warn(`informer ${what} failed; will retry`, { error: describeError(e) }));
    if (restarts === before && !stopped) attempt = 0;
  };
  informer.on("error", (err: unknown) => {
    if (stopped) return;
    restarts += 1;
    options.onRestart?.(err);
    const delay = backoffDelay(options.backoff ?? {}, attempt++);
    log.warn("informer failed; restarting", { error: describeError(err), inMs: Math.round(delay) });
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      if (!stopped) void open("restart");
    }, delay);
  });

  return {
    name: `informer/${ref.kind}`,
    ref,
    get synced() {
      return synced;
    },
    get restarts() {
      return restarts;
    },
    list: () => informer.list().map(withKind),
    whenSynced: () => (synced ? Promise.resolve() : new Promise<void>((resolve) => syncWaiters.push(resolve))),
    async start(signal) {
      stopped = false;
      signal.addEventListener("abort", () => void this.stop(), { once: true });
      // start() resolves when the first watch is open or failed; failures are handled by the error hook.
      await open("start");
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await informer.stop();
    },
  };
}
