/**
 * The translator's in-process check (validateIstioResource) judges an object by Istio's CRD schemas the
 * way the Kubernetes API server applies a CRD's structural schema (kubernetes.io, "Extend the Kubernetes
 * API with CustomResourceDefinitions": validation, pruning, `nullable`, `x-kubernetes-int-or-string`,
 * `x-kubernetes-list-type`), with the fields and enums of Istio's reference pages (istio.io,
 * networking.istio.io/v1 VirtualService, DestinationRule, ServiceEntry; security.istio.io/v1
 * AuthorizationPolicy). Each case is one mistake in an otherwise valid object.
 */
import { describe, expect, it } from "vitest";
import { validateIstioResource, type IstioResource } from "../../src/translate/index.js";

const host = "reviews.bookinfo.svc.cluster.local";
const object = (apiVersion: string, kind: string, spec: unknown, metadata: Record<string, unknown> = {}): IstioResource =>
  ({ apiVersion, kind, metadata: { name: "reviews", namespace: "bookinfo", ...metadata }, spec }) as unknown as IstioResource;
const vs = (http: unknown[], extra: Record<string, unknown> = {}) => object("networking.istio.io/v1", "VirtualService", { hosts: [host], http, ...extra });
const se = (spec: Record<string, unknown>) => object("networking.istio.io/v1", "ServiceEntry", { hosts: ["api.example.com"], resolution: "DNS", ...spec });
const route = { route: [{ destination: { host, subset: "v1" } }] };
const issues = (r: IstioResource) => validateIstioResource(r).map((i) => `${i.path}: ${i.message}`);

describe("Istio's CRD schemas, as the API server applies them", () => {
  it("accepts valid objects of every kind gitmesh renders most", () => {
    expect(issues(vs([route], { gateways: ["istio-gateways/north"] }))).toEqual([]);
    expect(issues(object("networking.istio.io/v1", "DestinationRule", { host, subsets: [{ name: "v1", labels: { version: "v1" } }], trafficPolicy: { tls: { mode: "ISTIO_MUTUAL" } } }))).toEqual([]);
    expect(issues(se({ ports: [{ number: 443, name: "https", protocol: "TLS" }] }))).toEqual([]);
    expect(issues(object("security.istio.io/v1", "AuthorizationPolicy", { action: "ALLOW", rules: [{ from: [{ source: { principals: ["cluster.local/ns/a/sa/b"] } }] }] }))).toEqual([]);
  });

  it("rejects a value of the wrong type at its path", () => {
    expect(issues(vs([{ ...route, retries: { attempts: "3" } }]))).toEqual(["/spec/http/0/retries/attempts: must be integer"]);
    expect(issues(vs([{ ...route, timeout: 5 }]))).toEqual(["/spec/http/0/timeout: must be string"]);
    expect(issues(object("networking.istio.io/v1", "VirtualService", { hosts: host }))).toEqual(["/spec/hosts: must be array"]);
  });

  it("rejects an integer outside its format (int32 for a retry count)", () => {
    expect(issues(vs([{ ...route, retries: { attempts: 2 ** 31 } }]))).toEqual(['/spec/http/0/retries/attempts: must match format "int32"']);
  });

  it("rejects a value that is not one of an enum's", () => {
    expect(issues(object("networking.istio.io/v1", "DestinationRule", { host, trafficPolicy: { tls: { mode: "MUTUAL_ISTIO" } } }))).toEqual(["/spec/trafficPolicy/tls/mode: must be equal to one of the allowed values"]);
    expect(issues(se({ resolution: "dns" }))).toEqual(["/spec/resolution: must be equal to one of the allowed values"]);
  });

  it("rejects a missing required field (a ServiceEntry's hosts; a port's number and name)", () => {
    expect(issues(object("networking.istio.io/v1", "ServiceEntry", { resolution: "DNS" }))).toEqual(["/spec: must have required property 'hosts'"]);
    expect(issues(se({ ports: [{ name: "https" }] }))).toEqual(["/spec/ports/0: must have required property 'number'"]);
  });

  it("rejects two members of one proto oneof (a URI match that is both exact and prefix)", () => {
    expect(issues(vs([{ ...route, match: [{ uri: { exact: "/a", prefix: "/b" } }] }])).length).toBeGreaterThan(0);
    expect(issues(vs([{ ...route, match: [{ uri: { exact: "/a" } }] }]))).toEqual([]);
  });

  it("takes an integer or a string where the schema says x-kubernetes-int-or-string (status.observedGeneration), and nothing else", () => {
    const withStatus = (observedGeneration: unknown) => ({ ...vs([route]), status: { observedGeneration } }) as unknown as IstioResource;
    expect(issues(withStatus(3))).toEqual([]);
    expect(issues(withStatus("3"))).toEqual([]);
    expect(issues(withStatus(true)).length).toBeGreaterThan(0);
    // Not int-or-string: a ServiceEntry port's targetPort is a number only.
    expect(issues(se({ ports: [{ number: 80, name: "http", targetPort: "8080" }] }))).toEqual(["/spec/ports/0/targetPort: must be integer"]);
  });

  it("rejects two ServiceEntry ports with the same name (x-kubernetes-list-type: map keyed by name: the API server's Duplicate value)", () => {
    expect(issues(se({ ports: [{ number: 80, name: "http" }, { number: 8080, name: "http" }] }))).toEqual(["/spec/ports: must not hold two items with the same name (x-kubernetes-list-type: map)"]);
    expect(issues(se({ ports: [{ number: 80, name: "http" }, { number: 8080, name: "http-alt" }] }))).toEqual([]);
  });

  it("accepts null for an optional field (the API server prunes it) but not for an item of a list", () => {
    expect(issues(vs([{ ...route, timeout: null }]))).toEqual([]);
    expect(issues(object("networking.istio.io/v1", "VirtualService", { hosts: [host, null] }))).toEqual(["/spec/hosts/1: must be string"]);
  });

  it("lets an unknown spec field through: the API server prunes it rather than reject it (Istio's webhook check catches it under --strict)", () => {
    expect(issues(vs([route], { retryPolicy: { attempts: 3 } }))).toEqual([]);
  });

  it("checks metadata as Kubernetes' ObjectMeta: string labels, complete owner references", () => {
    expect(issues(vs([route]))).toEqual([]);
    expect(issues(object("networking.istio.io/v1", "VirtualService", { hosts: [host] }, { labels: { "gitmesh.io/parent-kind": 3 } }))).toEqual(["/metadata/labels/gitmesh.io~1parent-kind: must be string"]);
    expect(issues(object("networking.istio.io/v1", "VirtualService", { hosts: [host] }, { labels: { app: "reviews" }, ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "x" }] }))).toEqual([
      "/metadata/ownerReferences/0: must have required property 'uid'",
    ]);
  });
});
