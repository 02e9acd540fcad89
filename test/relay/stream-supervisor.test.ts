// The stream supervisor over real mTLS: a re-check ends streams revoked or deregistered elsewhere; shutdown ends all.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { createDiscoveryStreams } from "../../src/relay/discovery-streams.js";
import { createStreamSupervisor } from "../../src/relay/stream-supervisor.js";
import { certFor, rejectionsLogged, serveParts, statusOf, until, useRelayCleanup } from "./helpers.js";

const { defer, rawClient } = useRelayCleanup();

describe("stream supervisor", () => {
  it("a re-check ends the streams of a revoked certificate and of a cluster no longer registered, and leaves the others; closeAll ends the rest", async () => {
    const s = await serveParts((deps) => {
      const discovery = createDiscoveryStreams(deps);
      return { ...discovery, supervisor: createStreamSupervisor({ ...deps, isClusterRegistered: (c) => deps.registered.has(c), streams: [discovery] }) };
    }, { defer });
    const open = (cluster: string) => statusOf(rawClient(s.address, certFor(cluster, 3600_000, Date.now() - 1000)).pushDiscovery());
    const [a, b, g] = [open("alpha"), open("beta"), open("gamma")];
    await until(() => [...s.part.sessions.clusters()].length === 3, "three streams");
    await s.identities.revoke("alpha", "stolen");
    s.registered.delete("beta");
    await s.part.supervisor.revalidate();
    expect(await a).toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringMatching(/revoked .*\(stolen\)/) });
    expect(await b).toMatchObject({ code: grpc.status.PERMISSION_DENIED, details: expect.stringMatching(/no longer registered/) });
    await until(() => [...s.part.sessions.clusters()].join() === "gamma", "only gamma left");
    expect(rejectionsLogged(s, "certificate_revoked")).toHaveLength(1);
    s.part.supervisor.closeAll(grpc.status.UNAVAILABLE, "shutting down");
    expect(await g).toMatchObject({ code: grpc.status.UNAVAILABLE, details: "shutting down" });
  });
});
