/* eslint-disable @typescript-eslint/no-explicit-any -- patched objects are read back as untyped JSON */
/**
 * The emulator's pure parts: label/field selector parsing and matching, RFC 7386/6902 patches, and
 * the field-ownership bookkeeping behind server-side apply.
 */
import { describe, expect, it } from "vitest";
import { formatPath, fromFieldsV1, leafPaths, recordUpdate, serverSideApply, toFieldsV1 } from "../../src/kube-emulator/fields.js";
import { BUILT_IN_SCHEMAS } from "../../src/kube-emulator/builtin-schemas.js";
import { strategicMergePatch } from "../../src/kube-emulator/smp.js";
import { decodeProtobuf } from "../../src/kube-emulator/protobuf.js";
import { jsonPatch, mergePatch, type JsonObject } from "../../src/kube-emulator/patch.js";
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, selectableFields } from "../../src/kube-emulator/selectors.js";
import { KubeApiError } from "../../src/kube-emulator/status.js";

describe("label selectors", () => {
  const labels = { app: "web", "example.com/tier": "front" };
  it.each([
    ["", true],
    ["app=web", true],
    ["app = web", true],
    ["app==web", true],
    ["app!=web", false],
    ["app!=db", true],
    ["missing!=x", true],
    ["example.com/tier in (front, back)", true],
    ["example.com/tier notin (front)", false],
    ["missing notin (x)", true],
    ["app", true],
    ["!app", false],
    ["!missing", true],
    ["app=web,!missing,example.com/tier", true],
    ["app=web,missing", false],
  ])("%j matches: %s", (sel, expected) => {
    expect(matchesLabels(parseLabelSelector(sel), labels)).toBe(expected);
  });

  it.each(["a in (", "=x", "a=b c", "bad key!=x"])("rejects %j with a 400", (sel) => {
    let err: unknown;
    try {
      parseLabelSelector(sel);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(KubeApiError);
    expect((err as KubeApiError).status).toBe(400);
  });

  it("field selectors on name and namespace, and the kind-specific ones a kind supports", () => {
    const obj = { metadata: { name: "a", namespace: "ns" }, spec: { nodeName: "n1" }, status: { phase: "Running" } };
    expect(matchesFields(parseFieldSelector("metadata.name=a,metadata.namespace==ns"), obj)).toBe(true);
    expect(matchesFields(parseFieldSelector("metadata.name!=a"), obj)).toBe(false);
    expect(() => parseFieldSelector("status.phase=Running")).toThrow(/field label not supported/);
    const pod = selectableFields("/Pod");
    expect(matchesFields(parseFieldSelector("status.phase=Running,spec.nodeName=n1,spec.hostNetwork=false", pod), obj)).toBe(true);
    expect(matchesFields(parseFieldSelector("status.phase!=Running", pod), obj)).toBe(false);
    expect(() => parseFieldSelector("spec.nodeName=n1", selectableFields("/ConfigMap"))).toThrow(/field label not supported: spec.nodeName/);
  });
});

describe("patches", () => {
  it("merge patch follows RFC 7386 (null deletes, arrays replace)", () => {
    expect(mergePatch({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { b: null, c: [3] }, e: "x" })).toEqual({ a: { c: [3] }, d: 1, e: "x" });
  });

  it("JSON patch supports add/remove/replace/move/copy/test and array indices", () => {
    const out = jsonPatch({ list: [1, 2], m: { "a/b": 1 } }, [
      { op: "add", path: "/list/-", value: 3 },
      { op: "add", path: "/list/0", value: 0 },
      { op: "remove", path: "/list/1" },
      { op: "copy", from: "/m/a~1b", path: "/copied" },
      { op: "move", from: "/copied", path: "/moved" },
      { op: "test", path: "/moved", value: 1 },
      { op: "replace", path: "/m", value: {} },
    ]);
    expect(out).toEqual({ list: [0, 2, 3], m: {}, moved: 1 });
    expect(() => jsonPatch({}, [{ op: "remove", path: "/nope" }])).toThrow(/does not exist/);
    expect(() => jsonPatch({}, { op: "add" })).toThrow(/JSON array/);
  });
});

describe("field ownership", () => {
  const now = "2026-01-01T00:00:00Z";
  it("leaf paths skip identity and server metadata; fieldsV1 round-trips", () => {
    const obj: JsonObject = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x", uid: "u", labels: { a: "1" } }, data: { k: "v" }, list: [1] };
    const paths = leafPaths(obj);
    expect([...paths.values()]).toEqual([["metadata", "labels", "a"], ["data", "k"], ["list"]]);
    expect(toFieldsV1(paths.values())).toEqual({ "f:metadata": { "f:labels": { "f:a": {} } }, "f:data": { "f:k": {} }, "f:list": {} });
    expect([...fromFieldsV1(toFieldsV1(paths.values())).values()]).toEqual([...paths.values()]);
  });

  it("reads and writes real servers' list element keys (k:, v:) with their '.' entries", () => {
    const real = { "f:spec": { "f:ports": { 'k:{"port":80,"protocol":"TCP"}': { ".": {}, "f:port": {} } } } };
    const paths = [...fromFieldsV1(real).values()];
    expect(paths).toEqual([["spec", "ports", '\u0000k:{"port":80,"protocol":"TCP"}', "port"]]);
    expect(toFieldsV1(paths)).toEqual(real);
  });

  it("merges listType=map lists by key: two managers own different containers, removal by key", () => {
    const schema = BUILT_IN_SCHEMAS["apps/Deployment"]!;
    const dep = (containers: JsonObject[]): JsonObject => ({ spec: { template: { spec: { containers } } } });
    const a = serverSideApply({ live: undefined, applied: dep([{ name: "app", image: "app:1", ports: [{ containerPort: 80 }] }]), manager: "a", force: false, apiVersion: "apps/v1", now, schema });
    const b = serverSideApply({ live: a.object, applied: dep([{ name: "side", image: "side:1" }]), manager: "b", force: false, apiVersion: "apps/v1", now, schema });
    expect(b.conflicts).toEqual([]);
    const names = (o: JsonObject): unknown => ((o.spec as any).template.spec.containers as { name: string; image?: string }[]).map((c) => `${c.name}=${c.image ?? "undefined"}`);
    expect(names(b.object)).toEqual(["app=app:1", "side=side:1"]);
    const clash = serverSideApply({ live: b.object, applied: dep([{ name: "app", image: "app:2" }]), manager: "b", force: false, apiVersion: "apps/v1", now, schema });
    expect(clash.conflicts.map((c) => formatPath(c.path))).toEqual(['.spec.template.spec.containers[name="app"].image']);
    // a stops applying its container: it goes, b's stays; a port without protocol matches the TCP default key.
    const gone = serverSideApply({ live: b.object, applied: dep([]), manager: "a", force: false, apiVersion: "apps/v1", now, schema });
    expect(names(gone.object)).toEqual(["side=side:1"]);
  });

  it("apply removes a field its manager stopped applying unless another manager owns it", () => {
    const first = serverSideApply({ live: undefined, applied: { data: { a: "1", b: "1" } }, manager: "m", force: false, apiVersion: "v1", now });
    const next = { ...first.object, data: { a: "1", b: "1", c: "other" } };
    recordUpdate({ old: first.object, next, manager: "editor", apiVersion: "v1", now });
    const second = serverSideApply({ live: next, applied: { data: { a: "1" } }, manager: "m", force: false, apiVersion: "v1", now });
    expect(second.conflicts).toEqual([]);
    expect(second.object.data).toEqual({ a: "1", c: "other" });
  });

  it("reports every conflicting field; force transfers them", () => {
    const base = serverSideApply({ live: undefined, applied: { spec: { x: 1, y: 2, z: 3 } }, manager: "a", force: false, apiVersion: "v1", now });
    const clash = serverSideApply({ live: base.object, applied: { spec: { x: 9, y: 9, z: 3 } }, manager: "b", force: false, apiVersion: "v1", now });
    expect(clash.conflicts.map((c) => c.path.join("."))).toEqual(["spec.x", "spec.y"]);
    const forced = serverSideApply({ live: base.object, applied: { spec: { x: 9, y: 9, z: 3 } }, manager: "b", force: true, apiVersion: "v1", now });
    expect(forced.object.spec).toEqual({ x: 9, y: 9, z: 3 });
    const mf = (forced.object.metadata as { managedFields: { manager: string; fieldsV1: unknown }[] }).managedFields;
    expect(mf.find((e) => e.manager === "a")?.fieldsV1).toEqual({ "f:spec": { "f:z": {} } });
    expect(mf.find((e) => e.manager === "b")?.fieldsV1).toEqual({ "f:spec": { "f:x": {}, "f:y": {}, "f:z": {} } });
  });
});

describe("strategic merge patch", () => {
  const schema = BUILT_IN_SCHEMAS["apps/Deployment"]!;
  const live: JsonObject = {
    metadata: { finalizers: ["a"] },
    spec: {
      template: {
        spec: {
          containers: [
            { name: "app", image: "app:1", ports: [{ containerPort: 80 }], env: [{ name: "A", value: "1" }] },
            { name: "side", image: "side:1" },
          ],
          volumes: [{ name: "v", emptyDir: {} }],
        },
      },
    },
  };
  const containers = (o: JsonObject): unknown => (o.spec as any).template.spec.containers;

  it("merges containers by name and keeps what the patch does not mention (kubectl set image)", () => {
    const out = strategicMergePatch(live, { spec: { template: { spec: { containers: [{ name: "side", image: "side:2" }] } } } }, schema);
    expect(containers(out)).toEqual([
      { name: "app", image: "app:1", ports: [{ containerPort: 80 }], env: [{ name: "A", value: "1" }] },
      { name: "side", image: "side:2" },
    ]);
  });

  it("understands $setElementOrder, $patch: delete, $patch: replace, $deleteFromPrimitiveList and scalar-list union", () => {
    const out = strategicMergePatch(
      live,
      {
        metadata: { finalizers: ["b"], "$deleteFromPrimitiveList/finalizers": ["a"] },
        spec: {
          template: {
            spec: {
              "$setElementOrder/containers": [{ name: "side" }, { name: "app" }],
              containers: [{ name: "app", env: [{ name: "A", $patch: "delete" }] }],
              volumes: [{ name: "w", configMap: { name: "c" } }, { $patch: "replace" }],
            },
          },
        },
      },
      schema,
    );
    expect(out.metadata).toEqual({ finalizers: ["b"] });
    expect(containers(out)).toEqual([{ name: "side", image: "side:1" }, { name: "app", image: "app:1", ports: [{ containerPort: 80 }], env: [] }]);
    expect((out.spec as any).template.spec.volumes).toEqual([{ name: "w", configMap: { name: "c" } }]);
    expect(JSON.stringify(out)).not.toContain("$");
  });
});

describe("protobuf request bodies", () => {
  const varint = (n: number): number[] => {
    const out: number[] = [];
    let v = n;
    while (v > 0x7f) {
      out.push((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out.push(v);
    return out;
  };
  const bytesField = (num: number, payload: number[] | string): number[] => {
    const b = typeof payload === "string" ? [...Buffer.from(payload)] : payload;
    return [...varint((num << 3) | 2), ...varint(b.length), ...b];
  };
  const envelope = (kind: string, raw: number[]): Buffer =>
    Buffer.from([0x6b, 0x38, 0x73, 0x00, ...bytesField(1, [...bytesField(1, "v1"), ...bytesField(2, kind)]), ...bytesField(2, raw)]);
  const meta = bytesField(1, [...bytesField(1, "c"), ...bytesField(2, ""), ...bytesField(8, [])]); // name, empty generateName, zero creationTimestamp

  it("decodes the envelope and a ConfigMap, leaving out zero values as Go's JSON does", () => {
    const data = bytesField(2, [...bytesField(1, "k"), ...bytesField(2, "v")]);
    expect(decodeProtobuf(envelope("ConfigMap", [...meta, ...data]))).toEqual({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" }, data: { k: "v" } });
  });

  it("answers 415 for a field or a kind outside its table, never dropping it", () => {
    const unknownField = bytesField(99, "x");
    expect(() => decodeProtobuf(envelope("ConfigMap", [...meta, ...unknownField]))).toThrow(/protobuf field 99 of ConfigMap/);
    const refused = ((): unknown => {
      try {
        return decodeProtobuf(envelope("CronJob", meta));
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(KubeApiError);
    expect((refused as KubeApiError).status).toBe(415);
    expect((refused as KubeApiError).message).toContain("protobuf message CronJob is not emulated");
    expect(() => decodeProtobuf(Buffer.from("{}"))).toThrow(/k8s\\0 prefix/);
  });
});
