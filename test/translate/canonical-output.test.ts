/**
 * Translators build their objects with keys already in canonical (code-unit) order, so that the
 * workspace stage's `canonicalObject` finds each rendered object canonical and returns it as is: a
 * translator that emits one field out of order makes it copy that object and every parent of it, for
 * every object of that kind in every cluster (on the 100-cluster fleet this was 600 MB of allocation
 * per translation, a quarter of the diff's, #20). The output is canonical either way — this test
 * guards the cost, not the bytes: it lists the paths a translator emits out of order. It covers the
 * objects a fleet has by the thousand (the generated fleet of the benchmarks); rarer objects (Lifecycle,
 * EnvoyFilters, JWT) may still be copied, at a cost in proportion to their number.
 */
import { describe, expect, it } from "vitest";
import { generateFleet } from "../../bench/fleet/generate.js";
import { FLEET_PRESETS } from "../../bench/fleet/presets.js";
import { loadDesiredState } from "../../src/config/index.js";
import { canonicalObject, KIND_TRANSLATORS, translateAll, type KindTranslator } from "../../src/translate/index.js";

/** Paths (kind.spec.a[].b) of objects whose keys are out of order or hold `undefined`. */
function outOfOrder(value: unknown, path: string, top: boolean, found: Set<string>): void {
  if (typeof value !== "object" || value === null) return;
  if (Array.isArray(value)) {
    for (const v of value) outOfOrder(v, `${path}[]`, false, found);
    return;
  }
  const keys = Object.keys(value);
  const rec = value as Record<string, unknown>;
  const body = top ? keys.filter((k) => !["apiVersion", "kind", "metadata"].includes(k)) : keys;
  if (body.some((k, i) => rec[k] === undefined || (i > 0 && body[i - 1]! > k))) found.add(`${path} {${keys.join(",")}}`);
  for (const k of keys) outOfOrder(rec[k], `${path}.${k}`, false, found);
}

function watched(found: Set<string>): KindTranslator[] {
  return KIND_TRANSLATORS.map((t) => ({
    name: t.name,
    translate: (ctx) => {
      const out = t.translate(ctx);
      for (const { resource } of out.resources) {
        if (canonicalObject(resource) !== resource) outOfOrder(resource, `${t.name}: ${resource.kind}`, true, found);
      }
      return out;
    },
  }));
}

describe("translators emit canonical objects", () => {
  it("on the generated fleet (every kind the benchmarks translate at scale)", () => {
    const fleet = generateFleet(FLEET_PRESETS.small);
    const found = new Set<string>();
    const { state } = loadDesiredState(fleet.files);
    const result = translateAll(state, fleet.discovery, { translators: watched(found) });
    expect(result.clusters.size).toBeGreaterThan(0);
    expect([...found]).toEqual([]);
  });

});
