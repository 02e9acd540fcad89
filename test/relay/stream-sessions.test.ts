// The open streams of one kind, pure: one per cluster, a newer one replaces the older, release once.
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createMemoryLogger } from "../../src/core/index.js";
import { RELAY_METRICS } from "../../src/relay/index.js";
import { createRelayMetrics } from "../../src/relay/metrics.js";
import { createStreamSessions, type StreamSession } from "../../src/relay/stream-sessions.js";
import { metricValue } from "./helpers.js";

function session(cluster: string): StreamSession & { ended: unknown[] } {
  const ended: unknown[] = [];
  return { cluster, issuedAtMs: 1, closed: false, ended, call: { emit: (_e, err) => ended.push(err) > 0 } };
}

describe("stream sessions", () => {
  it("keep one stream per cluster: a newer one ends the older with ABORTED; each is released once; connect/disconnect follow the current one", async () => {
    const registry = new Registry();
    const released: StreamSession[] = [];
    const events: string[] = [];
    const sessions = createStreamSessions<StreamSession & { ended: unknown[] }>({
      kind: "pull",
      connected: createRelayMetrics(registry).pullConnected,
      logger: createMemoryLogger().logger,
      release: (s) => void released.push(s),
      onConnect: (c, k) => void events.push(`+${c}/${k}`),
      onDisconnect: (c, k) => void events.push(`-${c}/${k}`),
    });
    const first = session("alpha");
    const second = session("alpha");
    sessions.open(first);
    sessions.open(second);
    expect(first.closed).toBe(true);
    expect(first.ended).toMatchObject([{ code: 10, details: "replaced by a newer output stream of the same cluster" }]);
    expect(sessions.close(first)).toBe(false); // already replaced: released once, disconnects nothing
    expect(sessions.get("alpha")).toBe(second);
    expect(await metricValue(registry, RELAY_METRICS.pullClientsConnected, { cluster: "alpha" })).toBe(1);
    expect(sessions.close(second)).toBe(true);
    expect(sessions.close(second)).toBe(false);
    expect(released).toEqual([first, second]);
    expect(events).toEqual(["+alpha/pull", "+alpha/pull", "-alpha/pull"]);
    expect([...sessions.clusters()]).toEqual([]);
    expect(await metricValue(registry, RELAY_METRICS.pullClientsConnected, { cluster: "alpha" })).toBe(0);
  });
});
