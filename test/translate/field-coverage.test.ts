// Issue #36 item 3, "no silent difference, as a rule": every field of every supported kind (walked
// from the generated schemas to its leaves) is in test/fixtures/field-registry.json with
// how it is handled, and each claim is checked against the golden cases:
//
//   "translated <case>"        the golden case exists, its input sets the field, and removing the
//                              field from that input changes the rendered output or diagnostics
//                              (its output.yaml shows the effect; the golden test pins it)
//   "reported <CODE> <case>"   the golden case sets the field and its translation emits CODE about
//                              that field (or the object holding it) on an object of that kind
//   "unproven <case>"          the golden sets the field, but removing it there changes nothing and
//                              nothing reports it: a default value in that golden, or a silent drop —
//                              the work list of issue #36 item 3 (the test fails once it has an effect)
//   "gap"                      no golden case sets the field yet: the test fails as soon as one does,
//                              so the entry is reclassified with its evidence (gaps only shrink)
//
// A key ending in `.**` covers every leaf under it (pass-through subtrees such as an
// IstioLifecycleManager's `istioOperatorSpec`). A field in no entry fails, and so does an entry that
// names no field. UPDATE_GOLDEN=1 adds entries for fields the registry lacks, classified from the
// goldens' evidence (exact diagnostic, else use, else gap); it never changes an existing entry.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Diagnostic } from "../../src/core/index.js";
import { translateAll, type InputObject } from "../../src/translate/index.js";
import { fieldOfPointer, fieldsUsed, leafFields, supportedKinds, under, withoutField } from "./field-coverage.js";
import { caseNames, FIXTURES, loadCase, renderOutput, runCase, type GoldenCase } from "./golden.js";
import { GENERATIVE_TEST_TIMEOUT_MS } from "../helpers/random.js";

const UPDATE = process.env.UPDATE_GOLDEN === "1";
const REGISTRY = join(FIXTURES, "../field-registry.json");

interface Evidence {
  /** Fields (leaf or not) each case's input sets. */
  readonly used: ReadonlyMap<string, ReadonlySet<string>>;
  /** Per case: diagnostics with the field they are about (object kind + path). */
  readonly reported: ReadonlyMap<string, readonly { readonly code: string; readonly field: string }[]>;
}

function gatherEvidence(): Evidence {
  const used = new Map<string, Set<string>>();
  const reported = new Map<string, { code: string; field: string }[]>();
  for (const name of caseNames()) {
    const c = loadCase(name);
    const fields = new Set<string>();
    for (const f of Object.values(c.desired.files)) for (const o of f.objects) if (o.spec !== undefined) for (const x of fieldsUsed(o.kind, o.spec)) fields.add(x);
    used.set(name, fields);
    const { result } = runCase(c);
    const diags: Diagnostic[] = [...c.inputDiagnostics, ...result.diagnostics];
    reported.set(
      name,
      diags.flatMap((d) => {
        const kind = d.object?.kind;
        if (kind === undefined || d.path === undefined || !supportedKinds().includes(kind)) return [];
        const field = fieldOfPointer(kind, d.path);
        return field === undefined ? [] : [{ code: d.code, field }];
      }),
    );
  }
  return { used, reported };
}

type Claim =
  | { readonly how: "translated"; readonly case: string }
  | { readonly how: "reported"; readonly code: string; readonly case: string }
  | { readonly how: "unproven"; readonly case: string }
  | { readonly how: "gap" };

/** Everything a translation says: the rendered objects and each diagnostic's code, path and message (not its line). */
function fingerprint(objects: readonly InputObject[], c: GoldenCase): string {
  const r = translateAll({ objects }, c.discovery);
  return renderOutput(r) + JSON.stringify(r.diagnostics.map((d) => [d.code, d.object?.kind, d.path, d.message]));
}

const loaded = new Map<string, { readonly c: GoldenCase; readonly objects: readonly InputObject[]; readonly base: string }>();
/** Whether removing the field from the case's objects of its kind changes the translation. */
function hasEffect(name: string, field: string): boolean {
  let e = loaded.get(name);
  if (e === undefined) {
    const c = loadCase(name);
    const objects = Object.values(c.desired.files).flatMap((f) => f.objects);
    e = { c, objects, base: fingerprint(objects, c) };
    loaded.set(name, e);
  }
  const kind = field.slice(0, field.indexOf("."));
  // A fresh object without the loader's content digest, so that no index built from the original is reused.
  const mutated = e.objects.map((o) => (o.kind === kind && o.spec !== undefined ? { ...o, digest: undefined, spec: withoutField(o.spec, field) } : o));
  return fingerprint(mutated, e.c) !== e.base;
}

function parseClaim(text: string): Claim | string {
  const parts = text.split(" ");
  if (parts[0] === "translated" && parts.length === 2) return { how: "translated", case: parts[1]! };
  if (parts[0] === "reported" && parts.length === 3) return { how: "reported", code: parts[1]!, case: parts[2]! };
  if (parts[0] === "unproven" && parts.length === 2) return { how: "unproven", case: parts[1]! };
  if (text === "gap") return { how: "gap" };
  return `"${text}" is not "translated <case>", "reported <CODE> <case>", "unproven <case>" or "gap"`;
}

/** The registry entry that covers a leaf: the exact key, else the longest `.**` prefix. */
function entryOf(registry: Readonly<Record<string, string>>, leaf: string): string | undefined {
  if (leaf in registry) return leaf;
  let best: string | undefined;
  for (const k of Object.keys(registry)) if (k.endsWith(".**") && under(leaf, k.slice(0, -3)) && (best === undefined || k.length > best.length)) best = k;
  return best;
}

/** The fields a registry key stands for: the leaf itself, or (for `x.**`) x. */
function subject(key: string): string {
  return key.endsWith(".**") ? key.slice(0, -3) : key;
}

/** Whether a case sets the field (for a subtree: any field under it). */
function caseUses(ev: Evidence, name: string, field: string, subtree: boolean): boolean {
  const used = ev.used.get(name);
  if (used === undefined) return false;
  if (used.has(field)) return true;
  return subtree && [...used].some((u) => under(u, field));
}

function classify(ev: Evidence, leaf: string): string {
  const names = [...ev.used.keys()].filter((n) => caseUses(ev, n, leaf, false));
  const about = (n: string) => (ev.reported.get(n) ?? []).filter((r) => under(leaf, r.field) && r.field.includes(".spec."));
  // Used with no diagnostic about it (or the object holding it) and an effect when removed: translated.
  // Else the diagnostic about the field itself, else one about the object holding it.
  const shown = names.find((n) => about(n).length === 0 && hasEffect(n, leaf));
  if (shown !== undefined) return `translated ${shown}`;
  for (const exact of [true, false]) {
    for (const n of names) {
      const r = about(n).find((x) => !exact || x.field === leaf);
      if (r !== undefined) return `reported ${r.code} ${n}`;
    }
  }
  return names[0] === undefined ? "gap" : `unproven ${names[0]}`;
}

describe("every field of every supported kind is translated or reported (issue #36)", () => {
  const leaves = supportedKinds().flatMap(leafFields);
  const evidence = gatherEvidence();

  if (UPDATE) {
    const old = existsSync(REGISTRY) ? (JSON.parse(readFileSync(REGISTRY, "utf8")) as Record<string, string>) : {};
    const next: Record<string, string> = { ...old };
    for (const leaf of leaves) if (entryOf(next, leaf) === undefined) next[leaf] = classify(evidence, leaf);
    const sorted = Object.fromEntries(Object.entries(next).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    writeFileSync(REGISTRY, `${JSON.stringify(sorted, null, 1)}\n`);
  }
  const registry = existsSync(REGISTRY) ? (JSON.parse(readFileSync(REGISTRY, "utf8")) as Record<string, string>) : {};

  it("walks the schemas to well over a thousand leaf fields of 30 kinds", () => {
    expect(supportedKinds()).toHaveLength(30);
    expect(leaves.length).toBeGreaterThan(1000);
    expect(leaves).toContain("JWTPolicy.spec.config.providers.*.remote.cacheDuration");
    expect(leaves).toContain("RouteTable.spec.http[].matchers[].uri.prefix");
  });

  it("has an entry for every field, and no entry that names no field", () => {
    expect(leaves.filter((l) => entryOf(registry, l) === undefined), `fields missing from ${REGISTRY} (UPDATE_GOLDEN=1 adds them; review)`).toEqual([]);
    const stale = Object.keys(registry).filter((k) => (k.endsWith(".**") ? !leaves.some((l) => under(l, subject(k))) : !leaves.includes(k)));
    expect(stale, "registry entries for fields the schemas do not have").toEqual([]);
  });

  // Re-translates a golden once per translated field (hundreds of translations): a generative budget.
  it("proves every claim: the named golden sets the field, a translated field has an effect there, a reported field's diagnostic is emitted", { timeout: GENERATIVE_TEST_TIMEOUT_MS }, () => {
    const broken: string[] = [];
    for (const [key, text] of Object.entries(registry)) {
      const claim = parseClaim(text);
      if (typeof claim === "string") {
        broken.push(`${key}: ${claim}`);
        continue;
      }
      const field = subject(key);
      const subtree = key.endsWith(".**");
      if (claim.how === "gap") {
        const users = [...evidence.used.keys()].filter((n) => caseUses(evidence, n, field, subtree));
        if (users.length > 0) broken.push(`${key}: recorded as a gap, but golden ${users.join(", ")} sets it: record how it is handled (${classify(evidence, field)}?)`);
        continue;
      }
      if (!evidence.used.has(claim.case)) {
        broken.push(`${key}: golden case "${claim.case}" does not exist`);
        continue;
      }
      if (!caseUses(evidence, claim.case, field, subtree)) {
        broken.push(`${key}: golden case "${claim.case}" does not set the field`);
        continue;
      }
      if (claim.how === "translated" && !hasEffect(claim.case, field)) broken.push(`${key}: removing it from golden case "${claim.case}" changes nothing: name a golden where it has an effect, or record it as unproven`);
      if (claim.how === "unproven" && hasEffect(claim.case, field)) broken.push(`${key}: recorded as unproven, but removing it from golden case "${claim.case}" changes the translation: record it as translated`);
      if (claim.how === "reported" && !(evidence.reported.get(claim.case) ?? []).some((r) => r.code === claim.code && (under(field, r.field) || (subtree && under(r.field, field))) && r.field.includes(".spec."))) {
        broken.push(`${key}: golden case "${claim.case}" emits no ${claim.code} about the field`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("keeps the gaps counted (each one a field no golden sets yet)", () => {
    const counts = { translated: 0, reported: 0, unproven: 0, gap: 0 };
    for (const leaf of leaves) {
      const e = entryOf(registry, leaf);
      const claim = e === undefined ? undefined : parseClaim(registry[e] ?? "");
      if (claim !== undefined && typeof claim !== "string") counts[claim.how]++;
    }
    expect(counts.translated + counts.reported + counts.unproven + counts.gap).toBe(leaves.length);
    console.log(
      `field registry: ${String(leaves.length)} fields — ${String(counts.translated)} translated, ${String(counts.reported)} reported, ` +
        `${String(counts.unproven)} unproven (no effect in their golden), ${String(counts.gap)} gaps (set by no golden yet)`,
    );
  });
});
