#!/usr/bin/python3
"""Conformance checks for the kube-emulator, driven by the official Kubernetes Python client.

Written from the Kubernetes API documentation (API concepts: efficient detection of changes,
retrieving large results in chunks, dry-run, server-side apply, field validation, finalizers; API
conventions) rather than from the emulator's code, so that a client the project never used
holds it to the real server's behaviour.

    python_client_checks.py --list                       # the check names, one a line
    python_client_checks.py --kubeconfig FILE [--only N] [--prefix P] # runs them; one JSON line per check

Each check runs in its own namespace and raises (AssertionError or ApiException) to fail.
"""
import argparse
import base64
import json
import sys
import time
import traceback

CHECKS = []


def check(name):
    def register(fn):
        CHECKS.append((name, fn))
        return fn
    return register


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def eventually(what, probe, timeout=30):
    """Polls probe until it holds (controllers act asynchronously on a real cluster)."""
    deadline = time.time() + timeout
    while not probe():
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        time.sleep(0.1)


def gone(fn):
    """True when fn raises a 404 ApiException."""
    from kubernetes.client.rest import ApiException
    try:
        fn()
    except ApiException as e:
        if e.status == 404:
            return True
        raise
    return False


def expect_status(fn, code, reason=None):
    """Calls fn, expecting an ApiException with HTTP `code` (and Status `reason`); returns the Status body."""
    from kubernetes.client.rest import ApiException
    try:
        fn()
    except ApiException as e:
        body = json.loads(e.body) if e.body else {}
        expect(e.status == code, f"expected HTTP {code}, got {e.status}: {e.body}")
        if reason is not None:
            expect(body.get("reason") == reason, f"expected reason {reason}, got {body.get('reason')}: {e.body}")
        return body
    raise AssertionError(f"expected HTTP {code}, the call succeeded")


class Ctx:
    def __init__(self, api_client, ns):
        from kubernetes import client
        from kubernetes.dynamic import DynamicClient
        self.api = api_client
        self.ns = ns
        self.observed = []
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.coord = client.CoordinationV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.dyn = DynamicClient(api_client)

    def observe(self, what, value):
        """Records an answer of the server (reported with the check's result: the calibration against
        a real API server lists the answers where the emulator differs)."""
        self.observed.append(f"{what}: {json.dumps(value, sort_keys=True)}")

    def cm(self, name, data=None, labels=None):
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": self.ns, **({"labels": labels} if labels else {})},
                "data": data or {}}

    def raw(self, method, path, body=None, content_type="application/json", query=None, headers=False):
        """A raw request through the client's own HTTP stack; returns (status, parsed body[, headers])."""
        from kubernetes.client.rest import ApiException
        try:
            data, status, hdrs = self.api.call_api(
                path, method, query_params=query or [], header_params={"Content-Type": content_type, "Accept": "application/json"},
                body=body, response_type=object, auth_settings=["BearerToken"], _return_http_data_only=False,
                _request_timeout=20)
            out = (status, data, hdrs)
        except ApiException as e:
            out = (e.status, (json.loads(e.body) if e.body else None), e.headers)
        return out if headers else out[:2]

    def stream(self, path, query, timeout=20):
        """A watch through the client's HTTP stack, read until the server ends it (give timeoutSeconds):
        (status, [events])."""
        from kubernetes.client.rest import ApiException
        try:
            resp = self.api.call_api(path, "GET", query_params=query, header_params={"Accept": "application/json"},
                                     auth_settings=["BearerToken"], _preload_content=False, _request_timeout=timeout,
                                     _return_http_data_only=True)
        except ApiException as e:
            return e.status, ([json.loads(e.body)] if e.body else [])
        return resp.status, [json.loads(line) for line in resp.data.decode().splitlines() if line.strip()]

    def apply(self, obj, manager, force=None, **kwargs):
        """Server-side apply through the dynamic client (the body goes as a JSON string: YAML is a superset)."""
        res = self.dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
        ns = obj["metadata"].get("namespace") if res.namespaced else None
        return self.dyn.server_side_apply(res, body=json.dumps(obj), name=obj["metadata"]["name"], namespace=ns,
                                          field_manager=manager, force_conflicts=force, **kwargs)

    def vs(self, name, hosts=None, **spec):
        return {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
                "metadata": {"name": name, "namespace": self.ns},
                "spec": {"hosts": hosts or [name], **spec}}

    def deployment(self, name, containers, volumes=None):
        pod = {"containers": containers, **({"volumes": volumes} if volumes else {})}
        return {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": name, "namespace": self.ns},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}


# --- list, paging and watch (API concepts: "Efficient detection of changes", "Retrieving large results sets in chunks")

@check("list: resourceVersion in the list metadata, items sorted and complete")
def _(c):
    for i in range(3):
        c.core.create_namespaced_config_map(c.ns, c.cm(f"l{i}"))
    lst = c.core.list_namespaced_config_map(c.ns)
    expect(lst.metadata.resource_version, "list has a resourceVersion")
    expect([i.metadata.name for i in lst.items] == ["l0", "l1", "l2"], [i.metadata.name for i in lst.items])


@check("list chunks: a continue token pages a consistent snapshot; deleting an earlier item skips nothing")
def _(c):
    for i in range(6):
        c.core.create_namespaced_config_map(c.ns, c.cm(f"p{i}"))
    first = c.core.list_namespaced_config_map(c.ns, limit=2)
    expect([i.metadata.name for i in first.items] == ["p0", "p1"], "first page")
    expect(first.metadata._continue, "a continue token")
    expect(first.metadata.remaining_item_count == 4, f"remainingItemCount {first.metadata.remaining_item_count}")
    c.core.delete_namespaced_config_map("p0", c.ns)
    c.core.create_namespaced_config_map(c.ns, c.cm("p2a"))
    second = c.core.list_namespaced_config_map(c.ns, limit=2, _continue=first.metadata._continue)
    expect([i.metadata.name for i in second.items] == ["p2", "p3"], [i.metadata.name for i in second.items])
    expect(second.metadata.resource_version == first.metadata.resource_version, "pages share the snapshot's resourceVersion")
    third = c.core.list_namespaced_config_map(c.ns, limit=2, _continue=second.metadata._continue)
    expect([i.metadata.name for i in third.items] == ["p4", "p5"], [i.metadata.name for i in third.items])
    expect(not third.metadata._continue, "last page has no continue")


@check("list: resourceVersionMatch=Exact returns the state at that version")
def _(c):
    c.core.create_namespaced_config_map(c.ns, c.cm("e1", {"v": "1"}))
    rv = c.core.list_namespaced_config_map(c.ns).metadata.resource_version
    c.core.patch_namespaced_config_map("e1", c.ns, {"data": {"v": "2"}})
    c.core.create_namespaced_config_map(c.ns, c.cm("e2"))
    old = c.core.list_namespaced_config_map(c.ns, resource_version=rv, resource_version_match="Exact")
    expect([(i.metadata.name, i.data) for i in old.items] == [("e1", {"v": "1"})], [(i.metadata.name, i.data) for i in old.items])
    expect(old.metadata.resource_version == rv, "the list is at the requested version")


@check("list: a resourceVersion the server has not reached is 504 Timeout (ResourceVersionTooLarge) after a short wait")
def _(c):
    rv = int(c.core.list_namespaced_config_map(c.ns).metadata.resource_version)
    t = time.time()
    body = expect_status(lambda: c.core.list_namespaced_config_map(c.ns, resource_version=str(rv + 1000), resource_version_match="NotOlderThan"), 504, "Timeout")
    expect(body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge", body)
    expect(time.time() - t >= 2, "waits for the version first")


@check("watch: watch=True (Python's spelling of the boolean) streams ADDED/MODIFIED/DELETED from a resourceVersion")
def _(c):
    from kubernetes import watch
    rv = c.core.list_namespaced_config_map(c.ns).metadata.resource_version
    c.core.create_namespaced_config_map(c.ns, c.cm("w1"))
    c.core.patch_namespaced_config_map("w1", c.ns, {"data": {"a": "1"}})
    c.core.delete_namespaced_config_map("w1", c.ns)
    seen = []
    w = watch.Watch()
    for ev in w.stream(c.core.list_namespaced_config_map, c.ns, resource_version=rv, timeout_seconds=2):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 3:
            w.stop()
    expect(seen == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")], seen)


@check("watch: from a resourceVersion the server has not reached, the watch is accepted and sends nothing older; it ends at timeoutSeconds")
def _(c):
    rv = int(c.core.list_namespaced_config_map(c.ns).metadata.resource_version)
    c.core.create_namespaced_config_map(c.ns, c.cm("before"))
    t = time.time()
    status, events = c.stream(f"/api/v1/namespaces/{c.ns}/configmaps", [("watch", "1"), ("resourceVersion", str(rv + 1000)), ("timeoutSeconds", "2")])
    c.observe("answer", [status, [e.get("type") for e in events]])
    expect(status == 200 and events == [], (status, events))
    expect(time.time() - t >= 1.5, "held open until timeoutSeconds")


@check("watch: allowWatchBookmarks=True gets a BOOKMARK once the resourceVersion moved on (here: a write the selector filters out)")
def _(c):
    import threading
    rv = c.core.list_namespaced_config_map(c.ns).metadata.resource_version
    # The watch cache bookmarks progress: shortly before the watch's timeout (and about every minute),
    # when writes it did not deliver moved the resourceVersion past the watcher's.
    tick = threading.Timer(0.5, lambda: c.core.create_namespaced_config_map(c.ns, c.cm("tick", labels={"tick": "yes"})))
    tick.start()
    status, events = c.stream(f"/api/v1/namespaces/{c.ns}/configmaps", [("watch", "1"), ("resourceVersion", rv), ("allowWatchBookmarks", "true"),
                                                                        ("labelSelector", "tick!=yes"), ("timeoutSeconds", "3")])
    tick.join()
    written = int(c.core.read_namespaced_config_map("tick", c.ns).metadata.resource_version)
    types = [e["type"] for e in events]
    expect(status == 200 and "BOOKMARK" in types and "ADDED" not in types, (status, types))
    expect(int(next(e for e in events if e["type"] == "BOOKMARK")["object"]["metadata"]["resourceVersion"]) >= written, events)


# --- dry run (API concepts: "Dry-run")

@check("dry-run create: the answer has a uid, nothing is stored")
def _(c):
    out = c.core.create_namespaced_config_map(c.ns, c.cm("dry", {"a": "1"}), dry_run="All")
    expect(out.metadata.uid and out.data == {"a": "1"}, "the object as it would be")
    expect_status(lambda: c.core.read_namespaced_config_map("dry", c.ns), 404, "NotFound")


@check("dry-run patch (strategic and merge), update and server-side apply change nothing")
def _(c):
    c.core.create_namespaced_config_map(c.ns, c.cm("d", {"a": "1"}))
    before = c.core.read_namespaced_config_map("d", c.ns)
    out = c.core.patch_namespaced_config_map("d", c.ns, {"data": {"a": "2"}}, dry_run="All")
    expect(out.data == {"a": "2"}, "the patched object is answered")
    before.data = {"a": "3"}
    out = c.core.replace_namespaced_config_map("d", c.ns, before, dry_run="All")
    expect(out.data == {"a": "3"}, "the updated object is answered")
    c.apply(c.cm("d", {"a": "4"}), "dry", force=True, dry_run="All")
    after = c.core.read_namespaced_config_map("d", c.ns)
    expect(after.data == {"a": "1"}, f"live object unchanged: {after.data}")
    expect(after.metadata.resource_version == before.metadata.resource_version, "no new resourceVersion")


@check("dry-run delete: the object survives; a namespace too")
def _(c):
    c.core.create_namespaced_config_map(c.ns, c.cm("keep"))
    c.core.delete_namespaced_config_map("keep", c.ns, dry_run="All")
    c.core.read_namespaced_config_map("keep", c.ns)
    c.core.delete_namespaced_config_map("keep", c.ns, body={"dryRun": ["All"]})  # in DeleteOptions, as kubectl sends it
    c.core.read_namespaced_config_map("keep", c.ns)
    c.core.delete_collection_namespaced_config_map(c.ns, dry_run="All")
    c.core.read_namespaced_config_map("keep", c.ns)
    c.core.delete_namespace(c.ns, dry_run="All")
    c.core.read_namespaced_config_map("keep", c.ns)
    expect(c.core.read_namespace(c.ns).status.phase == "Active", "namespace still active")


@check("dry-run: a value other than All is 422")
def _(c):
    status, body = c.raw("POST", f"/api/v1/namespaces/{c.ns}/configmaps", body=c.cm("x"), query=[("dryRun", "Yes")])
    expect(status == 422 and body["reason"] == "Invalid", (status, body))


# --- server-side apply with force=True (the Python dynamic client's spelling)

@check("apply: force=True takes the fields over from another manager")
def _(c):
    c.apply(c.cm("f", {"a": "1"}), "one")
    try:
        c.apply(c.cm("f", {"a": "2"}), "two")
        raise AssertionError("expected a conflict")
    except AssertionError:
        raise
    except Exception as e:  # noqa: BLE001 - the dynamic client raises its own ConflictError
        expect(getattr(e, "status", None) == 409, f"409 conflict, got {e}")
    c.apply(c.cm("f", {"a": "2"}), "two", force=True)
    expect(c.core.read_namespaced_config_map("f", c.ns).data == {"a": "2"}, "forced")


# --- strategic merge patch (API concepts: "Patch"; "Update API Objects in Place Using kubectl patch")

@check("strategic merge patch: a patch naming one container merges by name; other containers, ports, env and mounts stay")
def _(c):
    c.apps.create_namespaced_deployment(c.ns, c.deployment("web", [
        {"name": "app", "image": "app:1", "ports": [{"containerPort": 8080}], "env": [{"name": "A", "value": "1"}],
         "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
        {"name": "side", "image": "side:1"}], volumes=[{"name": "v", "emptyDir": {}}]))
    c.apps.patch_namespaced_deployment("web", c.ns, {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "side:2"}]}}}})
    got = c.apps.read_namespaced_deployment("web", c.ns).spec.template.spec.containers
    expect([(x.name, x.image) for x in got] == [("app", "app:1"), ("side", "side:2")], [(x.name, x.image) for x in got])
    expect(got[0].ports[0].container_port == 8080 and got[0].env[0].name == "A" and got[0].volume_mounts[0].mount_path == "/v", "app kept its ports, env and mounts")


@check("strategic merge patch: $setElementOrder is a directive (not stored), $patch: delete removes an element by key")
def _(c):
    c.apps.create_namespaced_deployment(c.ns, c.deployment("web", [
        {"name": "a", "image": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}, {"name": "b", "image": "b"}]))
    c.apps.patch_namespaced_deployment("web", c.ns, {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
        "containers": [{"name": "a", "env": [{"name": "X", "$patch": "delete"}]}]}}}})
    raw = c.api.sanitize_for_serialization(c.apps.read_namespaced_deployment("web", c.ns))
    spec = raw["spec"]["template"]["spec"]
    expect("$setElementOrder/containers" not in spec, "directive not stored")
    expect([x["name"] for x in spec["containers"]] == ["b", "a"], spec["containers"])
    expect(spec["containers"][1]["env"] == [{"name": "Y", "value": "2"}], spec["containers"][1])


@check("strategic merge patch: finalizers (a merge-strategy list of strings) are a union")
def _(c):
    c.core.create_namespaced_config_map(c.ns, {**c.cm("f"), "metadata": {"name": "f", "finalizers": ["example.com/a"]}})
    c.core.patch_namespaced_config_map("f", c.ns, {"metadata": {"finalizers": ["example.com/b"]}})
    got = c.core.read_namespaced_config_map("f", c.ns).metadata.finalizers
    # The patch's items first, then the server's (strategicpatch's normalizeElementOrder).
    c.observe("finalizers", got)
    expect(got == ["example.com/b", "example.com/a"], got)
    c.core.patch_namespaced_config_map("f", c.ns, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a", "example.com/b"]}})


@check("strategic merge patch on a custom resource is 415 Unsupported Media Type; merge patch works")
def _(c):
    c.custom.create_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices", c.vs("r"))
    status, body = c.raw("PATCH", f"/apis/networking.istio.io/v1/namespaces/{c.ns}/virtualservices/r", body={"spec": {"hosts": ["x"]}},
                         content_type="application/strategic-merge-patch+json")
    expect(status == 415 and body["reason"] == "UnsupportedMediaType", (status, body))
    c.custom.patch_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices", "r", {"spec": {"hosts": ["x"]}})
    got = c.custom.get_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices", "r")
    expect(got["spec"]["hosts"] == ["x"], got["spec"])


# --- server-side apply with listType=map (API concepts: "Server-Side Apply", merge strategy)

@check("apply: Deployment containers merge by name across field managers; a conflict names the element")
def _(c):
    c.apply(c.deployment("web", [{"name": "app", "image": "app:1"}]), "team-app")
    c.apply(c.deployment("web", [{"name": "side", "image": "side:1"}]), "team-side")
    got = c.apps.read_namespaced_deployment("web", c.ns).spec.template.spec.containers
    expect([(x.name, x.image) for x in got] == [("app", "app:1"), ("side", "side:1")], [(x.name, x.image) for x in got])
    try:
        c.apply(c.deployment("web", [{"name": "app", "image": "app:2"}]), "team-side")
        raise AssertionError("expected a conflict")
    except AssertionError:
        raise
    except Exception as e:  # noqa: BLE001
        expect(getattr(e, "status", None) == 409, e)
        message = json.loads(e.body)["message"]
        expect('.spec.template.spec.containers[name="app"].image' in message, message)
    # team-side now applies only "app" (same value: shared ownership) and so stops applying "side",
    # which goes; team-app then gives "app" up, which stays because team-side still applies it.
    c.apply(c.deployment("web", [{"name": "app", "image": "app:1"}]), "team-side")
    c.apply(c.deployment("web", []), "team-app")
    got = c.apps.read_namespaced_deployment("web", c.ns).spec.template.spec.containers
    expect([(x.name, x.image) for x in got] == [("app", "app:1")], [(x.name, x.image) for x in got])


@check("apply: Service ports merge by (port, protocol), protocol defaulting to TCP")
def _(c):
    svc = lambda ports: {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": c.ns}, "spec": {"ports": ports}}  # noqa: E731
    c.apply(svc([{"name": "http", "port": 80}]), "one")
    c.apply(svc([{"name": "dns", "port": 53, "protocol": "UDP"}]), "two")
    c.apply(svc([{"name": "http", "port": 80, "protocol": "TCP"}]), "one")
    got = c.core.read_namespaced_service("s", c.ns).spec.ports
    expect(sorted((p.port, p.protocol) for p in got) == [(53, "UDP"), (80, "TCP")], [(p.port, p.protocol) for p in got])


# --- validation (API concepts: "Field validation"; CRDs: "Specifying a structural schema", "Field pruning")

VS_PATH = "/apis/networking.istio.io/v1/namespaces/{ns}/virtualservices"


@check("custom resource: an unknown field is pruned with a Warning header (fieldValidation default Warn)")
def _(c):
    status, body, hdrs = c.raw("POST", VS_PATH.format(ns=c.ns), body=c.vs("r", bogus=1), headers=True)
    expect(status == 201, (status, body))
    expect("bogus" not in body["spec"], body["spec"])
    expect('unknown field \\"spec.bogus\\"' in str(hdrs.get("Warning")), hdrs.get("Warning"))


@check("custom resource: an unknown field under fieldValidation=Strict is 400; Ignore prunes silently")
def _(c):
    status, body = c.raw("POST", VS_PATH.format(ns=c.ns), body=c.vs("r", bogus=1), query=[("fieldValidation", "Strict")])
    expect(status == 400 and 'unknown field "spec.bogus"' in body["message"], (status, body))
    status, body, hdrs = c.raw("POST", VS_PATH.format(ns=c.ns), body=c.vs("r", bogus=1), query=[("fieldValidation", "Ignore")], headers=True)
    expect(status == 201 and "bogus" not in body["spec"] and not hdrs.get("Warning"), (status, body, hdrs.get("Warning")))


@check("custom resource: a wrong type or an unsupported enum value is 422 Invalid with the field path")
def _(c):
    body = expect_status(lambda: c.custom.create_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices",
                                                                         {**c.vs("r"), "spec": {"hosts": "not-a-list"}}), 422, "Invalid")
    expect(any(x["field"] == "spec.hosts" for x in body["details"]["causes"]), body)
    pa = {"apiVersion": "security.istio.io/v1", "kind": "PeerAuthentication", "metadata": {"name": "p", "namespace": c.ns},
          "spec": {"mtls": {"mode": "SOMETIMES"}}}
    body = expect_status(lambda: c.custom.create_namespaced_custom_object("security.istio.io", "v1", c.ns, "peerauthentications", pa), 422, "Invalid")
    expect(any(x["field"] == "spec.mtls.mode" and x["reason"] == "FieldValueNotSupported" for x in body["details"]["causes"]), body)


@check("custom resource: a PUT without metadata.resourceVersion is 422 (no unconditional update)")
def _(c):
    c.custom.create_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices", c.vs("r"))
    body = expect_status(lambda: c.custom.replace_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices", "r", c.vs("r", ["x"])), 422, "Invalid")
    expect(body["details"]["causes"][0]["field"] == "metadata.resourceVersion", body)


@check("custom resource: the status subresource — the main resource ignores status, /status changes only status")
def _(c):
    created = c.custom.create_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices", {**c.vs("r"), "status": {"observedGeneration": 7}})
    expect("status" not in created or not created["status"], f"status dropped on create: {created.get('status')}")
    c.custom.patch_namespaced_custom_object_status("networking.istio.io", "v1", c.ns, "virtualservices", "r",
                                                   {"status": {"observedGeneration": 1}, "spec": {"hosts": ["ignored"]}})
    got = c.custom.get_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices", "r")
    expect(got["status"] == {"observedGeneration": 1} and got["spec"]["hosts"] == ["r"], got)
    expect(got["metadata"]["generation"] == 1, "a status write does not bump generation")
    c.custom.patch_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices", "r", {"status": {"observedGeneration": 9}, "spec": {"hosts": ["y"]}})
    got = c.custom.get_namespaced_custom_object("networking.istio.io", "v1", c.ns, "virtualservices", "r")
    expect(got["status"] == {"observedGeneration": 1} and got["spec"]["hosts"] == ["y"] and got["metadata"]["generation"] == 2, got)


@check("custom resource: every served version (v1, v1beta1, v1alpha3) shows the same object in its own apiVersion")
def _(c):
    c.custom.create_namespaced_custom_object("networking.istio.io", "v1beta1", c.ns, "virtualservices", {**c.vs("r"), "apiVersion": "networking.istio.io/v1beta1"})
    for v in ("v1", "v1beta1", "v1alpha3"):
        got = c.custom.get_namespaced_custom_object("networking.istio.io", v, c.ns, "virtualservices", "r")
        expect(got["apiVersion"] == f"networking.istio.io/{v}" and got["spec"]["hosts"] == ["r"], got)
    items = c.custom.list_namespaced_custom_object("networking.istio.io", "v1alpha3", c.ns, "virtualservices")["items"]
    expect([i["apiVersion"] for i in items] == ["networking.istio.io/v1alpha3"], items)


@check("discovery: Istio kinds carry their categories and the status subresource; v1 is the preferred version; built-in workloads are in `all`")
def _(c):
    status, doc = c.raw("GET", "/apis/networking.istio.io")
    expect(doc["preferredVersion"]["version"] == "v1" and {v["version"] for v in doc["versions"]} >= {"v1", "v1beta1", "v1alpha3"}, doc)
    status, rl = c.raw("GET", "/apis/networking.istio.io/v1")
    vs = next(r for r in rl["resources"] if r["name"] == "virtualservices")
    expect("istio-io" in vs.get("categories", []) and "vs" in vs.get("shortNames", []), vs)
    expect(any(r["name"] == "virtualservices/status" for r in rl["resources"]), "virtualservices/status listed")
    # Built-in workloads and Services are in the `all` category (kubectl get all); ConfigMaps are not.
    status, apps = c.raw("GET", "/apis/apps/v1")
    expect(next(r for r in apps["resources"] if r["name"] == "deployments").get("categories") == ["all"], apps)
    status, core = c.raw("GET", "/api/v1")
    expect(next(r for r in core["resources"] if r["name"] == "services").get("categories") == ["all"], core)
    expect("categories" not in next(r for r in core["resources"] if r["name"] == "configmaps"), core)


@check("apply: ServiceEntry ports (listType=map keyed by name) merge across field managers")
def _(c):
    se = lambda ports: {"apiVersion": "networking.istio.io/v1", "kind": "ServiceEntry", "metadata": {"name": "ext", "namespace": c.ns},  # noqa: E731
                        "spec": {"hosts": ["ext.example.com"], "resolution": "DNS", "ports": ports}}
    c.apply(se([{"name": "https", "number": 443, "protocol": "TLS"}]), "one")
    c.apply(se([{"name": "http", "number": 80, "protocol": "HTTP"}]), "two")
    got = c.custom.get_namespaced_custom_object("networking.istio.io", "v1", c.ns, "serviceentries", "ext")
    expect(sorted(p["name"] for p in got["spec"]["ports"]) == ["http", "https"], got["spec"]["ports"])


@check("create: a listType=map list with a key twice is 422 Duplicate value naming the key, once per duplicated key")
def _(c):
    ports = [{"name": "http", "number": 80, "protocol": "HTTP"}, {"name": "http", "number": 8080, "protocol": "HTTP"},
             {"name": "http", "number": 8081, "protocol": "HTTP"}, {"name": "https", "number": 443, "protocol": "TLS"}]
    se = {"apiVersion": "networking.istio.io/v1", "kind": "ServiceEntry", "metadata": {"name": "dup", "namespace": c.ns},
          "spec": {"hosts": ["dup.example.com"], "resolution": "DNS", "ports": ports}}
    body = expect_status(lambda: c.custom.create_namespaced_custom_object("networking.istio.io", "v1", c.ns, "serviceentries", se), 422, "Invalid")
    causes = [(x["field"], x["message"]) for x in body["details"]["causes"]]
    c.observe("causes", causes)
    expect(causes == [("spec.ports[1]", 'Duplicate value: {"name":"http"}')], causes)


# --- validation of built-in kinds (API conventions; "Object Names and IDs"; "Labels and Selectors"; Secrets; Leases)

@check("built-in: invalid label keys and values and invalid names are 422 Invalid")
def _(c):
    body = expect_status(lambda: c.core.create_namespaced_config_map(c.ns, c.cm("ok", labels={"app": "not a valid value!"})), 422, "Invalid")
    expect(body["details"]["causes"][0]["field"] == "metadata.labels", body)
    expect_status(lambda: c.core.create_namespaced_config_map(c.ns, c.cm("ok", labels={"bad key!": "v"})), 422, "Invalid")
    # IsValidLabelValue reports each broken rule as its own cause: 64 letters break only the length.
    body = expect_status(lambda: c.core.create_namespaced_config_map(c.ns, c.cm("ok", labels={"a": "x" * 64})), 422, "Invalid")
    expect([x["message"] for x in body["details"]["causes"]] == ['Invalid value: "%s": must be no more than 63 bytes' % ("x" * 64)], body)
    body = expect_status(lambda: c.core.create_namespaced_config_map(c.ns, c.cm("ok", labels={"a": "x" * 63 + "!"})), 422, "Invalid")
    expect([x["message"].split(": ")[-1] for x in body["details"]["causes"]] == ["must be no more than 63 bytes", "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"], body)
    expect(body["message"].startswith('ConfigMap "ok" is invalid: [metadata.labels: Invalid value: ') and body["message"].endswith("')]"), body["message"])
    expect_status(lambda: c.core.create_namespaced_config_map(c.ns, c.cm("Bad_Name")), 422, "Invalid")
    # Service names are RFC 1123 labels (Kubernetes 1.34+: a leading digit is fine, a dot or an underscore is not).
    c.core.create_namespaced_service(c.ns, {"metadata": {"name": "1-starts-with-digit"}, "spec": {"ports": [{"port": 80}]}})
    body = expect_status(lambda: c.core.create_namespaced_service(c.ns, {"metadata": {"name": "svc_bad"}, "spec": {"ports": [{"port": 80}]}}), 422, "Invalid")
    c.observe("service name", body["message"])
    expect("RFC 1123 label" in body["message"], body["message"])
    body = expect_status(lambda: c.core.create_namespaced_service(c.ns, {"metadata": {"name": "svc.dotted"}, "spec": {"ports": [{"port": 80}]}}), 422, "Invalid")
    expect(body["message"].endswith('metadata.name: Invalid value: "svc.dotted": must not contain dots'), body["message"])


@check("built-in: a Secret with data that is not base64 is 400; bad keys and missing keys of its type are 422; its type is immutable")
def _(c):
    status, body = c.raw("POST", f"/api/v1/namespaces/{c.ns}/secrets", body={"metadata": {"name": "s"}, "data": {"k": "not base64!"}})
    expect(status == 400 and "base64" in body["message"], (status, body))
    expect_status(lambda: c.core.create_namespaced_secret(c.ns, {"metadata": {"name": "s"}, "stringData": {"bad key": "v"}}), 422, "Invalid")
    body = expect_status(lambda: c.core.create_namespaced_secret(c.ns, {"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "stringData": {"tls.crt": "x"}}), 422, "Invalid")
    expect(any(x["field"] == "data[tls.key]" for x in body["details"]["causes"]), body)
    c.core.create_namespaced_secret(c.ns, {"metadata": {"name": "s"}, "stringData": {"a": "b"}})
    expect_status(lambda: c.core.patch_namespaced_secret("s", c.ns, {"type": "kubernetes.io/basic-auth"}), 422, "Invalid")


@check("built-in: Lease times are MicroTime — milliseconds or no fraction is 400, microseconds are stored as sent")
def _(c):
    lease = lambda t: {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"holderIdentity": "a", "renewTime": t}}  # noqa: E731
    for bad in ("2026-01-01T00:00:00.123Z", "2026-01-01T00:00:00Z"):
        status, body = c.raw("POST", f"/apis/coordination.k8s.io/v1/namespaces/{c.ns}/leases", body=lease(bad))
        expect(status == 400 and "parsing time" in body["message"], (bad, status, body))
    status, body = c.raw("POST", f"/apis/coordination.k8s.io/v1/namespaces/{c.ns}/leases", body=lease("2026-01-01T00:00:00.123456Z"))
    expect(status == 201 and body["spec"]["renewTime"] == "2026-01-01T00:00:00.123456Z", (status, body))


@check("built-in: a wrong type is 400 BadRequest (decoding); an unknown field is dropped with a warning, 400 under Strict")
def _(c):
    dep = c.deployment("web", [{"name": "app", "image": "app:1"}])
    dep["spec"]["replicas"] = "two"
    status, body = c.raw("POST", f"/apis/apps/v1/namespaces/{c.ns}/deployments", body=dep)
    expect(status == 400 and "cannot unmarshal string" in body["message"], (status, body))
    cm = {**c.cm("u"), "bogus": True}
    status, body, hdrs = c.raw("POST", f"/api/v1/namespaces/{c.ns}/configmaps", body=cm, headers=True)
    expect(status == 201 and "bogus" not in body and "unknown field" in str(hdrs.get("Warning")), (status, body, hdrs.get("Warning")))
    status, body = c.raw("POST", f"/api/v1/namespaces/{c.ns}/configmaps", body={**cm, "metadata": {"name": "u2"}}, query=[("fieldValidation", "Strict")])
    expect(status == 400 and 'unknown field "bogus"' in body["message"], (status, body))


@check("built-in: a Deployment whose selector does not match its template labels, or a container without image, is 422")
def _(c):
    dep = c.deployment("web", [{"name": "app", "image": "app:1"}])
    dep["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    body = expect_status(lambda: c.apps.create_namespaced_deployment(c.ns, dep), 422, "Invalid")
    expect(any(x["field"] == "spec.template.metadata.labels" for x in body["details"]["causes"]), body)
    body = expect_status(lambda: c.apps.create_namespaced_deployment(c.ns, c.deployment("web", [{"name": "app"}])), 422, "Invalid")
    expect(any(x["field"] == "spec.template.spec.containers[0].image" for x in body["details"]["causes"]), body)


# --- lifecycle (API concepts: "Finalizers", "Namespaces": deletion; "Field selectors")

@check("finalizers: delete sets deletionTimestamp and keeps the object; removing the last finalizer deletes it (watch: MODIFIED for the deletion, DELETED for the last write)")
def _(c):
    from kubernetes import watch
    c.core.create_namespaced_config_map(c.ns, {**c.cm("fin"), "metadata": {"name": "fin", "finalizers": ["example.com/hold"]}})
    rv = c.core.list_namespaced_config_map(c.ns).metadata.resource_version
    c.core.delete_namespaced_config_map("fin", c.ns)
    live = c.core.read_namespaced_config_map("fin", c.ns)
    expect(live.metadata.deletion_timestamp is not None, "deletionTimestamp set")
    body = expect_status(lambda: c.core.patch_namespaced_config_map("fin", c.ns, {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}), 422, "Invalid")
    expect("no new finalizers" in body["message"], body)
    c.core.patch_namespaced_config_map("fin", c.ns, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/hold"]}})
    expect_status(lambda: c.core.read_namespaced_config_map("fin", c.ns), 404, "NotFound")
    seen = []
    w = watch.Watch()
    for ev in w.stream(c.core.list_namespaced_config_map, c.ns, resource_version=rv, timeout_seconds=1):
        seen.append(ev["type"])
        if len(seen) == 3:
            w.stop()
    # The write that takes the last finalizer away deletes the object: one DELETED event, no MODIFIED.
    c.observe("events", seen)
    expect(seen == ["MODIFIED", "DELETED"], seen)


@check("namespaces: deletion is graceful — Terminating while a finalizer holds content, no new content (403), gone when empty")
def _(c):
    c.core.create_namespace({"metadata": {"name": f"{c.ns}-x"}})
    ns = f"{c.ns}-x"
    c.core.create_namespaced_config_map(ns, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    c.core.create_namespaced_config_map(ns, {"metadata": {"name": "free"}})
    c.core.delete_namespace(ns)
    expect(c.core.read_namespace(ns).status.phase == "Terminating", "namespace Terminating")
    # The namespace controller deletes the contents (asynchronously on a real cluster).
    eventually("free content deleted, held content waits", lambda: [i.metadata.name for i in c.core.list_namespaced_config_map(ns).items] == ["held"])
    body = expect_status(lambda: c.core.create_namespaced_config_map(ns, {"metadata": {"name": "late"}}), 403, "Forbidden")
    expect("being terminated" in body["message"], body)
    c.core.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": None}})
    eventually("the namespace gone", lambda: gone(lambda: c.core.read_namespace(ns)))


@check("namespaces: every Namespace carries its name as the kubernetes.io/metadata.name label, which a write cannot change")
def _(c):
    ns = f"{c.ns}-label"
    created = c.core.create_namespace({"metadata": {"name": ns, "labels": {"team": "a"}}})
    expect(created.metadata.labels == {"team": "a", "kubernetes.io/metadata.name": ns}, created.metadata.labels)
    patched = c.core.patch_namespace(ns, {"metadata": {"labels": {"kubernetes.io/metadata.name": "other"}}})
    expect(patched.metadata.labels["kubernetes.io/metadata.name"] == ns, patched.metadata.labels)
    found = c.core.list_namespace(label_selector=f"kubernetes.io/metadata.name={ns}").items
    expect([n.metadata.name for n in found] == [ns], found)
    c.core.delete_namespace(ns)


@check("delete answers the deleted object where the real storage does (ReturnDeletedObject: a ServiceAccount), a Success Status elsewhere (a ConfigMap)")
def _(c):
    c.core.create_namespaced_service_account(c.ns, {"metadata": {"name": "del-sa"}})
    c.core.create_namespaced_config_map(c.ns, c.cm("del-cm"))
    status, sa = c.raw("DELETE", f"/api/v1/namespaces/{c.ns}/serviceaccounts/del-sa")
    expect(status == 200 and sa["kind"] == "ServiceAccount" and sa["metadata"]["name"] == "del-sa", sa)
    status, cm = c.raw("DELETE", f"/api/v1/namespaces/{c.ns}/configmaps/del-cm")
    expect(status == 200 and cm["kind"] == "Status" and cm["status"] == "Success" and cm["details"]["kind"] == "configmaps", cm)


@check("field selectors: status.phase and spec.nodeName on Pods, type on Secrets; an unsupported field is 400")
def _(c):
    pod = lambda name, node: {"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}}  # noqa: E731
    c.core.create_namespaced_pod(c.ns, pod("a", "n1"))
    c.core.create_namespaced_pod(c.ns, pod("b", "n2"))
    got = [p.metadata.name for p in c.core.list_namespaced_pod(c.ns, field_selector="spec.nodeName=n2").items]
    expect(got == ["b"], got)
    c.core.create_namespaced_secret(c.ns, {"metadata": {"name": "t"}, "type": "example.com/x", "stringData": {"a": "b"}})
    c.core.create_namespaced_secret(c.ns, {"metadata": {"name": "o"}, "stringData": {"a": "b"}})
    got = [x.metadata.name for x in c.core.list_namespaced_secret(c.ns, field_selector="type=example.com/x").items]
    expect(got == ["t"], got)
    got = [x.metadata.name for x in c.core.list_namespace(field_selector=f"status.phase=Active,metadata.name={c.ns}").items]
    expect(got == [c.ns], got)
    expect_status(lambda: c.core.list_namespaced_config_map(c.ns, field_selector="spec.nodeName=n1"), 400, "BadRequest")


# --- odds and ends of the API conventions

@check("scale subresource: read and patch a Deployment's replicas as an autoscaling/v1 Scale")
def _(c):
    c.apps.create_namespaced_deployment(c.ns, c.deployment("web", [{"name": "app", "image": "app:1"}]))
    scale = c.apps.read_namespaced_deployment_scale("web", c.ns)
    expect(scale.spec.replicas == 1 and scale.status.selector == "app=web", scale)
    c.apps.patch_namespaced_deployment_scale("web", c.ns, {"spec": {"replicas": 4}})
    expect(c.apps.read_namespaced_deployment("web", c.ns).spec.replicas == 4, "replicas scaled")
    expect_status(lambda: c.apps.patch_namespaced_deployment_scale("web", c.ns, {"spec": {"replicas": -1}}), 422, "Invalid")


@check("update: a built-in kind takes an unconditional PUT (no resourceVersion); a stale one is 409 Conflict")
def _(c):
    c.core.create_namespaced_config_map(c.ns, c.cm("u", {"a": "1"}))
    c.core.replace_namespaced_config_map("u", c.ns, c.cm("u", {"a": "2"}))
    stale = {**c.cm("u", {"a": "3"}), "metadata": {"name": "u", "resourceVersion": "1"}}
    expect_status(lambda: c.core.replace_namespaced_config_map("u", c.ns, stale), 409, "Conflict")
    expect(c.core.read_namespaced_config_map("u", c.ns).data == {"a": "2"}, "unconditional update applied, stale one refused")


@check("status subresource of a built-in kind: /status of a Deployment changes status only; the main resource drops status")
def _(c):
    dep = c.deployment("web", [{"name": "app", "image": "app:1"}])
    dep["status"] = {"replicas": 5}
    created = c.apps.create_namespaced_deployment(c.ns, dep)
    expect(not created.status or not created.status.replicas, f"status dropped on create: {created.status}")
    c.apps.patch_namespaced_deployment_status("web", c.ns, {"status": {"replicas": 1, "readyReplicas": 1}, "spec": {"replicas": 9}})
    got = c.apps.read_namespaced_deployment("web", c.ns)
    expect(got.status.ready_replicas == 1 and got.spec.replicas == 1, (got.status, got.spec.replicas))


@check("streaming lists (sendInitialEvents): the current objects as ADDED, then a BOOKMARK annotated k8s.io/initial-events-end")
def _(c):
    c.core.create_namespaced_config_map(c.ns, c.cm("s1"))
    c.core.create_namespaced_config_map(c.ns, c.cm("s2"))
    status, events = c.stream(f"/api/v1/namespaces/{c.ns}/configmaps",
                              [("watch", "true"), ("sendInitialEvents", "true"), ("resourceVersionMatch", "NotOlderThan"),
                               ("allowWatchBookmarks", "true"), ("timeoutSeconds", "2")])
    seen = [(e["type"], e["object"].get("metadata", {}).get("name") or e["object"].get("metadata", {}).get("annotations")) for e in events]
    c.observe("events", [status, seen[:3]])
    expect(status == 200 and seen[:3] == [("ADDED", "s1"), ("ADDED", "s2"), ("BOOKMARK", {"k8s.io/initial-events-end": "true"})], (status, seen))


# --- answers where the emulator and a real API server were seen to differ (issue #34); each check
# asserts what kube-apiserver answers and records it.

@check("apply conflict text: no `using` for an Apply manager; `using <apiVersion>` and no time for an Update manager")
def _(c):
    c.apply(c.cm("cf", {"a": "1"}), "alice")
    c.core.patch_namespaced_config_map("cf", c.ns, {"data": {"b": "1"}}, field_manager="bob")
    status, body = c.raw("PATCH", f"/api/v1/namespaces/{c.ns}/configmaps/cf", body=json.dumps(c.cm("cf", {"a": "2", "b": "2"})),
                         content_type="application/apply-patch+yaml", query=[("fieldManager", "carol")])
    c.observe("message", body.get("message"))
    c.observe("causes", sorted([x.get("message"), x.get("field")] for x in body.get("details", {}).get("causes", [])))
    expect(status == 409, (status, body))
    expect(body["message"] == 'Apply failed with 2 conflicts: conflicts with "alice":\n- .data.a\nconflicts with "bob" using v1:\n- .data.b', body["message"])
    causes = sorted((x["message"], x["field"]) for x in body["details"]["causes"])
    expect(causes == [('conflict with "alice"', ".data.a"), ('conflict with "bob" using v1', ".data.b")], causes)
    status, body = c.raw("PATCH", f"/api/v1/namespaces/{c.ns}/configmaps/cf", body=json.dumps(c.cm("cf", {"b": "3"})),
                         content_type="application/apply-patch+yaml", query=[("fieldManager", "carol")])
    c.observe("one conflict", body.get("message"))
    expect(status == 409 and body["message"] == 'Apply failed with 1 conflict: conflict with "bob" using v1: .data.b', (status, body))


@check("managedFields: an Update that creates a map records the map's `.` entry")
def _(c):
    c.core.create_namespaced_config_map(c.ns, c.cm("mf", {"a": "1"}, labels={"app": "x"}), field_manager="maker")
    raw = c.api.sanitize_for_serialization(c.core.read_namespaced_config_map("mf", c.ns))
    entries = [(m["manager"], m["operation"], m["fieldsV1"]) for m in raw["metadata"]["managedFields"]]
    c.observe("managedFields", entries)
    expect(entries == [("maker", "Update", {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})], entries)


@check("list: a label-selected page has a continue token but no remainingItemCount")
def _(c):
    for i in range(4):
        c.core.create_namespaced_config_map(c.ns, c.cm(f"r{i}", labels={"app": "r"}))
    page = c.core.list_namespaced_config_map(c.ns, limit=2, label_selector="app=r")
    c.observe("remainingItemCount", page.metadata.remaining_item_count)
    expect([i.metadata.name for i in page.items] == ["r0", "r1"] and page.metadata._continue, page.metadata)
    expect(page.metadata.remaining_item_count is None, page.metadata.remaining_item_count)
    plain = c.core.list_namespaced_config_map(c.ns, limit=2)
    expect(plain.metadata.remaining_item_count == 2, plain.metadata.remaining_item_count)


@check("create: metadata.namespace null is taken as unset (the namespace of the path)")
def _(c):
    status, body = c.raw("POST", f"/api/v1/namespaces/{c.ns}/configmaps", body={"metadata": {"name": "nn", "namespace": None}})
    c.observe("status", status)
    expect(status == 201 and body["metadata"]["namespace"] == c.ns, (status, body))


@check("defaulting: a Deployment created with the required fields only comes back with the server's defaults")
def _(c):
    created = c.api.sanitize_for_serialization(c.apps.create_namespaced_deployment(c.ns, c.deployment("web", [{"name": "app", "image": "app:1"}])))
    spec = created["spec"]
    pod = spec["template"]["spec"]
    seen = {"strategy": spec.get("strategy"), "revisionHistoryLimit": spec.get("revisionHistoryLimit"),
            "progressDeadlineSeconds": spec.get("progressDeadlineSeconds"), "restartPolicy": pod.get("restartPolicy"),
            "dnsPolicy": pod.get("dnsPolicy"), "imagePullPolicy": pod["containers"][0].get("imagePullPolicy")}
    c.observe("defaults", seen)
    expect(seen == {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                    "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600, "restartPolicy": "Always",
                    "dnsPolicy": "ClusterFirst", "imagePullPolicy": "IfNotPresent"}, seen)


@check("metadata.generation: a ConfigMap has none; a Deployment's starts at 1 and counts spec changes only")
def _(c):
    cm = c.core.create_namespaced_config_map(c.ns, c.cm("g", {"a": "1"}))
    c.observe("ConfigMap generation", cm.metadata.generation)
    expect(cm.metadata.generation is None, cm.metadata.generation)
    dep = c.apps.create_namespaced_deployment(c.ns, c.deployment("web", [{"name": "app", "image": "app:1"}]))
    expect(dep.metadata.generation == 1, dep.metadata.generation)
    c.apps.patch_namespaced_deployment("web", c.ns, {"metadata": {"labels": {"x": "y"}}})
    c.apps.patch_namespaced_deployment("web", c.ns, {"spec": {"replicas": 2}})
    expect(c.apps.read_namespaced_deployment("web", c.ns).metadata.generation == 2, "a label change does not count")


@check("apply: a built-in kind's field of the wrong type fails making the typed patch (HTTP 500)")
def _(c):
    status, body = c.raw("PATCH", f"/api/v1/namespaces/{c.ns}/configmaps/t", body=json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t"}, "data": "str"}),
                         content_type="application/apply-patch+yaml", query=[("fieldManager", "m")])
    c.observe("answer", [status, body.get("message")])
    expect(status == 500 and body["message"] == "failed to create typed patch object (/t; /v1, Kind=ConfigMap): .data: expected map, got &{str}", (status, body))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--kubeconfig")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--prefix", default="conf", help="namespace prefix (another one reruns checks against the same server)")
    args = parser.parse_args()
    if args.list:
        for name, _fn in CHECKS:
            print(name)
        return
    from kubernetes import client, config
    api_client = config.new_client_from_config(config_file=args.kubeconfig)
    core = client.CoreV1Api(api_client)
    for index, (name, fn) in enumerate(CHECKS):
        if args.only and name not in args.only:
            continue
        ns = f"{args.prefix}-{index}"
        started = time.time()
        ctx = Ctx(api_client, ns)
        try:
            core.create_namespace({"metadata": {"name": ns}})
            fn(ctx)
            result = {"name": name, "ok": True}
        except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
            result = {"name": name, "ok": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc(limit=4)}
        result["observed"] = ctx.observed
        result["ms"] = round((time.time() - started) * 1000)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    sys.exit(main())
