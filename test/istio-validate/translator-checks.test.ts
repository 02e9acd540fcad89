/**
 * The translator's own checks of values it passes to Istio agree with Istio's webhook, on lists that
 * exercise both verdicts; each list goes through Istio in ONE process.
 * - Regexes (route matchers, CORS origins): Istio compiles them as RE2 (Go's regexp). Constructs
 *   JavaScript takes and RE2 refuses (lookaround, backreferences, unknown letter escapes) are errors
 *   before anything is rendered, and RE2 constructs JavaScript refuses (flag groups, `(?P<name>…)`)
 *   are not.
 * - Header values (HeaderManipulationPolicy): Envoy's `%VARIABLE%` syntax and no control characters.
 */
import { describe, expect, it } from "vitest";
import { regexError } from "../../src/translate/route-matchers.js";
import { headerValueProblem } from "../../src/translate/route-policies.js";
import { istioValidateObjects } from "../helpers/istio-validate.js";

const REGEXES = [
  // both accept
  "^/api/v[0-9]+/.*",
  "\\d{3}-\\w+",
  "[[:alpha:]]+",
  "\\pL+",
  "(?:a|b)c",
  "(?<name>x)",
  "[(?=]x",
  "[\\]]x",
  "\\.\\*",
  "a{2,}",
  // RE2 only (JavaScript refuses them)
  "(?i)/api",
  "(?i:abc)d",
  "(?s).*",
  "(?U)a+",
  "(?-i)x",
  "(?P<name>x)",
  // JavaScript only (Istio refuses them)
  "^/(?=api).*",
  "(?!x)y",
  "(?<=x)y",
  "(?<!x)y",
  "(a)\\1",
  "(?<n>x)\\k<n>",
  "\\q",
  // both refuse
  "x++",
  "[a-z",
  "(unclosed",
];

describe("regexes: the translator's check against Istio's", () => {
  it("accepts exactly the regexes Istio's webhook accepts", async () => {
    const verdicts = await istioValidateObjects(
      REGEXES.map((re) => ({
        label: re,
        object: {
          apiVersion: "networking.istio.io/v1",
          kind: "VirtualService",
          metadata: { name: "regex", namespace: "default" },
          spec: { hosts: ["reviews"], http: [{ match: [{ uri: { regex: re }, headers: { "x-tenant": { regex: re } } }], route: [{ destination: { host: "reviews" } }] }] },
        },
      })),
    );
    const istio = REGEXES.map((re) => `${re}: ${verdicts.get(re)?.valid === true ? "accepted" : "rejected"}`);
    const gitmesh = REGEXES.map((re) => `${re}: ${regexError(re) === undefined ? "accepted" : "rejected"}`);
    expect(gitmesh).toEqual(istio);
    // The list exercises both verdicts on each side.
    expect(istio.filter((v) => v.endsWith("rejected")).length).toBeGreaterThan(5);
    expect(istio.filter((v) => v.endsWith("accepted")).length).toBeGreaterThan(10);
  });
});

const HEADER_VALUES = ["foo", "100%%", "%HOSTNAME%", "prefix %HOSTNAME% suffix", "%REQ(x-b)%", '%REQ(["a", "b"])%', "%DOWNSTREAM_PEER_URI_SAN%", "tab\there", "", "100%", "abc%123", "%START_TIME%%", '%REQ(["a" "b"])%', "%REQ(x", "line\nbreak", "bell\u0007"];

describe("header values: the translator's check against Istio's", () => {
  it("accepts exactly the header values Istio's webhook accepts", async () => {
    const verdicts = await istioValidateObjects(
      HEADER_VALUES.map((value, i) => ({
        label: String(i),
        object: {
          apiVersion: "networking.istio.io/v1",
          kind: "VirtualService",
          metadata: { name: "header", namespace: "default" },
          spec: { hosts: ["reviews"], http: [{ headers: { request: { add: { "x-value": value } } }, route: [{ destination: { host: "reviews" } }] }] },
        },
      })),
    );
    const istio = HEADER_VALUES.map((v, i) => `${JSON.stringify(v)}: ${verdicts.get(String(i))?.valid === true ? "accepted" : "rejected"}`);
    const gitmesh = HEADER_VALUES.map((v) => `${JSON.stringify(v)}: ${headerValueProblem(v) === undefined ? "accepted" : "rejected"}`);
    expect(gitmesh).toEqual(istio);
    expect(istio.filter((v) => v.endsWith("rejected")).length).toBeGreaterThan(4);
    expect(istio.filter((v) => v.endsWith("accepted")).length).toBeGreaterThan(5);
  });
});
