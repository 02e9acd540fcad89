// The NACK carries the agent's own word on whether a failure passes without a person (#35 item 2):
// `transient` on each ApplyError travels over the real relay (TLS + gRPC), through the server's output
// delivery and the convergence tracker, and clusterSync prefers it to reading the messages. An older
// agent (no flag) is still judged by its messages.
import { describe, expect, it } from "vitest";
import type { OutputError, OutputNackEvent } from "../../src/relay/index.js";
import { clusterSync, createConvergenceTracker, nackTransient, type ClusterSyncFacts } from "../../src/server/index.js";
import { state, until, useRelayCleanup } from "./helpers.js";

const relay = useRelayCleanup();
const COMMIT = "c".repeat(40);

/** What the server shows for a cluster whose agent answered the commit's output with `errors`. */
async function syncAfterNack(errors: readonly OutputError[]) {
  const nacks: OutputNackEvent[] = [];
  const tracker = createConvergenceTracker();
  const { server, address } = await relay.server({ onNack: (e) => { nacks.push(e); tracker.nack(e); } });
  const client = relay.client(address, "alpha", { onOutput: () => ({ ack: false, errors }) });
  client.connect();
  await client.synced();
  tracker.published("alpha", 1, COMMIT, Date.now());
  server.publishOutput("alpha", { version: 1, sourceCommit: COMMIT, complete: true, resources: state({ "networking.istio.io/v1/VirtualService/bookinfo/reviews": { spec: {} } }) });
  await until(() => nacks.length > 0, "the NACK");
  const p = tracker.get(COMMIT)?.clusters.alpha;
  const nack = p?.nack;
  if (!p || !nack) throw new Error("no NACK recorded");
  const flag = nackTransient(nack.errors);
  const progress = { version: p.version, nack: nack.errors.map((e) => `${e.key}: ${e.message}`).join("; "), ...(flag === undefined ? {} : { nackTransient: flag }) };
  // The commit's output v1 was published to a connected agent, which NACKed it and runs nothing yet.
  const facts: ClusterSyncFacts = { commit: COMMIT, cutOff: null, agent: "connected", output: { version: 1, sourceCommit: COMMIT }, publishedVersion: 1, applied: undefined, progress, held: null };
  return { event: nacks[0]!, sync: clusterSync(facts) };
}

const KEY = "networking.istio.io/v1/VirtualService/bookinfo/reviews";

describe("the NACK's transient flag (relay → delivery → convergence → clusterSync)", () => {
  it("transient errors: not applied yet — retrying, even when the message says nothing the server recognises", async () => {
    const { event, sync } = await syncAfterNack([{ key: KEY, message: "the API server asked the agent to come back later", transient: true }]);
    expect(event.errors).toEqual([{ key: KEY, message: "the API server asked the agent to come back later", transient: true }]);
    expect(sync.state).toBe("not-applied");
    expect(sync.why).toBe("retrying");
    expect(sync.summary).toMatch(/^not applied yet — retrying \(/);
  });

  it("a 422 is refused, even when its text reads like a transient failure", async () => {
    const { event, sync } = await syncAfterNack([{ key: KEY, message: "HTTP 422: spec.http[0].timeout: invalid duration (request timed out parsing)", transient: false }]);
    expect(event.errors[0]?.transient).toBe(false);
    expect(sync.state).toBe("refused");
    expect(sync.summary).toContain("a person must act");
  });

  it("one error that needs a person makes the whole NACK refused", async () => {
    const { sync } = await syncAfterNack([
      { key: KEY, message: "HTTP 503: unavailable", transient: true },
      { key: "security.istio.io/v1/AuthorizationPolicy/bookinfo/allow", message: "HTTP 403: forbidden", transient: false },
    ]);
    expect(sync.state).toBe("refused");
  });

  it("an older agent (no flag): the server reads the messages", async () => {
    const transient = await syncAfterNack([{ key: KEY, message: "HTTP 503: service unavailable" }]);
    expect(transient.event.errors[0]).not.toHaveProperty("transient");
    expect(transient.sync.why).toBe("retrying");
    const refused = await syncAfterNack([{ key: KEY, message: "HTTP 422: invalid" }]);
    expect(refused.sync.state).toBe("refused");
  });
});
