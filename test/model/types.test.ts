// The generated types are what other modules code against: this file only compiles if they describe the
// schemas' shapes (checked by `tsc` in CI); the runtime assertions tie the typed literals back to the validator.
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  validateResource,
  type DestinationReference,
  type Duration,
  type GlooResource,
  type HTTPRoute,
  type RouteTable,
  type SpecOf,
  type VirtualGateway,
} from "../../src/model/index.js";

const destination: DestinationReference = { ref: { name: "reviews", namespace: "bookinfo-backends" }, kind: "VIRTUAL_DESTINATION", port: { number: 9080 } };
const route: HTTPRoute = { name: "reviews", matchers: [{ uri: { prefix: "/reviews" } }], forwardTo: { destinations: [destination] } };
const timeout: Duration = "1m30s";

const table: RouteTable = {
  apiVersion: "networking.gloo.solo.io/v2",
  kind: "RouteTable",
  metadata: { name: "reviews", namespace: "bookinfo-backends" },
  spec: { hosts: ["reviews.bookinfo.svc.cluster.local"], http: [route] },
};

// @ts-expect-error -- a misspelt field is a compile error, as it is a schema error
const typo: HTTPRoute = { name: "x", forwardto: {} };
// @ts-expect-error -- enums are string unions
const badKind: DestinationReference = { ref: { name: "x" }, kind: "SERVICES" };
// @ts-expect-error -- apiVersion is a literal type per kind
const badApiVersion: VirtualGateway = { apiVersion: "networking.gloo.solo.io/v1", kind: "VirtualGateway", metadata: { name: "gw", namespace: "ns" }, spec: { listeners: [] } };

function hostsOf(r: GlooResource): readonly string[] {
  switch (r.kind) {
    case "RouteTable":
      return r.spec?.hosts ?? []; // narrowed: r is RouteTable
    case "VirtualDestination":
      return r.spec?.hosts ?? [];
    default:
      return [];
  }
}

describe("generated types", () => {
  it("a typed literal is a valid document", () => {
    expect(validateResource(table)).toEqual([]);
    expect(hostsOf(table)).toEqual(["reviews.bookinfo.svc.cluster.local"]);
    expect(timeout).toMatch(/s$/);
  });

  it("documents that break the types also break the schema", () => {
    expect(validateResource({ ...table, spec: { http: [typo] } }).map((i) => i.path)).toContain("/spec/http/0/forwardto");
    expect(validateResource({ ...table, spec: { http: [{ name: "x", forwardTo: { destinations: [badKind] } }] } }).map((i) => i.keyword)).toEqual(["enum"]);
    expect(validateResource(badApiVersion).map((i) => i.keyword)).toEqual(["kind"]);
  });

  // Type-level: checked by the type check of `npm test` (tsc covers test/), not at run time.
  it("SpecOf gives the spec type of a kind (checked by tsc)", () => {
    expectTypeOf<SpecOf<"RouteTable">["http"]>().toEqualTypeOf<HTTPRoute[] | undefined>();
    expectTypeOf<SpecOf<"VirtualGateway">>().toHaveProperty("listeners");
  });
});
