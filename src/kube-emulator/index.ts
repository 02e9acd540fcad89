/**
 * Kubernetes API emulator: a real HTTP server that speaks the Kubernetes REST protocol to
 * @kubernetes/client-node and kubectl, for tests, the demo and the fleet benchmarks. See README.md
 * for what it emulates and what it does not.
 */
import { createServer, type Server } from "node:http";
import type { Socket } from "node:net";
import { readFile, writeFile } from "node:fs/promises";
import { stringify as toYaml } from "yaml";
import { Severity, silentLogger, type Diagnostic, type Logger } from "../core/index.js";
import { apiVersionOf, BUILT_IN_KINDS, ISTIO_KINDS, KindRegistry, type ResourceKind } from "./kinds.js";
import { isObject, type JsonObject } from "./patch.js";
import { parseSeedYaml, SeedCode } from "./seed.js";
import { createHandler, type OpenWatch } from "./server.js";
import { KubeApiError } from "./status.js";
import { createAuthorizer, type ForbiddenRequest, type RbacOptions } from "./rbac.js";
import { ObjectStore, type StoreEvent } from "./store.js";

export { BUILT_IN_KINDS, ISTIO_KINDS, SAIL_KINDS, type ResourceKind } from "./kinds.js";
export type { Schema } from "./schema.js";
export { SeedCode } from "./seed.js";
export { KubeApiError, type KubeStatus } from "./status.js";
export { parseLabelSelector, matchesLabels } from "./selectors.js";
export type { ForbiddenRequest, RbacOptions } from "./rbac.js";

/**
 * A Kubernetes object. Inputs may be any JSON-serialisable object (client-node model instances
 * included; Dates become RFC 3339 strings); outputs are plain JSON copies.
 */
export type KubeObject = Record<string, unknown>;

/** Plain JSON copy of an input object (drops undefined, turns Dates into strings). */
function toJson(o: KubeObject): JsonObject {
  const v: unknown = JSON.parse(JSON.stringify(o));
  return isObject(v) ? v : {};
}

export interface KubeEmulatorOptions {
  /** TCP port; 0 (default) picks a free one. */
  readonly port?: number;
  /** Interface to listen on (default `127.0.0.1`). */
  readonly host?: string;
  /** Change events kept for watch resume; older resourceVersions get 410 Gone (default 10,000). */
  readonly historySize?: number;
  /** Upper bound on a watch's life before the server closes it (default 1800 s, like kube-apiserver's min-request-timeout). */
  readonly watchTimeoutSeconds?: number;
  /** Interval between BOOKMARK events on watches that allow them (default 60,000 ms). */
  readonly bookmarkIntervalMs?: number;
  /** Largest request body accepted (default 16 MiB → 413). */
  readonly maxBodyBytes?: number;
  /** Register the Istio kinds (default true). */
  readonly istioKinds?: boolean;
  /** Extra kinds to serve (custom resources), in addition to the built-in ones. */
  readonly kinds?: readonly ResourceKind[];
  /** Objects or multi-document YAML to load before serving. Errors make `createKubeEmulator` reject. */
  readonly seed?: readonly KubeObject[] | string;
  /** Create a missing namespace on a namespaced create instead of answering 404 (default false, like a real cluster). */
  readonly autoCreateNamespaces?: boolean;
  /** Logger for request failures (default: silent). */
  readonly logger?: Logger;
  /** Clock for creationTimestamp and managedFields times (default `() => new Date()`). */
  readonly now?: () => Date;
  /**
   * Enforce RBAC (default off: every request is allowed): tokens map to users, rendered
   * Role/ClusterRole/bindings grant verbs; denials answer 403 and are recorded (`forbidden()`).
   */
  readonly rbac?: RbacOptions;
}

export interface KubeconfigOptions {
  /** Context/cluster/user name (default `kube-emulator`). */
  readonly name?: string;
  /** Default namespace of the context (default none). */
  readonly namespace?: string;
  /** Bearer token of the user (default `kube-emulator`; see KubeEmulatorOptions.rbac). */
  readonly token?: string;
}

export interface SeedResult {
  readonly applied: number;
  readonly diagnostics: readonly Diagnostic[];
}

/** Switches that make the emulator misbehave, for tests of clients' resilience. */
export interface KubeFaults {
  /** Ends every open watch stream now (as a server-side timeout or restart would). */
  closeWatches(): number;
  /**
   * Answers the next `count` matching requests (every matching request when omitted, until `clear()`)
   * with 500 InternalError. `filter` narrows which requests fail (default: all, discovery and watches included).
   */
  failRequests(count?: number, filter?: FailureFilter): void;
  /** Stops failing requests. */
  clear(): void;
  /** Stops listening and drops every connection; state is kept. */
  goAway(): Promise<void>;
  /** Listens again on the same port after `goAway()`. */
  comeBack(): Promise<void>;
  /** Whether the server is currently listening. */
  readonly listening: boolean;
}

/** Which requests the fault switch fails. */
export interface FailureFilter {
  /** HTTP methods, e.g. `["PATCH", "DELETE"]` to fail writes only (default: any). */
  readonly methods?: readonly string[];
  /** Matched against the URL path without query, e.g. `/virtualservices/` (substring) or a RegExp (default: any). */
  readonly path?: string | RegExp;
}

export interface KubeEmulator {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  readonly faults: KubeFaults;
  /** Kubeconfig YAML for this server (kubectl: `--kubeconfig <file>`; client-node: `loadFromString`). */
  kubeconfig(options?: KubeconfigOptions): string;
  /** The same kubeconfig as an object (client-node: `loadFromOptions`). */
  kubeconfigObject(options?: KubeconfigOptions): KubeconfigObject;
  writeKubeconfig(path: string, options?: KubeconfigOptions): Promise<void>;
  /** Serves another kind from now on (as if its CRD was installed). */
  registerKind(kind: ResourceKind): void;
  readonly kinds: () => readonly ResourceKind[];
  /** Creates or replaces objects (namespaces first), as field manager `kube-emulator-seed`. */
  seed(objects: readonly KubeObject[] | string, file?: string): SeedResult;
  seedFile(path: string): Promise<SeedResult>;
  /** Reads an object without going through HTTP (a copy); undefined when absent. */
  get(apiVersion: string, kind: string, namespace: string | undefined, name: string): KubeObject | undefined;
  list(apiVersion: string, kind: string, namespace?: string): KubeObject[];
  /** Deletes an object without going through HTTP; false when absent. */
  remove(apiVersion: string, kind: string, namespace: string | undefined, name: string): boolean;
  /** The current global resourceVersion. */
  resourceVersion(): string;
  /** Subscribes to every change (for tests that wait on writes); returns an unsubscribe function. */
  onChange(listener: (event: { type: string; object: KubeObject }) => void): () => void;
  /** Number of open watch streams. */
  openWatches(): number;
  /** TCP connections accepted since start (a client that keeps connections alive opens few). */
  connectionsAccepted(): number;
  /** Requests RBAC denied so far (empty without KubeEmulatorOptions.rbac). */
  forbidden(): readonly ForbiddenRequest[];
  stop(): Promise<void>;
}

export interface KubeconfigObject {
  readonly apiVersion: "v1";
  readonly kind: "Config";
  readonly clusters: { name: string; cluster: { server: string; "insecure-skip-tls-verify": boolean } }[];
  readonly users: { name: string; user: { token: string } }[];
  readonly contexts: { name: string; context: { cluster: string; user: string; namespace?: string } }[];
  readonly "current-context": string;
}

const SEED_MANAGER = "kube-emulator-seed";

export async function createKubeEmulator(options: KubeEmulatorOptions = {}): Promise<KubeEmulator> {
  const host = options.host ?? "127.0.0.1";
  // What clients dial: a wildcard listen address is reached through loopback.
  const dialHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  const logger = options.logger ?? silentLogger;
  const registry = new KindRegistry([...BUILT_IN_KINDS, ...(options.istioKinds === false ? [] : ISTIO_KINDS), ...(options.kinds ?? [])]);
  const store = new ObjectStore({
    kinds: registry,
    historySize: Math.max(1, options.historySize ?? 10_000),
    now: options.now ?? (() => new Date()),
    autoCreateNamespaces: options.autoCreateNamespaces ?? false,
  });
  for (const ns of ["default", "kube-system", "kube-public", "kube-node-lease"]) {
    store.create(registry.byResource("", "v1", "namespaces")!, undefined, { metadata: { name: ns, labels: { "kubernetes.io/metadata.name": ns } } }, SEED_MANAGER);
  }

  let failuresLeft = 0; // -1: fail until cleared
  const denied: ForbiddenRequest[] = [];
  let failureFilter: FailureFilter = {};
  const { handle, openWatches } = createHandler({
    store,
    kinds: registry,
    logger,
    maxBodyBytes: options.maxBodyBytes ?? 16 * 1024 * 1024,
    watchTimeoutSeconds: options.watchTimeoutSeconds ?? 1800,
    bookmarkIntervalMs: options.bookmarkIntervalMs ?? 60_000,
    ...(options.rbac === undefined ? {} : { authorizer: createAuthorizer(options.rbac), onForbidden: (f: ForbiddenRequest) => denied.push(f) }),
    shouldFail: (method, path) => {
      if (failuresLeft === 0) return false;
      if (failureFilter.methods !== undefined && !failureFilter.methods.includes(method)) return false;
      const p = failureFilter.path;
      if (p !== undefined && !(typeof p === "string" ? path.includes(p) : p.test(path))) return false;
      if (failuresLeft > 0) failuresLeft -= 1;
      return true;
    },
  });

  const sockets = new Set<Socket>();
  let accepted = 0;
  let server: Server | undefined;
  let port = options.port ?? 0;

  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const s = createServer(handle);
      s.keepAliveTimeout = 5_000;
      s.on("connection", (sock) => {
        accepted += 1;
        sockets.add(sock);
        sock.on("close", () => sockets.delete(sock));
      });
      s.once("error", reject);
      s.listen(port, host, () => {
        s.off("error", reject);
        const addr = s.address();
        if (addr !== null && typeof addr === "object") port = addr.port;
        server = s;
        resolve();
      });
    });

  const close = async (): Promise<void> => {
    const s = server;
    if (s === undefined) return;
    server = undefined;
    for (const w of [...openWatches]) w.close();
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    await closed;
  };

  const kindOf = (apiVersion: string, kind: string): ResourceKind => {
    const k = registry.byApiVersionKind(apiVersion, kind);
    if (k === undefined) throw new Error(`kube-emulator: no kind ${kind} in ${apiVersion} is registered (registerKind first)`);
    return k;
  };

  const seed = (input: readonly KubeObject[] | string, file?: string): SeedResult => {
    const diagnostics: Diagnostic[] = [];
    const docs =
      typeof input === "string"
        ? (() => {
            const parsed = parseSeedYaml(input, file);
            diagnostics.push(...parsed.diagnostics);
            return parsed.documents;
          })()
        : input.map((object) => ({ object: toJson(object), line: 0 }));
    // Namespaces first, so their objects find them.
    const ordered = [...docs].sort((a, b) => Number(b.object.kind === "Namespace") - Number(a.object.kind === "Namespace"));
    let applied = 0;
    for (const { object, line } of ordered) {
      const at = { ...(file === undefined ? {} : { file }), ...(line > 0 ? { line } : {}) };
      const apiVersion = typeof object.apiVersion === "string" ? object.apiVersion : "";
      const kindName = typeof object.kind === "string" ? object.kind : "";
      const kind = registry.byApiVersionKind(apiVersion, kindName);
      if (kind === undefined) {
        diagnostics.push({
          code: SeedCode.UnknownKind,
          severity: Severity.Error,
          ...at,
          message: `kind "${kindName}" in "${apiVersion}" is not served by the emulator; register it (KubeEmulatorOptions.kinds / registerKind)`,
        });
        continue;
      }
      try {
        const meta = isObject(object.metadata) ? object.metadata : {};
        const ns = typeof meta.namespace === "string" ? meta.namespace : "default";
        if (kind.namespaced && store.find(registry.byResource("", "v1", "namespaces")!, undefined, ns) === undefined) {
          store.create(registry.byResource("", "v1", "namespaces")!, undefined, { metadata: { name: ns } }, SEED_MANAGER);
        }
        // Stored in the storage version, as a write through any served version is.
        const storage = registry.storageOf(kind);
        store.upsert(storage, { ...object, apiVersion: apiVersionOf(storage) }, SEED_MANAGER);
        applied += 1;
      } catch (err) {
        if (!(err instanceof KubeApiError)) throw err;
        diagnostics.push({ code: SeedCode.Rejected, severity: Severity.Error, ...at, message: `rejected by the emulator: ${err.message}` });
      }
    }
    return { applied, diagnostics };
  };

  if (options.seed !== undefined) {
    const result = seed(options.seed);
    const errors = result.diagnostics.filter((d) => d.severity === Severity.Error);
    if (errors.length > 0) throw new Error(`kube-emulator: seed rejected: ${errors.map((d) => d.message).join("; ")}`);
  }

  await listen();

  const kubeconfigObject = (o: KubeconfigOptions = {}): KubeconfigObject => {
    const name = o.name ?? "kube-emulator";
    return {
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name, cluster: { server: `http://${dialHost}:${port}`, "insecure-skip-tls-verify": true } }],
      // The emulator does no authentication; a token keeps clients that insist on credentials happy.
      users: [{ name, user: { token: o.token ?? "kube-emulator" } }],
      contexts: [{ name, context: { cluster: name, user: name, ...(o.namespace === undefined ? {} : { namespace: o.namespace }) } }],
      "current-context": name,
    };
  };

  const emulator: KubeEmulator = {
    get url() {
      return `http://${dialHost}:${port}`;
    },
    get port() {
      return port;
    },
    faults: {
      closeWatches: () => {
        const n = openWatches.size;
        for (const w of [...openWatches] as OpenWatch[]) w.close();
        return n;
      },
      failRequests: (count?: number, filter: FailureFilter = {}) => {
        failuresLeft = count === undefined ? -1 : Math.max(0, Math.floor(count));
        failureFilter = filter;
      },
      clear: () => {
        failuresLeft = 0;
      },
      goAway: close,
      comeBack: async () => {
        if (server === undefined) await listen();
      },
      get listening() {
        return server !== undefined;
      },
    },
    kubeconfig: (o) => toYaml(kubeconfigObject(o)),
    kubeconfigObject,
    writeKubeconfig: async (path, o) => {
      await writeFile(path, toYaml(kubeconfigObject(o)), { mode: 0o600 });
    },
    registerKind: (k) => registry.register(k),
    kinds: () => registry.all(),
    seed,
    seedFile: async (path) => seed(await readFile(path, "utf8"), path),
    get: (apiVersion, kind, namespace, name) => {
      const o = store.find(kindOf(apiVersion, kind), namespace, name);
      return o === undefined ? undefined : { ...o, apiVersion };
    },
    list: (apiVersion, kind, namespace) => store.list(kindOf(apiVersion, kind), namespace, [], []).map((o) => ({ ...structuredClone(o), apiVersion })),
    remove: (apiVersion, kind, namespace, name) => {
      const k = kindOf(apiVersion, kind);
      if (store.find(k, namespace, name) === undefined) return false;
      store.forceRemove(k, namespace, name);
      return true;
    },
    resourceVersion: () => String(store.resourceVersion),
    onChange: (listener) => store.subscribe((e: StoreEvent) => listener({ type: e.type, object: structuredClone(e.object) })),
    openWatches: () => openWatches.size,
    connectionsAccepted: () => accepted,
    forbidden: () => [...denied],
    stop: close,
  };
  return emulator;
}

