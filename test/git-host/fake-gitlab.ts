/**
 * A local HTTP server that plays the GitLab REST API v4 for the calls `gitmesh diff --post gitlab`
 * makes. GitLab publishes no machine-readable description of these endpoints, so each request is
 * checked against the table below, transcribed from GitLab's API documentation (docs.gitlab.com/api,
 * section names given): method, path, the attributes each endpoint documents (required ones must be
 * present, undocumented ones are refused), and enum values. A request that does not match is
 * answered 400 and recorded in `violations` (tests assert it stays empty).
 *
 * | method | path | documentation section | attributes |
 * |---|---|---|---|
 * | GET    | /projects/:id/merge_requests/:merge_request_iid | Merge requests API › Get single MR | render_html, include_diverged_commits_count, include_rebase_in_progress |
 * | GET    | /projects/:id/repository/commits/:sha | Commits API › Get a single commit | stats |
 * | GET    | /user | Users API › Get the current user (for a token) | — |
 * | GET    | /projects/:id/merge_requests/:merge_request_iid/notes | Notes API › Merge requests › List all merge request notes | sort (asc, desc), order_by (created_at, updated_at) + pagination |
 * | POST   | /projects/:id/merge_requests/:merge_request_iid/notes | Notes API › Merge requests › Create new merge request note | body (required), created_at, internal, merge_request_diff_head_sha |
 * | PUT    | /projects/:id/merge_requests/:merge_request_iid/notes/:note_id | Notes API › Merge requests › Modify existing merge request note | body (required), confidential |
 * | DELETE | /projects/:id/merge_requests/:merge_request_iid/notes/:note_id | Notes API › Merge requests › Delete a merge request note | — |
 * | POST   | /projects/:id/statuses/:sha | Commits API › Set the pipeline status of a commit | state (required: pending, running, success, failed, canceled, skipped), ref, name, context, target_url, description, coverage, pipeline_id |
 *
 * Pagination attributes (REST API › Pagination › Offset-based pagination): page, per_page, pagination.
 * Authentication (REST API › Authentication › Personal/project access tokens): the PRIVATE-TOKEN header.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

interface Endpoint {
  readonly method: string;
  readonly path: RegExp;
  readonly name: string;
  readonly attributes: Readonly<Record<string, { required?: boolean; values?: readonly string[]; integer?: boolean }>>;
}

const PAGINATION = { page: { integer: true }, per_page: { integer: true }, pagination: { values: ["offset", "keyset"] } } as const;
const MR = String.raw`/api/v4/projects/([^/]+)/merge_requests/(\d+)`;
export const GITLAB_ENDPOINTS: readonly Endpoint[] = [
  { method: "GET", path: new RegExp(`^${MR}$`), name: "get-mr", attributes: { render_html: {}, include_diverged_commits_count: {}, include_rebase_in_progress: {} } },
  { method: "GET", path: /^\/api\/v4\/projects\/([^/]+)\/repository\/commits\/([^/]+)$/, name: "get-commit", attributes: { stats: {} } },
  { method: "GET", path: /^\/api\/v4\/user$/, name: "current-user", attributes: {} },
  { method: "GET", path: new RegExp(`^${MR}/notes$`), name: "list-notes", attributes: { sort: { values: ["asc", "desc"] }, order_by: { values: ["created_at", "updated_at"] }, ...PAGINATION } },
  { method: "POST", path: new RegExp(`^${MR}/notes$`), name: "create-note", attributes: { body: { required: true }, created_at: {}, internal: {}, merge_request_diff_head_sha: {} } },
  { method: "PUT", path: new RegExp(`^${MR}/notes/(\\d+)$`), name: "edit-note", attributes: { body: { required: true }, confidential: {} } },
  { method: "DELETE", path: new RegExp(`^${MR}/notes/(\\d+)$`), name: "delete-note", attributes: {} },
  {
    method: "POST",
    path: /^\/api\/v4\/projects\/([^/]+)\/statuses\/([0-9a-f]{40})$/,
    name: "set-status",
    attributes: {
      state: { required: true, values: ["pending", "running", "success", "failed", "canceled", "skipped"] },
      ref: {},
      name: {},
      context: {},
      target_url: {},
      description: {},
      coverage: {},
      pipeline_id: { integer: true },
    },
  },
];

export interface GitLabNote {
  id: number;
  body: string;
  authorId: number;
  system: boolean;
}

export interface GitLabStatus {
  readonly status: string;
  readonly name: string;
  readonly description: string | null;
}

export interface FakeGitLabOptions {
  readonly token: string;
  /** Project id as CI_PROJECT_ID gives it. */
  readonly projectId: string;
  /** Merge requests: iid → head sha. */
  readonly mergeRequests: Record<number, string>;
  readonly commits: readonly string[];
  /** The token's user. */
  readonly user: { readonly id: number; readonly username: string };
}

export interface FakeGitLab {
  /** CI_API_V4_URL. */
  readonly apiUrl: string;
  readonly requests: { method: string; path: string; endpoint: string; status: number }[];
  readonly violations: string[];
  readonly notes: Map<number, GitLabNote[]>;
  readonly statuses: Map<string, GitLabStatus[]>;
  fault: { status: number; message: string; when: (endpoint: string) => boolean } | undefined;
  addNote(iid: number, body: string, authorId: number): number;
  writes(): { method: string; path: string; endpoint: string; status: number }[];
  close(): Promise<void>;
}

export async function startFakeGitLab(options: FakeGitLabOptions): Promise<FakeGitLab> {
  const requests: FakeGitLab["requests"] = [];
  const violations: string[] = [];
  const notes = new Map<number, GitLabNote[]>();
  const statuses = new Map<string, GitLabStatus[]>();
  let nextId = 500;
  const author = (id: number) => ({ id, username: id === options.user.id ? options.user.username : `user${id}`, name: `User ${id}`, state: "active", avatar_url: null, web_url: `https://gitlab.example.com/user${id}` });
  const noteJson = (iid: number, n: GitLabNote) => ({
    id: n.id,
    type: null,
    body: n.body,
    attachment: null,
    author: author(n.authorId),
    created_at: "2026-11-23T00:00:00.000Z",
    updated_at: "2026-11-23T00:00:00.000Z",
    system: n.system,
    noteable_id: 9000 + iid,
    noteable_type: "MergeRequest",
    noteable_iid: iid,
    resolvable: false,
    confidential: false,
    internal: false,
  });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://x");
    const method = req.method ?? "GET";
    const raw = await new Promise<string>((resolve) => {
      let s = "";
      req.setEncoding("utf8");
      req.on("data", (c: string) => (s += c));
      req.on("end", () => resolve(s));
    });
    let endpointName = "?";
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      requests.push({ method, path: url.pathname, endpoint: endpointName, status });
      res.writeHead(status, body === undefined ? headers : { "content-type": "application/json", ...headers });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    const endpoint = GITLAB_ENDPOINTS.find((e) => e.method === method && e.path.test(url.pathname));
    if (!endpoint) {
      violations.push(`${method} ${url.pathname}: not an endpoint of the documented table`);
      return send(404, { message: "404 Not Found" });
    }
    endpointName = endpoint.name;
    const match = endpoint.path.exec(url.pathname)!;
    // Attributes: query string and JSON body (GitLab accepts either).
    const attributes: Record<string, unknown> = Object.fromEntries(url.searchParams);
    const problems: string[] = [];
    if (raw !== "") {
      if (!/^application\/json/.test(req.headers["content-type"] ?? "")) problems.push("a body that is not application/json");
      try {
        Object.assign(attributes, JSON.parse(raw) as Record<string, unknown>);
      } catch {
        problems.push("body is not JSON");
      }
    }
    for (const [name, rule] of Object.entries(endpoint.attributes)) {
      const v = attributes[name];
      if (v === undefined) {
        if (rule.required === true) problems.push(`missing required attribute ${name}`);
        continue;
      }
      const text = typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? String(v) : JSON.stringify(v);
      if (rule.values && !rule.values.includes(text)) problems.push(`${name}=${text} is not one of ${rule.values.join(", ")}`);
      if (rule.integer === true && !/^\d+$/.test(text)) problems.push(`${name} must be an integer`);
    }
    for (const name of Object.keys(attributes)) if (!(name in endpoint.attributes)) problems.push(`undocumented attribute ${name}`);
    if (problems.length > 0) {
      violations.push(`${method} ${url.pathname} (${endpoint.name}): ${problems.join("; ")}`);
      return send(400, { message: problems.join("; ") });
    }
    if (req.headers["private-token"] !== options.token) return send(401, { message: "401 Unauthorized" });
    if (fake.fault?.when(endpoint.name)) return send(fake.fault.status, { message: fake.fault.message });
    if (endpoint.name !== "current-user" && decodeURIComponent(match[1]!) !== options.projectId) return send(404, { message: "404 Project Not Found" });

    const iid = Number(match[2]);
    switch (endpoint.name) {
      case "get-mr": {
        const sha = options.mergeRequests[iid];
        if (sha === undefined) return send(404, { message: "404 Not found" });
        return send(200, { id: 9000 + iid, iid, project_id: Number(options.projectId) || 1, title: "mesh change", state: "opened", sha, source_branch: "feature", target_branch: "main", web_url: `https://gitlab.example.com/mesh/-/merge_requests/${iid}` });
      }
      case "get-commit": {
        const sha = decodeURIComponent(match[2]!);
        if (!options.commits.includes(sha)) return send(404, { message: "404 Commit Not Found" });
        return send(200, { id: sha, short_id: sha.slice(0, 8), title: "commit", message: "commit", parent_ids: [] });
      }
      case "current-user":
        return send(200, { ...author(options.user.id), bot: true });
      case "list-notes": {
        if (options.mergeRequests[iid] === undefined) return send(404, { message: "404 Not found" });
        const perPage = Number(url.searchParams.get("per_page") ?? 20);
        const page = Number(url.searchParams.get("page") ?? 1);
        const all = [...(notes.get(iid) ?? [])];
        if (url.searchParams.get("sort") === "desc") all.reverse();
        const slice = all.slice((page - 1) * perPage, page * perPage);
        const more = page * perPage < all.length;
        const headers: Record<string, string> = { "x-page": String(page), "x-per-page": String(perPage), "x-total": String(all.length), "x-total-pages": String(Math.max(1, Math.ceil(all.length / perPage))), "x-next-page": more ? String(page + 1) : "" };
        if (more) {
          const next = new URL(url);
          next.searchParams.set("page", String(page + 1));
          headers.link = `<${fake.apiUrl.replace(/\/api\/v4$/, "")}${next.pathname}${next.search}>; rel="next"`;
        }
        return send(200, slice.map((n) => noteJson(iid, n)), headers);
      }
      case "create-note": {
        if (options.mergeRequests[iid] === undefined) return send(404, { message: "404 Not found" });
        const n: GitLabNote = { id: nextId++, body: attributes.body as string, authorId: options.user.id, system: false };
        if (n.body.length > 1_000_000) return send(400, { message: "Note is too long" });
        notes.set(iid, [...(notes.get(iid) ?? []), n]);
        return send(201, noteJson(iid, n));
      }
      case "edit-note":
      case "delete-note": {
        const id = Number(match[3]);
        const list = notes.get(iid) ?? [];
        const n = list.find((x) => x.id === id);
        if (!n) return send(404, { message: "404 Note Not Found" });
        if (n.authorId !== options.user.id) return send(403, { message: "403 Forbidden" });
        if (endpoint.name === "delete-note") {
          list.splice(list.indexOf(n), 1);
          return send(204, undefined);
        }
        n.body = attributes.body as string;
        return send(200, noteJson(iid, n));
      }
      case "set-status": {
        const sha = match[2]!;
        if (!options.commits.includes(sha)) return send(404, { message: "404 Commit Not Found" });
        const s: GitLabStatus = { status: attributes.state as string, name: (attributes.name as string | undefined) ?? (attributes.context as string | undefined) ?? "default", description: (attributes.description as string | undefined) ?? null };
        statuses.set(sha, [...(statuses.get(sha) ?? []), s]);
        return send(201, { id: nextId++, sha, ref: null, ...s, target_url: null, created_at: "2026-11-23T00:00:00.000Z", started_at: null, finished_at: null, allow_failure: false, coverage: null, author: author(options.user.id) });
      }
      default:
        return send(500, { message: "unhandled" });
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      violations.push(`fake crashed: ${String(err)}`);
      res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const fake: FakeGitLab = {
    apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v4`,
    requests,
    violations,
    notes,
    statuses,
    fault: undefined,
    addNote(iid, body, authorId) {
      const id = nextId++;
      notes.set(iid, [...(notes.get(iid) ?? []), { id, body, authorId, system: false }]);
      return id;
    },
    writes: () => requests.filter((r) => r.method !== "GET" && r.status < 300),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return fake;
}
