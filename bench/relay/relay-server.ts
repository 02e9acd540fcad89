// Child process of the relay bench: one relay server, so that its memory and CPU are measured without
// the clients. argv: PKI (base64 JSON), port. GITMESH_BENCH_RELAY_ADMISSION_RATE / _BURST: admission
// (default: the production default). Messages: {type:"stats"} → ServerStats; {type:"snapshot", path}
// writes a heap snapshot (after GC) for bench/relay/heap-diff.ts; {type:"profile", path} starts a CPU
// profile, {type:"profile"} again writes it to that path (for bench/relay/profile-summary.ts).
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { writeHeapSnapshot } from "node:v8";
import { Registry } from "prom-client";
import { silentLogger } from "../../src/core/index.js";
import type { RelayPki } from "../../src/relay/index.js";
import { memoryAfterGc, openFileLimit } from "./spawn.js";

/**
 * The relay as production runs it: compiled JavaScript (.build/, `node scripts/build-cli.mjs`), when that
 * is newer than every .ts file of src/relay; else the sources through tsx, whose keepNames (`__name(fn, …)`
 * on every closure) puts ~11 closures per agent in dictionary mode: 2.8 KiB of heap per agent that a
 * compiled server does not have (#39). GITMESH_BENCH_RELAY_SOURCE=tsx forces the sources.
 */
function compiledIsFresh(): boolean {
  try {
    const built = statSync(new URL("../../.build/.stamp", import.meta.url)).mtimeMs;
    const dir = new URL("../../src/relay/", import.meta.url);
    return readdirSync(dir, { recursive: true })
      .filter((f) => String(f).endsWith(".ts"))
      .every((f) => statSync(new URL(String(f), dir)).mtimeMs <= built);
  } catch {
    return false;
  }
}
const compiled = process.env.GITMESH_BENCH_RELAY_SOURCE !== "tsx" && compiledIsFresh();
const { createRelayServer } = (compiled ? await import(new URL("../../.build/relay/index.js", import.meta.url).href) : await import("../../src/relay/index.js")) as typeof import("../../src/relay/index.js");
const [pkiJson, portArg] = process.argv.slice(2);
const pki = JSON.parse(Buffer.from(pkiJson!, "base64").toString()) as RelayPki;
const rate = process.env.GITMESH_BENCH_RELAY_ADMISSION_RATE;
const burst = process.env.GITMESH_BENCH_RELAY_ADMISSION_BURST;
const admission = { ...(rate ? { ratePerSecond: Number(rate) } : {}), ...(burst ? { burst: Number(burst) } : {}) };
const server = createRelayServer({ pki, token: "bench-token", isClusterRegistered: () => true, logger: silentLogger, registry: new Registry(), host: "127.0.0.1", port: Number(portArg), admission });
const port = await server.start();
process.send?.({ type: "ready", port, openFiles: openFileLimit(), compiled });
let profiling: { session: Session; path: string } | undefined;
async function profile(path: string | undefined): Promise<string | undefined> {
  if (!profiling) {
    const session = new Session();
    session.connect();
    await session.post("Profiler.enable");
    await session.post("Profiler.setSamplingInterval", { interval: 200 });
    await session.post("Profiler.start");
    profiling = { session, path: path ?? "relay.cpuprofile" };
    return undefined;
  }
  const { profile } = await profiling.session.post("Profiler.stop");
  writeFileSync(profiling.path, JSON.stringify(profile));
  profiling.session.disconnect();
  const written = profiling.path;
  profiling = undefined;
  return written;
}
process.on("message", (m: { type: string; path?: string }) => {
  if (m.type === "profile") {
    void profile(m.path).then((path) => process.send?.({ type: "profile", path }));
    return;
  }
  if (m.type === "stats") {
    const c = server.connectedClusters();
    process.send?.({ ...memoryAfterGc(), connected: c.length, warmed: c.filter((x) => x.warmed && x.pull).length });
  } else if (m.type === "snapshot") {
    memoryAfterGc();
    process.send?.({ type: "snapshot", path: writeHeapSnapshot(m.path) });
  }
});
