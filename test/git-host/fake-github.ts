/**
 * A local HTTP server that plays the GitHub REST API for the calls `gitmesh diff --post github`
 * makes, and validates EVERY request against GitHub's official OpenAPI description
 * (@octokit/openapi, api.github.com.json): the operation is found by method and path template,
 * path and query parameters and the JSON body are checked against the operation's schemas (ajv,
 * the whole description added as one schema so `$ref`s into components resolve), and every answer
 * is built from the operation's documented example with our ids and bodies patched in — and is
 * itself validated against the documented response schema. A request that does not validate is
 * answered 400 and recorded in `violations` (tests assert it stays empty).
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";

const require = createRequire(import.meta.url);
const SPEC_FILE = require.resolve("@octokit/openapi/generated/api.github.com.json");

type Json = Record<string, unknown>;
interface Operation {
  readonly template: string;
  readonly method: string;
  readonly operationId: string;
  readonly regex: RegExp;
  readonly pathNames: readonly string[];
  readonly literalSegments: number;
  readonly op: Json;
}

let loaded: { doc: Json; ajv: Ajv; operations: Operation[] } | undefined;

/** The description, parsed once per test file (13 MB). */
function spec(): { doc: Json; ajv: Ajv; operations: Operation[] } {
  if (loaded) return loaded;
  const doc = JSON.parse(readFileSync(SPEC_FILE, "utf8")) as Json;
  // OpenAPI 3.0 schemas: `nullable`, `example`, `x-*` — not strict JSON Schema.
  const ajv = new Ajv({ strict: false, validateSchema: false, allErrors: true });
  const addFormats = addFormatsModule as unknown as (a: Ajv) => void;
  addFormats(ajv);
  openApiNullable(doc);
  ajv.addSchema(doc, "gh");
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const method of ["get", "post", "patch", "put", "delete"]) {
      const op = item[method];
      if (!op) continue;
      const params = [...((item.parameters as Json[] | undefined) ?? []), ...((op.parameters as Json[] | undefined) ?? [])].map((p) => deref(doc, p));
      const multi = new Set(params.filter((p) => p.in === "path" && p["x-multi-segment"] === true).map((p) => p.name as string));
      const pathNames: string[] = [];
      const source = template
        .split("/")
        .map((seg) => {
          const m = /^\{(.+)\}$/.exec(seg);
          if (!m) return seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
          pathNames.push(m[1]!);
          return multi.has(m[1]!) ? "(.+)" : "([^/]+)";
        })
        .join("/");
      operations.push({
        template,
        method: method.toUpperCase(),
        operationId: op.operationId as string,
        regex: new RegExp(`^${source}$`),
        pathNames,
        literalSegments: template.split("/").filter((s) => s !== "" && !s.startsWith("{")).length,
        op,
      });
    }
  }
  operations.sort((a, b) => b.literalSegments - a.literalSegments);
  loaded = { doc, ajv, operations };
  return loaded;
}

/**
 * OpenAPI 3.0's `nullable: true` beside `$ref`/`allOf`/… (no `type`) has no JSON Schema meaning that
 * ajv accepts; it means "this schema, or null" — rewritten so, in place, once.
 */
function openApiNullable(node: unknown): void {
  if (Array.isArray(node)) {
    for (const v of node) openApiNullable(v);
    return;
  }
  if (node === null || typeof node !== "object") return;
  const o = node as Json;
  for (const v of Object.values(o)) openApiNullable(v);
  if (o.nullable === true && o.type === undefined) {
    const { nullable: _n, ...rest } = o;
    for (const k of Object.keys(o)) Reflect.deleteProperty(o, k);
    o.anyOf = [rest, { type: "null" }];
  } else if (o.nullable === true && Array.isArray(o.enum) && !o.enum.includes(null)) {
    o.enum = [...(o.enum as unknown[]), null];
  }
}

function deref(doc: Json, node: Json): Json {
  let cur = node;
  for (let i = 0; i < 10 && typeof cur.$ref === "string"; i++) {
    cur = cur.$ref
      .slice(2)
      .split("/")
      .reduce<unknown>((o, k) => (o as Json)[k.replace(/~1/g, "/").replace(/~0/g, "~")], doc) as Json;
  }
  return cur;
}

const pointer = (...parts: string[]) => "gh#/" + parts.map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");
const validators = new Map<string, ValidateFunction>();
function validatorAt(ref: string): ValidateFunction {
  let v = validators.get(ref);
  if (!v) {
    v = spec().ajv.compile({ $ref: ref });
    validators.set(ref, v);
  }
  return v;
}

const paramValidators = new WeakMap<Json, ValidateFunction>();
function paramValidator(schema: Json): ValidateFunction {
  let v = paramValidators.get(schema);
  if (!v) {
    v = spec().ajv.compile(schema);
    paramValidators.set(schema, v);
  }
  return v;
}

export interface GitHubComment {
  id: number;
  body: string;
  login: string;
  userType: "User" | "Bot";
}

export interface GitHubStatus {
  state: string;
  context: string;
  description: string | null;
  target_url: string | null;
}

export interface FakeGitHubOptions {
  readonly token: string;
  readonly owner: string;
  readonly repo: string;
  /** Pull requests: number → head sha. */
  readonly pulls: Record<number, string>;
  /** Commits the repository has (GET commits/{sha} answers 422 for any other). */
  readonly commits: readonly string[];
  /** Login of the token; undefined: an installation token (GET /user is 403, writes as github-actions[bot]). */
  readonly userLogin?: string;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly operationId: string;
  readonly status: number;
  readonly authorization: string | undefined;
}

export interface FakeGitHub {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Requests that did not validate against the OpenAPI description, and answers that did not. */
  readonly violations: string[];
  readonly comments: Map<number, GitHubComment[]>;
  readonly statuses: Map<string, GitHubStatus[]>;
  /** Answer this status (GitHub's documented error body) to operations the predicate picks. */
  fault: { status: number; message: string; when: (operationId: string) => boolean } | undefined;
  /** Add a comment by someone else (the reporter must never touch it). */
  addComment(issue: number, body: string, login: string, userType?: "User" | "Bot"): number;
  writes(): RecordedRequest[];
  close(): Promise<void>;
}

export async function startFakeGitHub(options: FakeGitHubOptions): Promise<FakeGitHub> {
  const { doc } = spec();
  const requests: RecordedRequest[] = [];
  const violations: string[] = [];
  const comments = new Map<number, GitHubComment[]>();
  const statuses = new Map<string, GitHubStatus[]>();
  let nextId = 1000;
  const writerLogin = options.userLogin ?? "github-actions[bot]";
  const writerType = options.userLogin === undefined ? "Bot" : "User";
  let base = "";

  const example = (operation: Operation, status: string): Json => {
    const content = deref(doc, ((operation.op.responses as Json)[status] as Json | undefined) ?? {}).content as Record<string, Json> | undefined;
    const examples = content?.["application/json"]?.examples as Record<string, Json> | undefined;
    const first = examples ? Object.values(examples)[0] : undefined;
    if (!first) throw new Error(`no documented example for ${operation.operationId} ${status}`);
    return structuredClone(deref(doc, first).value) as Json;
  };
  const commentJson = (operation: Operation, status: string, issue: number, c: GitHubComment): Json => {
    const template = operation.operationId === "issues/list-comments" ? (example(operation, status) as unknown as Json[])[0]! : example(operation, status);
    const user = { ...(template.user as Json), login: c.login, type: c.userType };
    return {
      ...template,
      id: c.id,
      body: c.body,
      user,
      url: `${base}/repos/${options.owner}/${options.repo}/issues/comments/${c.id}`,
      html_url: `https://github.com/${options.owner}/${options.repo}/pull/${issue}#issuecomment-${c.id}`,
      issue_url: `${base}/repos/${options.owner}/${options.repo}/issues/${issue}`,
    };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://x");
    const method = req.method ?? "GET";
    const raw = await new Promise<string>((resolve) => {
      let s = "";
      req.setEncoding("utf8");
      req.on("data", (c: string) => (s += c));
      req.on("end", () => resolve(s));
    });
    const problems: string[] = [];
    const record = (operationId: string, status: number) =>
      requests.push({ method, path: url.pathname, operationId, status, authorization: req.headers.authorization });
    const send = (operation: Operation | undefined, status: number, body: unknown, headers: Record<string, string> = {}) => {
      if (operation && body !== undefined) {
        const response = ((operation.op.responses as Json)[String(status)] as Json | undefined) ?? undefined;
        const schemaRef = response && deref(doc, response).content ? pointer("paths", operation.template, operation.method.toLowerCase(), "responses", String(status), "content", "application/json", "schema") : undefined;
        if (schemaRef && typeof (response as Json).$ref !== "string") {
          const v = validatorAt(schemaRef);
          if (!v(body)) violations.push(`fake answer ${operation.operationId} ${status} does not match the documented schema: ${spec().ajv.errorsText(v.errors)}`);
        }
      }
      record(operation?.operationId ?? "?", status);
      res.writeHead(status, body === undefined ? headers : { "content-type": "application/json; charset=utf-8", ...headers });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const error = (operation: Operation | undefined, status: number, message: string) =>
      send(operation, status, { message, documentation_url: "https://docs.github.com/rest", status: String(status) });

    // 1. The operation, by method and path template.
    const candidates = spec().operations.filter((o) => o.method === method && o.regex.test(url.pathname));
    const operation = candidates[0];
    if (!operation) {
      violations.push(`${method} ${url.pathname}: no such operation in GitHub's OpenAPI description`);
      return error(undefined, 404, "Not Found");
    }
    const m = operation.regex.exec(url.pathname)!;
    const pathValues = Object.fromEntries(operation.pathNames.map((n, i) => [n, decodeURIComponent(m[i + 1]!)]));

    // 2. Parameters and body against the operation.
    const params = ((operation.op.parameters as Json[] | undefined) ?? []).map((p) => deref(doc, p));
    const known = new Set<string>();
    for (const p of params) {
      const name = p.name as string;
      let value: string | undefined;
      if (p.in === "path") value = pathValues[name];
      else if (p.in === "query") {
        known.add(name);
        value = url.searchParams.get(name) ?? undefined;
      } else continue;
      if (value === undefined) {
        if (p.required === true) problems.push(`missing required ${p.in} parameter ${name}`);
        continue;
      }
      const schema = p.schema as Json;
      const coerced = schema.type === "integer" || schema.type === "number" ? (/^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value) : schema.type === "boolean" ? value === "true" ? true : value === "false" ? false : value : value;
      const v = paramValidator(schema);
      if (!v(coerced)) problems.push(`${p.in} parameter ${name}=${value}: ${spec().ajv.errorsText(v.errors)}`);
    }
    for (const name of url.searchParams.keys()) if (!known.has(name)) problems.push(`unknown query parameter ${name}`);
    const requestBody = operation.op.requestBody ? deref(doc, operation.op.requestBody as Json) : undefined;
    let body: Json = {};
    if (requestBody) {
      if (raw === "") {
        if (requestBody.required === true) problems.push("missing required JSON body");
      } else {
        try {
          body = JSON.parse(raw) as Json;
          const v = validatorAt(pointer("paths", operation.template, operation.method.toLowerCase(), "requestBody", "content", "application/json", "schema"));
          if (!v(body)) problems.push(`body: ${spec().ajv.errorsText(v.errors)}`);
        } catch {
          problems.push("body is not JSON");
        }
      }
    } else if (raw !== "") problems.push("a body where the operation takes none");
    if (problems.length > 0) {
      violations.push(`${method} ${url.pathname} (${operation.operationId}): ${problems.join("; ")}`);
      return error(operation, 400, `invalid request: ${problems.join("; ")}`);
    }

    // 3. Authentication, injected faults, then the operation itself.
    const auth = req.headers.authorization ?? "";
    if (auth !== `token ${options.token}` && auth !== `Bearer ${options.token}`) return error(operation, 401, "Bad credentials");
    if (fake.fault?.when(operation.operationId)) return error(operation, fake.fault.status, fake.fault.message);
    if (pathValues.owner !== options.owner || pathValues.repo !== options.repo) {
      if (pathValues.owner !== undefined) return error(operation, 404, "Not Found");
    }
    const issueOf = (id: number) => [...comments].find(([, list]) => list.some((c) => c.id === id));
    switch (operation.operationId) {
      case "pulls/get": {
        const n = Number(pathValues.pull_number);
        const head = options.pulls[n];
        if (head === undefined) return error(operation, 404, "Not Found");
        const pr = example(operation, "200");
        // (GitHub's own example lists a requested team without the `type` its schema requires.)
        return send(operation, 200, { ...pr, number: n, head: { ...(pr.head as Json), sha: head }, requested_teams: [] });
      }
      case "repos/get-commit": {
        const ref = pathValues.ref!;
        if (!options.commits.includes(ref)) return error(operation, 422, `No commit found for SHA: ${ref}`);
        // (GitHub's own example lists files without the `sha` and `contents_url` its schema requires.)
        return send(operation, 200, { ...example(operation, "200"), sha: ref, files: [] });
      }
      case "users/get-authenticated": {
        if (options.userLogin === undefined) return error(operation, 403, "Resource not accessible by integration");
        return send(operation, 200, { ...example(operation, "200"), login: options.userLogin });
      }
      case "issues/list-comments": {
        const n = Number(pathValues.issue_number);
        if (options.pulls[n] === undefined) return error(operation, 404, "Not Found");
        const perPage = Number(url.searchParams.get("per_page") ?? 30);
        const page = Number(url.searchParams.get("page") ?? 1);
        const all = comments.get(n) ?? [];
        const slice = all.slice((page - 1) * perPage, page * perPage);
        const headers: Record<string, string> = {};
        if (page * perPage < all.length) headers.link = `<${base}${url.pathname}?per_page=${perPage}&page=${page + 1}>; rel="next"`;
        return send(operation, 200, slice.map((c) => commentJson(operation, "200", n, c)), headers);
      }
      case "issues/create-comment": {
        const n = Number(pathValues.issue_number);
        if (options.pulls[n] === undefined) return error(operation, 404, "Not Found");
        const c: GitHubComment = { id: nextId++, body: body.body as string, login: writerLogin, userType: writerType };
        comments.set(n, [...(comments.get(n) ?? []), c]);
        return send(operation, 201, commentJson(operation, "201", n, c));
      }
      case "issues/update-comment": {
        const id = Number(pathValues.comment_id);
        const found = issueOf(id);
        if (!found) return error(operation, 404, "Not Found");
        const c = found[1].find((x) => x.id === id)!;
        if (c.login !== writerLogin) return error(operation, 403, "Must have admin rights to Repository.");
        c.body = body.body as string;
        return send(operation, 200, commentJson(operation, "200", found[0], c));
      }
      case "issues/delete-comment": {
        const id = Number(pathValues.comment_id);
        const found = issueOf(id);
        if (!found) return error(operation, 404, "Not Found");
        found[1].splice(found[1].findIndex((x) => x.id === id), 1);
        return send(operation, 204, undefined);
      }
      case "repos/create-commit-status": {
        const sha = pathValues.sha!;
        if (!options.commits.includes(sha)) return error(operation, 422, `No commit found for SHA: ${sha}`);
        const s: GitHubStatus = {
          state: body.state as string,
          context: (body.context as string | undefined) ?? "default",
          description: (body.description as string | null | undefined) ?? null,
          target_url: (body.target_url as string | null | undefined) ?? null,
        };
        if (s.description !== null && s.description.length > 140) return error(operation, 422, "description is too long (maximum is 140 characters)");
        statuses.set(sha, [...(statuses.get(sha) ?? []), s]);
        return send(operation, 201, { ...example(operation, "201"), ...s, url: `${base}/repos/${options.owner}/${options.repo}/statuses/${sha}` });
      }
      default:
        violations.push(`${method} ${url.pathname}: ${operation.operationId} is not expected from gitmesh`);
        return error(operation, 404, "Not Found");
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      violations.push(`fake crashed: ${String(err)}`);
      res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const fake: FakeGitHub = {
    url: base,
    requests,
    violations,
    comments,
    statuses,
    fault: undefined,
    addComment(issue, body, login, userType = "User") {
      const id = nextId++;
      comments.set(issue, [...(comments.get(issue) ?? []), { id, body, login, userType }]);
      return id;
    },
    writes: () => requests.filter((r) => r.method !== "GET" && r.status < 300),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return fake;
}
