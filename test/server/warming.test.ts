// Warming: after a restart that lost state, nothing is published until every registered cluster
// (skipWarming ones excepted) resent its discovery, or the window passes; inputsComplete() stays false
// while any registered cluster's discovery is missing (outputs then go out as incomplete: no prune).
import { describe, expect, it } from "vitest";
import { createWarmingGate } from "../../src/server/index.js";

const regs = (...names: string[]) => names.map((name) => ({ name, skipWarming: name.endsWith("-skip") }));

describe("warming gate", () => {
  it("opens at once when the store kept state", () => {
    const gate = createWarmingGate({ lostState: false, windowMs: 60_000, known: ["c1"] });
    const opened: string[] = [];
    gate.onWarmed(() => opened.push("warmed"));
    gate.setRegistered(regs("c1", "c2"));
    expect(gate.warming).toBe(false);
    expect(gate.status().reason).toBe("not-needed");
    expect(opened).toEqual(["warmed"]);
    // ... but c2's discovery is unknown: output may not be marked complete yet.
    expect(gate.inputsComplete()).toBe(false);
    gate.stop();
  });

  it("after lost state, waits for every registered cluster, not for skipWarming ones, then reports inputs complete", () => {
    const gate = createWarmingGate({ lostState: true, windowMs: 60_000, skip: ["c3"] });
    const events: string[] = [];
    gate.onWarmed(() => events.push("warmed"));
    gate.onInputsComplete(() => events.push("complete"));
    gate.setRegistered(regs("c1", "c2", "c3", "c4-skip"));
    expect(gate.warming).toBe(true);
    expect(gate.status().waitingFor).toEqual(["c1", "c2", "c3", "c4-skip"]);
    expect(gate.status().skipped).toEqual(["c3", "c4-skip"]);
    gate.discovered("c1");
    expect(gate.warming).toBe(true);
    gate.discovered("c2");
    expect(gate.warming).toBe(false);
    expect(gate.status().reason).toBe("discovery");
    expect(events).toEqual(["warmed"]);
    expect(gate.inputsComplete()).toBe(false);
    gate.discovered("c3");
    gate.discovered("c4-skip");
    expect(gate.inputsComplete()).toBe(true);
    expect(events).toEqual(["warmed", "complete"]);
    // A second report of the same cluster changes nothing.
    gate.discovered("c3");
    expect(events).toEqual(["warmed", "complete"]);
    gate.stop();
  });

  it("does not open before the registered clusters are known (no desired state yet)", () => {
    const gate = createWarmingGate({ lostState: true, windowMs: 60_000 });
    gate.discovered("c1");
    expect(gate.warming).toBe(true);
    expect(gate.inputsComplete()).toBe(false);
    gate.setRegistered(regs("c1"));
    expect(gate.warming).toBe(false);
    gate.stop();
  });

  it("opens when the window passes, with reason window and the clusters still missing", async () => {
    let t = 1_000;
    const gate = createWarmingGate({ lostState: true, windowMs: 30, now: () => t });
    gate.setRegistered(regs("c1", "c2"));
    gate.discovered("c1");
    const opened = new Promise<void>((resolve) => gate.onWarmed(resolve));
    t += 30;
    await opened;
    expect(gate.warming).toBe(false);
    expect(gate.status().reason).toBe("window");
    expect(gate.status().waitingFor).toEqual(["c2"]);
    expect(gate.inputsComplete()).toBe(false);
    gate.stop();
  });

  it("inputs complete turns false again when a new cluster is registered, and true when it reports", () => {
    const gate = createWarmingGate({ lostState: false, windowMs: 60_000, known: ["c1"] });
    const events: string[] = [];
    gate.onInputsComplete(() => events.push("complete"));
    gate.setRegistered(regs("c1"));
    expect(events).toEqual(["complete"]);
    gate.setRegistered(regs("c1", "c2"));
    expect(gate.inputsComplete()).toBe(false);
    gate.discovered("c2");
    expect(events).toEqual(["complete", "complete"]);
    gate.stop();
  });
});
