/**
 * The translator's regex check (route matchers: uri, header and query regexes) agrees with Istio's
 * webhook, which compiles them as RE2 (Go's regexp): constructs JavaScript takes and RE2 refuses
 * (lookaround, backreferences, unknown letter escapes) are errors before anything is rendered, and
 * RE2 constructs JavaScript refuses (flag groups, `(?P<name>…)`) are not. All regexes go through
 * Istio in ONE process, each as the uri and a header regex of one VirtualService.
 */
import { describe, expect, it } from "vitest";
import { regexError } from "../../src/translate/route-matchers.js";
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
