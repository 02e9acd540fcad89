/** Unit tests of the small per-construct functions of the route side. */
import { describe, expect, it } from "vitest";
import { combineMatchers } from "../../src/translate/delegation.js";
import { createHeaderMatch, createMatches, createUriMatch, routeSpecificity } from "../../src/translate/route-matchers.js";
import { splitWeights } from "../../src/translate/route-table.js";
import { globMatch, labelsMatch, objectSelectorMatches } from "../../src/translate/selectors.js";

describe("splitWeights (Gloo remainder rules)", () => {
  it("single destinations need no weight; remainders go to unweighted destinations, rounding to the first", () => {
    expect(splitWeights([undefined])).toEqual([100]);
    expect(splitWeights([50, undefined, undefined])).toEqual([50, 25, 25]);
    expect(splitWeights([undefined, undefined, undefined])).toEqual([34, 33, 33]);
    expect(splitWeights([75, 25])).toEqual([75, 25]);
  });
  it("rejects sums over 100, all-weighted sums other than 100, and remainders too small", () => {
    expect(splitWeights([80, 80])).toMatch(/over 100/);
    expect(splitWeights([50, 25])).toMatch(/sum to 75/);
    expect(splitWeights([50, 50, undefined])).toMatch(/leave 0 for 1/);
  });
});

describe("matchers", () => {
  it("uri: exactly one of exact/prefix/regex/suffix; suffix becomes an anchored regex; bad regex is an error value", () => {
    expect(createUriMatch({ prefix: "/a" }, "/p")).toEqual({ uri: { prefix: "/a" }, ignoreCase: false });
    expect(createUriMatch({ suffix: ".json" }, "/p")).toEqual({ uri: { regex: ".*\\.json" }, ignoreCase: false });
    expect(createUriMatch({ exact: "/a", prefix: "/b" }, "/p")).toMatchObject({ error: expect.stringMatching(/exactly one/) });
    expect(createUriMatch({ regex: "(" }, "/p")).toMatchObject({ path: "/p/regex" });
  });
  it("headers: lower-cased names, presence without value, regex and invert", () => {
    expect(createHeaderMatch({ name: "X-A" }, "/h")).toEqual({ name: "x-a", match: { regex: ".*" }, invert: false });
    expect(createHeaderMatch({ name: "x", value: "a.*", regex: true, invertMatch: true }, "/h")).toEqual({ name: "x", match: { regex: "a.*" }, invert: true });
    expect(createHeaderMatch({ value: "x" }, "/h")).toMatchObject({ path: "/h/name" });
  });
  it("matches are the product of matchers and source-label sets; nothing at all is a catch-all", () => {
    expect(createMatches([], "/m", [])).toEqual({ matches: undefined });
    const m = createMatches([{ uri: { prefix: "/a" } }, { method: "get" }], "/m", [{ app: "x" }, { app: "y" }]);
    expect("matches" in m && m.matches?.length).toBe(4);
    expect("matches" in m && m.matches?.[1]).toEqual({ uri: { prefix: "/a" }, sourceLabels: { app: "y" } });
    expect("matches" in m && m.matches?.[2]).toEqual({ method: { exact: "GET" }, sourceLabels: { app: "x" } });
  });
  it("specificity: exact > regex/suffix > prefix > none, longer first, most specific matcher counts", () => {
    expect(routeSpecificity([{ uri: { exact: "/abc" } }])).toEqual([3, 4]);
    expect(routeSpecificity([{ uri: { prefix: "/a" } }, { uri: { regex: ".*" } }])).toEqual([2, 0]);
    expect(routeSpecificity([{ uri: { prefix: "/abc" } }])).toEqual([1, 4]);
    expect(routeSpecificity([])).toEqual([0, 0]);
  });
});

describe("delegation matcher combination", () => {
  it("children inherit the parent's matchers, must stay under its prefix, and accumulate headers", () => {
    expect(combineMatchers([], [{ uri: { prefix: "/x" } }])).toEqual({ matchers: [{ uri: { prefix: "/x" } }] });
    expect(combineMatchers([{ uri: { prefix: "/api" } }], [])).toEqual({ matchers: [{ uri: { prefix: "/api" } }] });
    const c = combineMatchers([{ uri: { prefix: "/api" }, headers: [{ name: "a", value: "1" }] }], [{ uri: { prefix: "/api/v1" }, headers: [{ name: "b", value: "2" }] }]);
    expect(c).toEqual({ matchers: [{ uri: { prefix: "/api/v1" }, headers: [{ name: "a", value: "1" }, { name: "b", value: "2" }], queryParameters: [] }] });
    expect(combineMatchers([{ uri: { prefix: "/api" } }], [{ uri: { prefix: "/web" } }])).toMatchObject({ error: expect.stringMatching(/not under/) });
    expect(combineMatchers([{ uri: { exact: "/only" } }], [{ uri: { exact: "/other" } }])).toMatchObject({ error: expect.stringMatching(/does not equal/) });
  });
});

describe("selectors", () => {
  it("globs, labels and ObjectSelectors", () => {
    expect(globMatch("bookinfo-*", "bookinfo-backends")).toBe(true);
    expect(globMatch("book.info", "bookxinfo")).toBe(false);
    expect(globMatch(undefined, "x")).toBe(true);
    // a compiled glob is kept and reused: the same answers on later calls, and no state between them
    for (let i = 0; i < 2; i++) {
      expect(globMatch("bookinfo-*", "bookinfo-frontends")).toBe(true);
      expect(globMatch("bookinfo-*", "other-bookinfo-x")).toBe(false);
      expect(globMatch("*.svc.*", "a.svc.b")).toBe(true);
      expect(globMatch("*.svc.*", "axsvcxb")).toBe(false);
    }
    expect(labelsMatch({ a: "1" }, { a: "1", b: "2" })).toBe(true);
    expect(labelsMatch({ a: "1" }, {})).toBe(false);
    const obj = { kind: "RouteTable", name: "rt", namespace: "ns", cluster: "", labels: { t: "a" }, workspace: "ws" };
    expect(objectSelectorMatches({ labels: { t: "a" }, cluster: "c1" }, obj)).toBe(true);
    expect(objectSelectorMatches({ workspace: "other" }, obj)).toBe(false);
    expect(objectSelectorMatches({ namespace: "n*" }, obj)).toBe(true);
  });
});
