/**
 * Git over HTTP gives up on a server that stops answering (http-client.ts), through the real entry points:
 * the source's sync (what git polling runs) and the audit writer. Servers here accept the connection and
 * then say nothing, or start an answer and stall, as a hung proxy or a half-open connection would.
 */
import { createServer as createHttpServer, type ServerResponse } from "node:http";
import { createServer as createTcpServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { createAuditWriter, createGitSource, withIdleTimeout } from "../../src/git-sync/index.js";
import { useTempDirs } from "../helpers/tmp.js";
import { recordingLoader } from "./fixtures.js";

const tmp = useTempDirs("gitsync-idle-");
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

function track(server: Server, held: Set<Socket>): void {
  server.on("connection", (s: Socket) => {
    held.add(s);
    s.on("error", () => {});
    s.on("close", () => held.delete(s));
  });
  closers.push(() => {
    for (const s of held) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${String((server.address() as { port: number }).port)}/mesh.git`;
}

/** Accepts connections and never sends a byte. */
async function silentServer(): Promise<{ url: string; connections: () => number }> {
  let n = 0;
  const server = createTcpServer(() => {
    n++;
  });
  track(server, new Set());
  return { url: await listen(server), connections: () => n };
}

/** Answers the ref advertisement's status line and first bytes, then stalls. */
async function stallingServer(): Promise<string> {
  const stalled: ServerResponse[] = [];
  const server = createHttpServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/x-git-upload-pack-advertisement" });
    res.write("001e# service=git-upload-pack\n");
    stalled.push(res);
  });
  track(server, new Set());
  return listen(server);
}

describe("Git HTTP: a server that stops answering", () => {
  it("a sync from a server that accepts the connection and never answers fails with what happened, instead of hanging", async () => {
    const silent = await silentServer();
    const mem = createMemoryLogger("git-sync");
    const source = createGitSource({ location: { kind: "remote", url: silent.url, cacheDir: tmp() }, loader: recordingLoader(), logger: mem.logger, http: withIdleTimeout(300), retry: { attempts: 1 } });
    await expect(source.sync()).rejects.toThrow(/the Git server sent nothing for 300 ms \(http:\/\/127\.0\.0\.1:\d+\/mesh\.git\/info\/refs\)/);
    expect(silent.connections()).toBeGreaterThan(0);
  });

  it("a sync whose answer starts and then stalls fails the same way", async () => {
    const url = await stallingServer();
    const source = createGitSource({ location: { kind: "remote", url, cacheDir: tmp() }, loader: recordingLoader(), logger: createMemoryLogger("git-sync").logger, http: withIdleTimeout(300), retry: { attempts: 1 } });
    await expect(source.sync()).rejects.toThrow(/sent nothing for 300 ms/);
  });

  it("an audit write to a server that never answers fails (and is retried with the next trigger) instead of holding the audit chain", async () => {
    const silent = await silentServer();
    const writer = createAuditWriter({ target: { kind: "remote", url: silent.url, cacheDir: tmp() }, logger: createMemoryLogger("audit").logger, http: withIdleTimeout(300), retry: { attempts: 1 } });
    await expect(writer.write({ clusters: new Map(), discovery: new Map(), sourceCommit: "0".repeat(40), sourceRef: "refs/heads/main", timestamp: 1_700_000_000 })).rejects.toThrow(/sent nothing for 300 ms/);
  });
});
