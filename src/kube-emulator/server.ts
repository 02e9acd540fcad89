/**
 * The HTTP layer: routes Kubernetes REST paths to the store, streams watches as NDJSON, and
 * applies the test fault switch. Plain node:http, no framework.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { parse as parseYaml } from "yaml";
import type { Logger } from "../core/index.js";
import { coreVersions, group, groupList, resourceList, versionInfo } from "./discovery.js";
import { apiVersionOf, type KindRegistry, type ResourceKind } from "./kinds.js";
import { isObject, type JsonObject } from "./patch.js";
import { parseFieldSelector, parseLabelSelector, selectableFields, type FieldRequirement, type Selector } from "./selectors.js";
import { failureStatus, KubeApiError, badRequest, gone, StatusReason } from "./status.js";
import { metaOf, PatchType, type FieldValidation, type ObjectStore, type StoreEvent } from "./store.js";
import { openApiV2Protobuf } from "./openapi.js";
import { decodeProtobuf, PROTOBUF_TYPE } from "./protobuf.js";
import { hasScale, patchScale, scaleOf, workloadWithScale } from "./scale.js";
import { forbidden, type Authorizer, type ForbiddenRequest, type RequestAttributes } from "./rbac.js";

export interface HandlerOptions {
  readonly store: ObjectStore;
  readonly kinds: KindRegistry;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly watchTimeoutSeconds: number;
  readonly bookmarkIntervalMs: number;
  /** Returns true (and consumes one failure) when the fault switch says this request must fail. */
  readonly shouldFail: (method: string, path: string) => boolean;
  /** RBAC enforcement (off when undefined). */
  readonly authorizer?: Authorizer;
  /** Called for every request RBAC denies. */
  readonly onForbidden?: (f: ForbiddenRequest) => void;
}

interface Route {
  readonly kind: ResourceKind;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly subresource: string | undefined;
}

/** A live watch stream; the emulator keeps them to close them on demand. */
export interface OpenWatch {
  close(): void;
}

const JSON_TYPE = "application/json";

function send(res: ServerResponse, code: number, body: unknown, warnings: readonly string[] = []): void {
  const text = JSON.stringify(body);
  const headers: Record<string, string | number | string[]> = { "Content-Type": JSON_TYPE, "Content-Length": Buffer.byteLength(text), "Cache-Control": "no-cache, private" };
  // As the real server warns: `Warning: 299 - "unknown field \"spec.foo\""`.
  if (warnings.length > 0) headers.Warning = warnings.map((w) => `299 - ${JSON.stringify(w)}`);
  res.writeHead(code, headers);
  res.end(text);
}

/** An object as the request's version shows it (a CRD's served versions share storage; no schema conversion between them). */
function asVersion(kind: ResourceKind, obj: Readonly<JsonObject>): JsonObject {
  const apiVersion = apiVersionOf(kind);
  return obj.apiVersion === apiVersion || obj.apiVersion === undefined ? (obj) : { ...obj, apiVersion };
}

function fieldValidationParam(q: URLSearchParams): FieldValidation {
  const v = q.get("fieldValidation") ?? "";
  if (v === "") return "Warn";
  if (v === "Strict" || v === "Warn" || v === "Ignore") return v;
  throw badRequest(`fieldValidation must be one of "Ignore", "Warn", or "Strict", got "${v}"`);
}

function sendError(res: ServerResponse, err: KubeApiError): void {
  send(res, err.status, err.toStatus());
}

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > max) {
        reject(new KubeApiError(413, StatusReason.BadRequest, `request entity too large: limit is ${max} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/**
 * Decodes a request body by its media type: JSON, YAML, or (built-in kinds only, as on a real
 * server where custom resources have no protobuf encoding) Kubernetes protobuf.
 */
function parseBody(raw: Buffer, contentType: string, kind?: ResourceKind): unknown {
  const media = contentType.split(";")[0]!.trim().toLowerCase();
  if (media === PROTOBUF_TYPE) {
    if (kind !== undefined && kind.builtIn !== true) throw unsupportedMedia(["application/json", "application/yaml"]);
    return decodeProtobuf(raw);
  }
  if (media !== "" && media !== JSON_TYPE && media !== "application/yaml" && media !== "*/*" && !media.endsWith("+json") && !media.endsWith("+yaml")) {
    throw unsupportedMedia(kind === undefined || kind.builtIn === true ? ["application/json", "application/yaml", PROTOBUF_TYPE] : ["application/json", "application/yaml"]);
  }
  const text = raw.toString("utf8");
  if (text.trim() === "") throw badRequest("the request body is empty");
  try {
    if (media.includes("yaml")) return parseYaml(text) as unknown;
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw badRequest(`the request body could not be decoded: ${err instanceof Error ? err.message : String(err)}`);
  }
}

function unsupportedMedia(accepted: readonly string[]): KubeApiError {
  return new KubeApiError(415, StatusReason.UnsupportedMediaType, `the body of the request was in an unknown format - accepted media types include: ${accepted.join(", ")}`);
}

/** Default field manager when none is given: the User-Agent's program name, like the real server. */
function defaultManager(req: IncomingMessage): string {
  const ua = req.headers["user-agent"] ?? "";
  const prog = ua.split("/")[0]?.trim() ?? "";
  return prog === "" ? "unknown" : prog.slice(0, 128);
}

/** Strips what the real server omits from list items of built-in kinds. */
function listItem(kind: ResourceKind, obj: JsonObject): JsonObject {
  if (kind.builtIn !== true) return obj;
  const { apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

/**
 * A boolean query parameter as the real server converts it (`Convert_Slice_string_To_bool`): absent
 * is false, `0` and `false` in any case are false, anything else (`True`, `1`, even empty) is true.
 */
export function boolParam(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null) return false;
  return !(v === "0" || v.toLowerCase() === "false");
}

const OPTIONS_KIND: Record<string, string> = { POST: "CreateOptions", PUT: "UpdateOptions", PATCH: "PatchOptions", DELETE: "DeleteOptions" };

/** `dryRun=All` (the only value Kubernetes defines) on a write; anything else is 422 like the real option validation. */
function dryRunParam(q: URLSearchParams, method: string): boolean {
  const values = q.getAll("dryRun");
  if (values.length === 0) return false;
  const optionsKind = OPTIONS_KIND[method];
  if (optionsKind === undefined) return false; // reads ignore it
  const bad = values.filter((v) => v !== "All");
  if (bad.length > 0) {
    throw invalidOptions(optionsKind, [`dryRun: Unsupported value: []string{${values.map((v) => JSON.stringify(v)).join(", ")}}: supported values: "All"`]);
  }
  return true;
}

/** 422 for bad request options, as the real server words it (`ListOptions.meta.k8s.io "" is invalid: …`). */
function invalidOptions(kind: string, messages: readonly string[]): KubeApiError {
  return new KubeApiError(422, StatusReason.Invalid, `${kind}.meta.k8s.io "" is invalid: ${messages.join(", ")}`, {
    group: "meta.k8s.io",
    kind,
    causes: messages.map((m) => {
      const i = m.indexOf(": ");
      return { reason: "FieldValueInvalid", message: m.slice(i + 2), field: m.slice(0, i) };
    }),
  });
}

/** How long a request for a resourceVersion the store has not reached waits before 504 (the watch cache's 3 s). */
const FRESHNESS_WAIT_MS = 3_000;

function tooLargeResourceVersion(wanted: number, current: number): KubeApiError {
  return new KubeApiError(504, StatusReason.Timeout, `Too large resource version: ${wanted}, current: ${current}`, {
    causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
    retryAfterSeconds: 1,
  });
}

function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: "meta.k8s.io/v1", rv, start })).toString("base64url");
}

function decodeContinue(token: string): { rv: number; start: string } {
  try {
    const t = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as { v?: unknown; rv?: unknown; start?: unknown };
    if (t.v === "meta.k8s.io/v1" && typeof t.rv === "number" && typeof t.start === "string") return { rv: t.rv, start: t.start };
  } catch {
    // fall through
  }
  throw badRequest("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)");
}

export function createHandler(opts: HandlerOptions): {
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  openWatches: Set<OpenWatch>;
} {
  const { store, kinds, logger } = opts;
  const openWatches = new Set<OpenWatch>();

  const route = (parts: readonly string[]): Route | undefined => {
    // parts start after /api/v1 or /apis/<g>/<v>
    let grp: string;
    let ver: string;
    let rest: string[];
    if (parts[0] === "api") {
      grp = "";
      ver = parts[1] ?? "";
      rest = parts.slice(2);
    } else {
      grp = parts[1] ?? "";
      ver = parts[2] ?? "";
      rest = parts.slice(3);
    }
    let namespace: string | undefined;
    // /api/v1/namespaces/<name>/status is the Namespace's own subresource, not a resource in a namespace.
    const namespaceSubresource = grp === "" && rest[0] === "namespaces" && rest.length === 3 && (rest[2] === "status" || rest[2] === "finalize");
    if (rest[0] === "namespaces" && rest.length >= 3 && !namespaceSubresource) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const plural = rest[0];
    if (plural === undefined) return undefined;
    const kind = kinds.byResource(grp, ver, plural);
    if (kind === undefined) return undefined;
    if (!kind.namespaced && namespace !== undefined) return undefined;
    return { kind, namespace, name: rest[1], subresource: rest[2] };
  };

  const selectors = (q: URLSearchParams, kind: ResourceKind): { labels: Selector; fields: readonly FieldRequirement[] } => ({
    labels: parseLabelSelector(q.get("labelSelector") ?? ""),
    fields: parseFieldSelector(q.get("fieldSelector") ?? "", selectableFields(kind.builtIn === true ? `${kind.group}/${kind.kind}` : undefined)),
  });

  const list = async (r: Route, q: URLSearchParams, res: ServerResponse): Promise<void> => {
    const { labels, fields } = selectors(q, r.kind);
    const limit = Number(q.get("limit") ?? "0");
    const cont = q.get("continue") ?? "";
    const rvParam = q.get("resourceVersion") ?? "";
    const match = q.get("resourceVersionMatch") ?? "";
    if (match !== "" && match !== "Exact" && match !== "NotOlderThan") {
      throw invalidOptions("ListOptions", [`resourceVersionMatch: Unsupported value: "${match}": supported values: "Exact", "NotOlderThan"`]);
    }
    if (match !== "" && rvParam === "") throw invalidOptions("ListOptions", ["resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"]);
    if (cont !== "" && rvParam !== "" && rvParam !== "0") throw invalidOptions("ListOptions", ["resourceVersion: Forbidden: specifying resource version is not allowed when using continue"]);
    if (rvParam !== "" && !/^[0-9]+$/.test(rvParam)) throw badRequest(`invalid resource version "${rvParam}"`);
    // A continue token names the snapshot (resourceVersion) and the key after which the page starts,
    // as the real server's does: items deleted or added since the first page do not shift the pages.
    let atRv = store.resourceVersion;
    let after = "";
    if (cont !== "") {
      const token = decodeContinue(cont);
      atRv = token.rv;
      after = token.start;
    } else if (match === "Exact") {
      atRv = Number(rvParam);
      await waitFresh(atRv);
    } else if (rvParam !== "" && rvParam !== "0") {
      await waitFresh(Number(rvParam));
      atRv = store.resourceVersion;
    }
    const source = atRv === store.resourceVersion ? undefined : store.snapshot(r.kind, atRv);
    if (atRv !== store.resourceVersion && source === undefined) {
      throw cont !== ""
        ? gone(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
          )
        : gone(`too old resource version: ${atRv} (${store.oldestResumableVersion})`);
    }
    const all = store.listKeyed(r.kind, r.namespace, labels, fields, source).filter(([key]) => key >= after);
    const page = limit > 0 ? all.slice(0, limit) : all;
    const more = limit > 0 && all.length > limit;
    const last = page.at(-1)?.[0] ?? "";
    send(res, 200, {
      kind: `${r.kind.kind}List`,
      apiVersion: apiVersionOf(r.kind),
      metadata: {
        resourceVersion: String(atRv),
        ...(more ? { continue: encodeContinue(atRv, `${last}\u0000`) } : {}),
        // Counted only for an unfiltered list: with a selector the real server cannot know the rest without reading it.
        ...(more && labels.length === 0 && fields.length === 0 ? { remainingItemCount: all.length - limit } : {}),
      },
      items: page.map(([, o]) => listItem(r.kind, asVersion(r.kind, o))),
    });
  };

  /**
   * Waits (up to 3 s, as the real watch cache does) until the store has reached `rv`; then 504
   * "Too large resource version", which clients retry.
   */
  const waitFresh = (rv: number): Promise<void> => {
    if (store.resourceVersion >= rv) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        unsubscribe();
        reject(tooLargeResourceVersion(rv, store.resourceVersion));
      }, FRESHNESS_WAIT_MS);
      const unsubscribe = store.subscribe(() => {
        if (store.resourceVersion < rv) return;
        clearTimeout(timer);
        unsubscribe();
        resolve();
      });
    });
  };

  const watch = (r: Route, q: URLSearchParams, req: IncomingMessage, res: ServerResponse): void => {
    const { labels, fields } = selectors(q, r.kind);
    const rvParam = q.get("resourceVersion") ?? "";
    const bookmarks = boolParam(q, "allowWatchBookmarks");
    // Streaming lists (KEP-3157, WatchList): the current state as ADDED events, then (with bookmarks)
    // a BOOKMARK annotated `k8s.io/initial-events-end`, then the changes. `sendInitialEvents=false`
    // starts at the current state without them.
    const initialEvents = q.has("sendInitialEvents") ? boolParam(q, "sendInitialEvents") : undefined;
    if (initialEvents !== undefined && q.get("resourceVersionMatch") !== "NotOlderThan") {
      throw invalidOptions("ListOptions", ["resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"]);
    }
    // A resourceVersion from the future is accepted as the real watch cache accepts it: the stream
    // stays open and sends the changes after that version once the store gets there.
    const requested = Number(q.get("timeoutSeconds") ?? "0");
    const timeoutSeconds = requested > 0 ? Math.min(requested, opts.watchTimeoutSeconds) : opts.watchTimeoutSeconds;
    const ns = r.namespace;
    const nameFilter = r.name; // GET .../<plural>/<name>?watch=true watches one object

    res.writeHead(200, { "Content-Type": JSON_TYPE, "Cache-Control": "no-cache, private", "Transfer-Encoding": "chunked" });
    res.flushHeaders();
    let closed = false;
    const write = (type: string, object: JsonObject): void => {
      if (!closed) res.write(JSON.stringify({ type, object: type === "ERROR" || type === "BOOKMARK" ? object : asVersion(r.kind, object) }) + "\n");
    };
    const matches = (o: JsonObject): boolean =>
      store.matches(o, ns, labels, fields) && (nameFilter === undefined || metaOf(o).name === nameFilter);
    const deliver = (e: StoreEvent): void => {
      if (e.kind.group !== r.kind.group || e.kind.plural !== r.kind.plural) return;
      const now = matches(e.object);
      if (e.type !== "MODIFIED") {
        if (now) write(e.type, e.object);
        return;
      }
      const before = e.previous !== undefined && matches(e.previous);
      if (now && before) write("MODIFIED", e.object);
      else if (now) write("ADDED", e.object);
      else if (before) write("DELETED", e.object);
    };

    const handle: OpenWatch = { close: () => finish() };
    let unsubscribe = (): void => undefined;
    let bookmarkTimer: NodeJS.Timeout | undefined;
    const timeout = setTimeout(() => {
      if (bookmarks) sendBookmark();
      finish();
    }, timeoutSeconds * 1000);
    const sendBookmark = (): void =>
      write("BOOKMARK", { kind: r.kind.kind, apiVersion: apiVersionOf(r.kind), metadata: { resourceVersion: String(store.resourceVersion) } });
    function finish(): void {
      if (closed) return;
      closed = true;
      clearTimeout(timeout);
      if (bookmarkTimer !== undefined) clearInterval(bookmarkTimer);
      unsubscribe();
      openWatches.delete(handle);
      res.end();
    }
    openWatches.add(handle);
    req.on("close", finish);
    res.on("close", finish);

    let floor = /^[0-9]+$/.test(rvParam) ? Number(rvParam) : 0;
    if (initialEvents !== undefined) {
      if (initialEvents) for (const o of store.list(r.kind, ns, labels, fields)) if (matches(o)) write("ADDED", o);
      floor = store.resourceVersion;
      if (initialEvents && bookmarks) {
        write("BOOKMARK", {
          kind: r.kind.kind,
          apiVersion: apiVersionOf(r.kind),
          metadata: { resourceVersion: String(floor), annotations: { "k8s.io/initial-events-end": "true" } },
        });
      }
    } else if (rvParam === "" || rvParam === "0") {
      // "Start at most recent" with the current state as synthetic ADDED events, like the real server.
      for (const o of store.list(r.kind, ns, labels, fields)) if (matches(o)) write("ADDED", o);
    } else {
      const from = Number(rvParam);
      const events = Number.isInteger(from) && from >= 0 ? store.eventsSince(from) : undefined;
      if (events === undefined) {
        const reason = Number.isInteger(from) ? `too old resource version: ${rvParam} (${store.oldestResumableVersion})` : `invalid resource version "${rvParam}"`;
        write("ERROR", gone(reason).toStatus() as unknown as JsonObject);
        finish();
        return;
      }
      for (const e of events) deliver(e);
    }
    // Nothing at or before the requested version (or the initial state) is sent.
    unsubscribe = store.subscribe((e) => {
      if (e.rv > floor) deliver(e);
    });
    if (bookmarks) bookmarkTimer = setInterval(sendBookmark, opts.bookmarkIntervalMs);
  };

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://emulator");
    const q = url.searchParams;
    const method = req.method ?? "GET";
    let parts: string[];
    try {
      parts = url.pathname.split("/").filter((p) => p !== "").map(decodeURIComponent);
    } catch {
      throw badRequest(`malformed URL path: ${url.pathname}`);
    }
    const path = "/" + parts.join("/");

    if (opts.shouldFail(method, path)) {
      throw new KubeApiError(500, StatusReason.InternalError, "Internal error occurred: injected by the kube-emulator fault switch");
    }
    const user = opts.authorizer?.authenticate(req.headers.authorization);

    if (method === "GET") {
      if (path === "/version") return send(res, 200, versionInfo());
      if (path === "/healthz" || path === "/livez" || path === "/readyz") {
        res.writeHead(200, { "Content-Type": "text/plain" });
        res.end("ok");
        return;
      }
      if (path === "/api") return send(res, 200, coreVersions(req.headers.host ?? "127.0.0.1"));
      if (path === "/apis") return send(res, 200, groupList(kinds));
      if (path === "/openapi/v2") {
        const accept = req.headers.accept ?? "";
        if (accept.includes("protobuf")) {
          const body = openApiV2Protobuf();
          res.writeHead(200, { "Content-Type": "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", "Content-Length": body.length });
          res.end(body);
          return;
        }
        return send(res, 200, { swagger: "2.0", info: { title: "Kubernetes (gitmesh kube-emulator)", version: "v1.31.0" }, paths: {}, definitions: {} });
      }
      if (parts.length === 2 && parts[0] === "api") {
        const doc = resourceList(kinds, "", parts[1]!);
        if (doc !== undefined) return send(res, 200, doc);
      }
      if (parts.length === 2 && parts[0] === "apis") {
        const doc = group(kinds, parts[1]!);
        if (doc !== undefined) return send(res, 200, doc);
      }
      if (parts.length === 3 && parts[0] === "apis") {
        const doc = resourceList(kinds, parts[1]!, parts[2]!);
        if (doc !== undefined) return send(res, 200, doc);
      }
    }

    const r = parts[0] === "api" || parts[0] === "apis" ? route(parts) : undefined;
    const servedSubresource = (rt: Route): boolean =>
      rt.name !== undefined && ((rt.subresource === "status" && rt.kind.statusSubresource === true) || (rt.subresource === "scale" && hasScale(rt.kind)));
    if (r === undefined || (r.subresource !== undefined && !servedSubresource(r))) {
      throw new KubeApiError(404, StatusReason.NotFound, "the server could not find the requested resource");
    }
    const { namespace, name } = r;
    // Writes go to the storage version (a CRD's versions share storage); answers come back in the request's version.
    const kind = kinds.storageOf(r.kind);
    const reply = (o: Readonly<JsonObject>): JsonObject => asVersion(r.kind, o);
    const toStorage = (body: unknown): unknown => {
      if (!isObject(body) || kind === r.kind) return body;
      if (body.apiVersion !== undefined && body.apiVersion !== apiVersionOf(r.kind)) {
        throw badRequest(`the API version in the data (${JSON.stringify(body.apiVersion)}) does not match the expected API version (${apiVersionOf(r.kind)})`);
      }
      return { ...body, apiVersion: apiVersionOf(kind) };
    };
    const subresource = r.subresource === "status" ? ("status" as const) : undefined;
    const scaling = r.subresource === "scale";
    const fieldValidation = fieldValidationParam(q);
    const manager = q.get("fieldManager") ?? undefined;
    const authorize = (verb: string): void => {
      if (opts.authorizer === undefined || user === undefined) return;
      const a: RequestAttributes = {
        user,
        verb,
        group: kind.group,
        resource: r.subresource === undefined ? kind.plural : `${kind.plural}/${r.subresource}`,
        namespace: kind.namespaced ? namespace : undefined,
        name,
      };
      if (opts.authorizer.allowed(a)) return;
      opts.onForbidden?.({ ...a, method, path });
      throw forbidden(a);
    };
    const watching = boolParam(q, "watch");
    const dryRun = dryRunParam(q, method);
    const request = { dryRun, fieldValidation, ...(subresource === undefined ? {} : { subresource }) };
    const verbs: Record<string, string> = {
      GET: watching ? "watch" : name === undefined ? "list" : "get",
      POST: "create",
      PUT: "update",
      PATCH: "patch",
      DELETE: name === undefined ? "deletecollection" : "delete",
    };
    if (subresource !== undefined && method !== "GET" && method !== "PUT" && method !== "PATCH") {
      throw new KubeApiError(405, StatusReason.MethodNotAllowed, "the server does not allow this method on the requested resource");
    }
    const verb = verbs[method];
    if (verb !== undefined) authorize(verb);
    // An apply that creates the object needs create too (as on a real API server).
    if (method === "PATCH" && name !== undefined && (req.headers["content-type"] ?? "").startsWith(PatchType.Apply) && store.find(kind, namespace, name) === undefined) {
      authorize("create");
    }

    switch (method) {
      case "GET": {
        if (watching) return watch(r, q, req, res);
        if (name === undefined) return list(r, q, res);
        if (scaling) return send(res, 200, scaleOf(store.get(kind, namespace, name)));
        return send(res, 200, reply(store.get(kind, namespace, name)));
      }
      case "POST": {
        if (name !== undefined) throw new KubeApiError(405, StatusReason.MethodNotAllowed, `the server does not allow this method on the requested resource`);
        const body = toStorage(parseBody(await readBody(req, opts.maxBodyBytes), req.headers["content-type"] ?? JSON_TYPE, kind));
        const out = store.run(request, () => store.create(kind, namespace, body, manager ?? defaultManager(req)));
        return send(res, 201, reply(out.value), out.warnings);
      }
      case "PUT": {
        if (name === undefined) throw new KubeApiError(405, StatusReason.MethodNotAllowed, `the server does not allow this method on the requested resource`);
        if (scaling) {
          const scale = parseBody(await readBody(req, opts.maxBodyBytes), req.headers["content-type"] ?? JSON_TYPE);
          const next = workloadWithScale(store.get(kind, namespace, name), scale, name);
          return send(res, 200, scaleOf(store.run(request, () => store.update(kind, namespace, name, next, manager ?? defaultManager(req))).value));
        }
        const body = toStorage(parseBody(await readBody(req, opts.maxBodyBytes), req.headers["content-type"] ?? JSON_TYPE, kind));
        const out = store.run(request, () => store.update(kind, namespace, name, body, manager ?? defaultManager(req)));
        return send(res, 200, reply(out.value), out.warnings);
      }
      case "PATCH": {
        if (name === undefined) throw new KubeApiError(405, StatusReason.MethodNotAllowed, `the server does not allow this method on the requested resource`);
        const ct = (req.headers["content-type"] ?? "").split(";")[0]!.trim();
        const types: readonly string[] = Object.values(PatchType);
        if (!types.includes(ct)) {
          throw new KubeApiError(415, StatusReason.UnsupportedMediaType, `the body of the request was in an unknown format - accepted media types include: ${types.join(", ")}`);
        }
        const patchType = ct as PatchType;
        if (scaling) {
          if (patchType === PatchType.Apply) throw unsupportedMedia([PatchType.Json, PatchType.Merge, PatchType.Strategic]);
          const patch = parseBody(await readBody(req, opts.maxBodyBytes), JSON_TYPE);
          const live = store.get(kind, namespace, name);
          const next = workloadWithScale(live, patchScale(scaleOf(live), patchType, patch), name);
          return send(res, 200, scaleOf(store.run(request, () => store.update(kind, namespace, name, next, manager ?? defaultManager(req))).value));
        }
        const parsed = parseBody(await readBody(req, opts.maxBodyBytes), patchType === PatchType.Apply ? "application/yaml" : JSON_TYPE);
        const body = patchType === PatchType.Apply ? toStorage(parsed) : parsed;
        const { value: out, warnings } = store.run(request, () =>
          store.patch({
            kind,
            ns: namespace,
            name,
            type: patchType,
            body,
            manager: patchType === PatchType.Apply ? manager : (manager ?? defaultManager(req)),
            force: boolParam(q, "force"),
          }),
        );
        return send(res, out.created ? 201 : 200, reply(out.object), warnings);
      }
      case "DELETE": {
        const raw = await readBody(req, opts.maxBodyBytes);
        // DeleteOptions come as JSON, YAML or protobuf whatever the kind (they are a meta.k8s.io type).
        const opt = raw.toString("utf8").trim() === "" ? {} : parseBody(raw, req.headers["content-type"] ?? JSON_TYPE);
        const pre = isObject(opt) && isObject(opt.preconditions) ? opt.preconditions : {};
        // kubectl delete --dry-run=server puts dryRun in the DeleteOptions body rather than the query.
        const bodyDryRun = isObject(opt) && Array.isArray(opt.dryRun) ? opt.dryRun : [];
        if (bodyDryRun.some((v) => v !== "All")) {
          throw invalidOptions("DeleteOptions", [`dryRun: Unsupported value: []string{${bodyDryRun.map((v) => JSON.stringify(v)).join(", ")}}: supported values: "All"`]);
        }
        const dryRunDelete = dryRun || bodyDryRun.length > 0;
        const preconditions = {
          ...(typeof pre.uid === "string" ? { uid: pre.uid } : {}),
          ...(typeof pre.resourceVersion === "string" ? { resourceVersion: pre.resourceVersion } : {}),
        };
        if (name === undefined) {
          const { labels, fields } = selectors(q, r.kind);
          const items = store.dryRun(dryRunDelete, () =>
            store.list(kind, namespace, labels, fields).map((o) => {
              const m = metaOf(o);
              return store.delete(kind, typeof m.namespace === "string" ? m.namespace : undefined, typeof m.name === "string" ? m.name : "");
            }),
          );
          return send(res, 200, { kind: `${kind.kind}List`, apiVersion: apiVersionOf(kind), metadata: { resourceVersion: String(store.resourceVersion) }, items });
        }
        const { object: deletedObject, finalized } = store.dryRun(dryRunDelete, () => store.deleteObject(kind, namespace, name, preconditions));
        const deleted = reply(deletedObject);
        // Like the real server: an object that is not gone yet (finalizers, a namespace being emptied)
        // is answered as it now is; Pods, Services and ServiceAccounts (ReturnDeletedObject) answer the
        // deleted object, others a Status.
        if (!finalized || (kind.builtIn === true && ["Pod", "Service", "ServiceAccount", "Namespace"].includes(kind.kind))) return send(res, 200, deleted);
        return send(res, 200, {
          kind: "Status",
          apiVersion: "v1",
          metadata: {},
          status: "Success",
          details: { name, ...(kind.group === "" ? {} : { group: kind.group }), kind: kind.plural, uid: metaOf(deleted).uid ?? "" },
        });
      }
      default:
        throw new KubeApiError(405, StatusReason.MethodNotAllowed, `the server does not allow this method on the requested resource`);
    }
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    serve(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof KubeApiError) {
        if (err.status >= 500) logger.warn("request failed", { method: req.method, url: req.url, status: err.status });
        sendError(res, err);
        return;
      }
      logger.error("bug in kube-emulator handler", { method: req.method, url: req.url, error: err instanceof Error ? err.stack : String(err) });
      send(res, 500, failureStatus(500, StatusReason.InternalError, `Internal error occurred: ${err instanceof Error ? err.message : String(err)}`));
    });
  };

  return { handle, openWatches };
}
