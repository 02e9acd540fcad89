/**
 * `gitmesh worker` stopped with SIGTERM while it holds a job (issue #17: "graceful shutdown — finish or
 * hand back the job in hand"). A server pipeline that translates nothing (`server --workers 0`) queues
 * the jobs on a real Redis; the worker is a real process. It is frozen (SIGSTOP) the moment it holds a
 * job, sent SIGTERM while frozen, then let go (SIGCONT): the signal reaches it with the job in hand.
 *
 * - Within its shutdown timeout it finishes that job (completed: neither running nor queued again, no
 *   failure) and exits 0 without taking another; a second worker then converges the rest.
 * - With no shutdown time at all (--shutdown-timeout 0) it exits at once; the job in hand is finished
 *   or goes back to the queue when its lock expires, and a second worker converges everything either
 *   way: nothing is lost.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPipeline, type Pipeline } from "../../src/queue/index.js";
import { freePort } from "../helpers/ports.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { faultInjectionChange, loadFixture, outputSink, reference, until, type Fixture } from "../queue/fixture.js";

let redis: TestRedis;
let client: Redis;
let fx: Fixture;
const open: Pipeline[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url);
  fx = await loadFixture();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const p of open) await p.close().catch(() => undefined);
  client.disconnect();
  await redis.stop();
});

interface WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
}

async function startWorker(prefix: string, args: readonly string[]): Promise<WorkerProcess> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ["bin/gitmesh.js", "worker", "--redis-url", redis.url, "--concurrency", "1", "--http-host", "127.0.0.1", "--http-port", String(port), "--log-format", "json", ...args],
    { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GITMESH_REDIS_PREFIX: prefix } },
  );
  children.push(child);
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  await until(async () => (await fetch(`http://127.0.0.1:${String(port)}/readyz`).catch(() => undefined))?.ok === true, 60_000, "worker ready");
  return { child, exited, output: () => out };
}

const TYPES = ["workspace", "cluster"] as const;
/** Ids of the jobs BullMQ holds as running, as `type:id`. */
async function activeJobs(prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (const t of TYPES) for (const id of await client.lrange(`${prefix}:bull:${t}:active`, 0, -1)) ids.push(`${t}:${id}`);
  return ids;
}
async function waitingJobs(prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (const t of TYPES) for (const id of await client.lrange(`${prefix}:bull:${t}:wait`, 0, -1)) ids.push(`${t}:${id}`);
  return ids;
}

/**
 * Pushes commits until the worker is caught holding a job: frozen then, it cannot finish it. Returns the
 * jobs it holds and the newest commit's state.
 */
async function freezeHoldingAJob(prefix: string, server: Pipeline, worker: WorkerProcess) {
  let state = fx.state;
  for (let attempt = 1; attempt <= 10; attempt++) {
    const next = faultInjectionChange(fx, `${String(attempt + 2)}s`);
    state = next.state;
    await server.setDesiredState({ commit: `c${String(attempt)}`, ref: "main", state: next.state, changedKeys: next.changedKeys });
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if ((await activeJobs(prefix)).length > 0) {
        worker.child.kill("SIGSTOP");
        await new Promise((r) => setTimeout(r, 50));
        const held = await activeJobs(prefix);
        if (held.length > 0) return { held, state };
        worker.child.kill("SIGCONT");
      }
      if ((await waitingJobs(prefix)).length === 0 && (await activeJobs(prefix)).length === 0 && (await server.depth()).workspace + (await server.depth()).cluster === 0) break;
    }
  }
  throw new Error("the worker was never caught holding a job");
}

async function setUp(prefix: string) {
  const sink = outputSink();
  const server = await createPipeline({ redis: redis.url, prefix: `${prefix}:`, work: false, onOutput: sink.onOutput, backoffMs: 20 });
  open.push(server);
  for (const [cluster, snap] of fx.discovery) await server.setDiscovery(cluster, snap);
  await server.setDesiredState({ commit: "c0", ref: "main", state: fx.state, changedKeys: [] });
  return { server, sink };
}

/** A second worker (a pipeline in this process) converges what is left; every job ends. */
async function convergeWithAnotherWorker(prefix: string, server: Pipeline, sink: ReturnType<typeof outputSink>, state: Fixture["state"]) {
  const rescuer = await createPipeline({ redis: redis.url, prefix: `${prefix}:`, role: "worker", backoffMs: 20, jobLockMs: 2_000 });
  open.push(rescuer);
  const ref = reference(state, fx.discovery);
  await until(() => [...ref].every(([c, json]) => sink.json().get(c) === json), 60_000, "the newest commit's outputs");
  await until(async () => (await activeJobs(prefix)).length === 0 && (await waitingJobs(prefix)).length === 0, 60_000, "no job left running or queued");
  expect(sink.json()).toEqual(ref);
}

describe("gitmesh worker: SIGTERM with a job in hand", () => {
  it("finishes the job in hand within the shutdown timeout, takes no other, exits 0", async () => {
    const prefix = "finish";
    const { server, sink } = await setUp(prefix);
    // A long job lock: a job it let go without finishing would stay "running" for the whole test.
    const worker = await startWorker(prefix, ["--job-lock", "300", "--shutdown-timeout", "60"]);
    const { held, state } = await freezeHoldingAJob(prefix, server, worker);

    worker.child.kill("SIGTERM");
    worker.child.kill("SIGCONT");
    expect(await worker.exited).toBe(0);
    const out = worker.output();
    expect(out).toContain('"msg":"stopping: finishing the jobs in hand"');
    expect(out).toContain('"msg":"worker stopped"');
    expect(out).not.toContain("jobs still running at the end of the shutdown grace period");
    expect(out).not.toContain('"msg":"job failed"');
    // The jobs it held are done: none is still active (a job let go unfinished would stay active, its lock
    // held, until stalled-job recovery). Done means completed (removed), or handed back to wait for a busy
    // unit (delayed); the pipeline may also have enqueued the same unit again under the same id since.
    const active = await activeJobs(prefix);
    for (const job of held) expect(active, job).not.toContain(job);

    await convergeWithAnotherWorker(prefix, server, sink, state);
  }, 240_000);

  it("with no shutdown time, exits at once; the job in hand is finished or handed back, and nothing is lost", async () => {
    const prefix = "handback";
    const { server, sink } = await setUp(prefix);
    const worker = await startWorker(prefix, ["--job-lock", "2", "--shutdown-timeout", "0"]);
    const { state } = await freezeHoldingAJob(prefix, server, worker);

    worker.child.kill("SIGTERM");
    worker.child.kill("SIGCONT");
    // It ends by itself (BullMQ, its job's connection cut, would otherwise hold it until SIGKILL).
    expect(await worker.exited).toBe(0);
    expect(worker.output()).toContain('"msg":"worker stopped"');

    // Whatever it held ends: run to the end by a second worker if it was handed back (stalled-job
    // recovery after the 2 s lock), and the fleet reaches the newest commit's reference outputs.
    await convergeWithAnotherWorker(prefix, server, sink, state);
  }, 240_000);
});
