/**
 * `npm run bench -- pipeline`: full translation of the `medium` fleet through the pipeline on
 * BullMQ + Redis (a private redis-server spawned here) against the same pipeline in-process
 * (standalone) and a plain translateAll, in the same run. Also: sizes of the stored values (JSON
 * vs compressed) and a one-policy change through the queue.
 */
import { allObjects, loadDesiredState, updateDesiredState } from "../../src/config/index.js";
import type { DiscoverySnapshot } from "../../src/discovery/index.js";
import { createPipeline, type Pipeline } from "../../src/queue/index.js";
import { encodeValue } from "../../src/store/index.js";
import { translateAll, type DiscoveryMap } from "../../src/translate/index.js";
import { generateFleet } from "../fleet/generate.js";
import { FLEET_PRESETS } from "../fleet/presets.js";
import { MB, median, round, time, type Benchmark, type Figure } from "../harness.js";
// The tests' private redis-server helper (free port, no persistence, killed on exit).
import { startRedis } from "../../test/helpers/redis.js";

export const benchmark: Benchmark = {
  name: "pipeline",
  description: "medium fleet through the pipeline: BullMQ+Redis vs in-process (standalone) vs translateAll; stored value sizes",
  async run({ runs, log }) {
    const fleet = generateFleet(FLEET_PRESETS.medium);
    const state = loadDesiredState(fleet.files).state;
    const discovery = fleet.discovery as unknown as Map<string, DiscoverySnapshot>;
    const server = await startRedis();
    log("redis-server started");
    const figures: Figure[] = [];
    try {
      const fresh = () => ({ objects: [...allObjects(state)] });
      const direct = await time(() => translateAll(fresh(), discovery as unknown as DiscoveryMap));
      let resources = 0;
      for (const c of direct.result.clusters.values()) resources += c.resources.length;
      log(`translateAll: ${round(direct.ms)} ms, ${resources} resources`);

      const through = async (redis: string | undefined, prefix: string) => {
        let outputs = 0;
        const p: Pipeline = await createPipeline({ ...(redis === undefined ? {} : { redis }), prefix, onOutput: () => {
          outputs++;
        }, concurrency: { workspace: 2, cluster: 2 } });
        const full = await time(async () => {
          for (const [c, s] of discovery) await p.setDiscovery(c, s);
          await p.setDesiredState({ commit: "c1", ref: "main", state, changedKeys: [] });
          await p.idle(600_000);
        });
        const change = fleet.onePolicyChange;
        const next = updateDesiredState(state, [change.after], []);
        const one = await time(async () => {
          await p.setDesiredState({ commit: "c2", ref: "main", state: next.state, changedKeys: next.changedKeys });
          await p.idle(600_000);
        });
        await p.close();
        return { full: full.ms, one: one.ms, outputs };
      };
      const inproc: { full: number; one: number }[] = [];
      const queued: { full: number; one: number }[] = [];
      for (let i = 0; i < Math.max(1, Math.min(runs, 3)); i++) {
        inproc.push(await through(undefined, `s${i}:`));
        queued.push(await through(server.url, `r${i}:`));
        log(`run ${i + 1}: in-process ${round(inproc[i]!.full)} ms, BullMQ+Redis ${round(queued[i]!.full)} ms`);
      }
      const inFull = median(inproc.map((r) => r.full));
      const qFull = median(queued.map((r) => r.full));

      // what the store holds: JSON vs encoded
      const desiredJson = Buffer.byteLength(JSON.stringify(state));
      const desiredEnc = encodeValue(state).length;
      const enc = await time(() => encodeValue(state));
      let outJson = 0;
      let outEnc = 0;
      for (const c of direct.result.clusters.values()) {
        outJson += Buffer.byteLength(JSON.stringify(c.resources));
        outEnc += encodeValue(c.resources).length;
      }

      figures.push(
        { label: "medium: resources rendered", value: resources, unit: "objects" },
        { label: "medium: translateAll (baseline, same run)", value: round(direct.ms), unit: "ms" },
        { label: "medium: full translation through pipeline in-process (standalone)", value: round(inFull), unit: "ms" },
        { label: "medium: full translation through BullMQ + Redis", value: round(qFull), unit: "ms" },
        { label: "medium: BullMQ+Redis / in-process", value: round(qFull / inFull, 2), unit: "x" },
        { label: "medium: in-process pipeline / translateAll", value: round(inFull / direct.ms, 2), unit: "x" },
        { label: "medium: one-policy change, in-process (debounce 50 ms incl.)", value: round(median(inproc.map((r) => r.one))), unit: "ms" },
        { label: "medium: one-policy change, BullMQ+Redis (debounce 50 ms incl.)", value: round(median(queued.map((r) => r.one))), unit: "ms" },
        { label: "medium: desired state JSON", value: round(desiredJson / MB, 2), unit: "MB" },
        { label: "medium: desired state stored (deflate level 1)", value: round(desiredEnc / MB, 2), unit: "MB" },
        { label: "medium: desired state encode time", value: round(enc.ms), unit: "ms" },
        { label: "medium: all outputs JSON", value: round(outJson / MB, 2), unit: "MB" },
        { label: "medium: all outputs stored (deflate level 1)", value: round(outEnc / MB, 2), unit: "MB" },
      );
    } finally {
      await server.stop();
    }
    return figures;
  },
};
