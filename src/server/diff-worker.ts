/**
 * Entry of the worker thread that renders `/api/diff` (started by diff-service.ts). A large fleet's
 * diff is seconds of synchronous translation: on the server's own thread it stopped the relay, the
 * webhooks and the health checks for as long. The worker keeps the discovery snapshots it was sent,
 * by checksum, so a later diff is preceded only by the clusters whose discovery changed.
 */
import { parentPort } from "node:worker_threads";
import type { DiscoverySnapshot } from "../discovery/index.js";
import { renderDiffReport, type DiffAnswer, type DiffMessage } from "./diff-render.js";

const port = parentPort;
if (port === null) throw new Error("diff-worker.ts runs as a worker thread (diff-service.ts starts it)");

const held = new Map<string, { readonly checksum: string; readonly snapshot: DiscoverySnapshot }>();

port.on("message", (message: DiffMessage) => {
  if (message.kind === "snapshot") {
    held.set(message.cluster, { checksum: message.checksum, snapshot: message.snapshot });
    return;
  }
  let answer: DiffAnswer;
  try {
    const wanted = new Map(message.clusters);
    for (const cluster of [...held.keys()]) if (!wanted.has(cluster)) held.delete(cluster);
    const discovery = new Map<string, DiscoverySnapshot>();
    for (const [cluster, checksum] of message.clusters) {
      const h = held.get(cluster);
      // The main thread tracks what it sent; a mismatch is a bug there, never a diff against stale discovery.
      if (h?.checksum !== checksum) throw new Error(`diff worker: discovery of cluster ${cluster} is ${h === undefined ? "missing" : `at ${h.checksum}`}, expected ${checksum}`);
      discovery.set(cluster, h.snapshot);
    }
    answer = { id: message.id, report: renderDiffReport(message.base, message.head, discovery, message.record) };
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    answer = { id: message.id, error: { name: e.name, message: e.message, ...(e.stack === undefined ? {} : { stack: e.stack }) } };
  }
  port.postMessage(answer);
});
