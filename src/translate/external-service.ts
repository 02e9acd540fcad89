/**
 * ExternalService → per client cluster a ServiceEntry (MESH_EXTERNAL; resolution DNS, or NONE for
 * wildcard hosts; the user's `addresses` and `subjectAltNames`) and, when a port has
 * `clientsideTls` or a destination policy selects the ExternalService, one DestinationRule per
 * host with `portLevelSettings[].tls{mode (default SIMPLE), sni (default the host), …}`.
 *
 * Client clusters and `exportTo` as for VirtualDestinations: the clusters of the owning workspace
 * and of every workspace importing the ExternalService, the namespaces of those workspaces there.
 * The objects live in the ExternalService's namespace when present in the cluster, else in the
 * first consuming namespace.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import { consumersOf, cmpStr, isDnsName, isIpAddress, istioProtocol, namespacesIn, portName } from "./destination-common.js";
import { destinationTrafficPolicy, type TrafficPolicy } from "./destination-policies.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { egressRoutes, type EgressRoute } from "./egress.js";
import { sanitizeName, stableName } from "./names.js";
import { asArray, asLabels, asNumber, asRecord, asString, labelsMatch } from "./selectors.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

const TLS_MODES = ["SIMPLE", "DISABLE", "MUTUAL", "ISTIO_MUTUAL"] as const;

export function translateExternalServices(ctx: WorkspaceContext): TranslatorOutput {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const es of ctx.own("ExternalService")) {
    const out = translateOne(ctx, es);
    resources.push(...out.resources);
    diagnostics.push(...out.diagnostics);
  }
  return { resources, diagnostics };
}

interface EsPort {
  readonly number: number;
  readonly se: Record<string, unknown>;
  /** tls settings for a given host, when the port has clientsideTls. */
  readonly tls: ((host: string) => Record<string, unknown>) | undefined;
}

function translateOne(ctx: WorkspaceContext, es: InputObject): TranslatorOutput {
  const ws = ctx.workspace.name;
  const spec = asRecord(es.spec);
  const diagnostics: Diagnostic[] = reportUnsupported(ctx, es, spec, "/spec", ["hosts", "addresses", "ports", "subjectAltNames", "selector"]);
  const hosts = asArray(spec.hosts).filter((h): h is string => typeof h === "string" && h !== "");
  if (hosts.length === 0) {
    diagnostics.push(ctx.diag(es, TranslateCode.InvalidField, Severity.Error, "/spec/hosts", "an ExternalService needs at least one host; nothing is rendered for it."));
    return { resources: [], diagnostics };
  }
  const ports: EsPort[] = [];
  asArray(spec.ports).forEach((raw, i) => {
    const p = asRecord(raw);
    const path = `/spec/ports/${i}`;
    diagnostics.push(...reportUnsupported(ctx, es, p, path, ["number", "targetPort", "name", "protocol", "clientsideTls", "egressGatewayRoutes"]));
    const number = asNumber(p.number);
    if (number === undefined) {
      diagnostics.push(ctx.diag(es, TranslateCode.InvalidField, Severity.Error, `${path}/number`, "an ExternalService port needs a number; the port is skipped."));
      return;
    }
    const protocol = istioProtocol(asString(p.protocol));
    const se: Record<string, unknown> = { name: asString(p.name) ?? portName(protocol, number), number, protocol };
    const tp = asRecord(p.targetPort);
    const tpNum = asNumber(tp.number);
    if (tpNum !== undefined) se.targetPort = tpNum;
    else if (asString(tp.name) !== undefined) {
      diagnostics.push(ctx.diag(es, TranslateCode.InvalidField, Severity.Warning, `${path}/targetPort/name`, "an external endpoint has no named ports; use targetPort.number. The target port is left out."));
    }
    let tls: EsPort["tls"];
    if (p.clientsideTls !== undefined && p.clientsideTls !== null) {
      const t = asRecord(p.clientsideTls);
      diagnostics.push(...reportUnsupported(ctx, es, t, `${path}/clientsideTls`, ["sni", "mode", "clientCertificate", "privateKey", "caCertificates", "credentialName", "insecureSkipVerify"]));
      let mode = asString(t.mode) ?? "SIMPLE";
      if (!(TLS_MODES as readonly string[]).includes(mode)) {
        diagnostics.push(ctx.diag(es, TranslateCode.InvalidField, Severity.Error, `${path}/clientsideTls/mode`, `unknown TLS mode "${mode}"; use one of ${TLS_MODES.join(", ")}. SIMPLE is used.`));
        mode = "SIMPLE";
      }
      const fixed: Record<string, unknown> = { mode };
      for (const k of ["clientCertificate", "privateKey", "caCertificates", "credentialName"] as const) {
        const v = asString(t[k]);
        if (v) fixed[k] = v;
      }
      if (typeof t.insecureSkipVerify === "boolean") fixed.insecureSkipVerify = t.insecureSkipVerify;
      const sans = asArray(spec.subjectAltNames).filter((s): s is string => typeof s === "string");
      if (sans.length > 0 && mode !== "DISABLE") fixed.subjectAltNames = sans;
      const sni = asString(t.sni);
      tls = (host) => (mode === "DISABLE" ? { mode } : { ...fixed, sni: sni !== undefined && sni !== "" ? sni : host });
    }
    ports.push({ number, se, tls });
  });
  if (ports.length === 0) {
    diagnostics.push(ctx.diag(es, TranslateCode.InvalidField, Severity.Error, "/spec/ports", "an ExternalService needs at least one port; nothing is rendered for it."));
    return { resources: [], diagnostics };
  }

  const esNs = es.metadata.namespace ?? ctx.index.adminNamespace;
  const parent = ctx.parentOf(es);
  const baseName = stableName("externalservice", es.metadata.name, esNs, es.cluster ?? "", ws);
  const consumers = consumersOf(ctx, ctx.selectable(es));
  const clients = new Set<string>();
  for (const w of [ws, ...consumers]) for (const c of ctx.index.workspaces.get(w)?.clusters ?? []) clients.add(c);
  const addresses = asArray(spec.addresses).filter((a): a is string => typeof a === "string" && a !== "");
  const sans = asArray(spec.subjectAltNames).filter((s): s is string => typeof s === "string" && s !== "");
  const wildcard = hosts.some((h) => h.includes("*"));
  const ep = spec.selector === undefined ? undefined : endpointsOf(ctx, es, ports.map((p) => asString(p.se.name) ?? ""), diagnostics);
  if (ep !== undefined && wildcard) {
    diagnostics.push(ctx.diag(es, TranslateCode.InvalidField, Severity.Error, "/spec/selector", "a wildcard host cannot be served by ExternalEndpoints (Istio resolves no endpoints for it); the selector is not used."));
  }
  const endpoints = ep !== undefined && !wildcard && ep.endpoints.length > 0 ? ep : undefined;
  const portNumbers = ports.map((p) => p.number);
  const perHost = new Map<string, TrafficPolicy | undefined>();
  for (const host of hosts) {
    const { trafficPolicy } = destinationTrafficPolicy(ctx, es.key, portNumbers, (port) => {
      const tls = ports.find((p) => p.number === port)?.tls;
      return tls === undefined ? {} : { tls: tls(host) };
    });
    perHost.set(host, trafficPolicy);
  }

  const egress = egressRoutes(ctx, es, diagnostics);
  const egressClusters = new Set(egress.map((r) => r.binding.cluster));
  const routedPorts = [...new Set(egress.map((r) => r.portIndex))];
  const direct = [...clients].filter((c) => !egressClusters.has(c)).sort(cmpStr);
  if (routedPorts.length > 0 && direct.length > 0) {
    diagnostics.push(ctx.diag(es, TranslateCode.GatewayNotFound, Severity.Warning, `/spec/ports/${routedPorts[0]!}/egressGatewayRoutes`, `no egress gateway of the referenced VirtualGateway(s) runs in cluster(s) ${direct.map((c) => `"${c}"`).join(", ")}: sidecars there reach ${hosts.join(", ")} directly, not through an egress gateway.`));
  }

  const resources: Emitted[] = [];
  for (const cluster of [...clients].sort(cmpStr)) {
    const routes = egress.filter((r) => r.binding.cluster === cluster);
    // The egress gateway needs the ServiceEntry and the TLS settings of the final hop, and the routes.
    const exportTo = [...new Set([...namespacesIn(ctx.index, cluster, [ws, ...consumers]), ...routes.map((r) => r.binding.namespace)])].sort(cmpStr);
    const namespace = exportTo.includes(esNs) ? esNs : exportTo[0];
    if (namespace === undefined) continue;
    const meta = (name: string) => outputMetadata(name, namespace, cluster, ws, parent);
    const serviceEntry = (name: string, sePorts: readonly Record<string, unknown>[], seExport: readonly string[]): Emitted => ({
      cluster,
      resource: {
        apiVersion: "networking.istio.io/v1",
        kind: "ServiceEntry",
        metadata: meta(name),
        spec: {
          // Keys in canonical (code-unit) order: the canonical form is this object, not a copy.
          ...(addresses.length > 0 ? { addresses } : {}),
          ...(endpoints !== undefined ? { endpoints: endpoints.endpoints } : {}),
          exportTo: seExport,
          hosts,
          location: "MESH_EXTERNAL",
          ports: sePorts,
          resolution: wildcard ? "NONE" : endpoints?.resolution ?? "DNS",
          ...(sans.length > 0 ? { subjectAltNames: sans } : {}),
        },
      },
    });
    if (routes.length === 0) {
      resources.push(serviceEntry(baseName, ports.map((p) => p.se), exportTo));
    } else {
      // Clients see the ports they send to (portMatch, and ports not routed through a gateway); only
      // the egress gateways see the ports the external host is reached on, so a client cannot skip
      // the gateway (and its access policy) by calling the external port itself (with
      // outboundTrafficPolicy REGISTRY_ONLY; with ALLOW_ANY nothing in Istio stops a direct call).
      const gatewayNs = [...new Set(routes.map((r) => r.binding.namespace))].sort(cmpStr);
      const routed = new Set(routes.map((r) => r.esPort));
      const clientExport = exportTo.filter((n) => !gatewayNs.includes(n));
      if (clientExport.length > 0) resources.push(serviceEntry(baseName, withClientPorts(ports.filter((p) => !routed.has(p.number)).map((p) => p.se), routes), clientExport));
      resources.push(serviceEntry(stableName(baseName, "egress-gateway"), ports.map((p) => p.se), gatewayNs));
    }
    for (const host of hosts) {
      const trafficPolicy = perHost.get(host);
      if (trafficPolicy === undefined) continue;
      resources.push({
        cluster,
        resource: {
          apiVersion: "networking.istio.io/v1",
          kind: "DestinationRule",
          metadata: meta(hosts.length === 1 ? baseName : stableName(baseName, host)),
          spec: { exportTo, host, trafficPolicy },
        },
      });
    }
    const direct = ports.map((p) => p.number).filter((n) => !routes.some((r) => r.esPort === n));
    for (const r of egressResources(baseName, hosts, routes, direct, exportTo)) resources.push({ cluster, resource: { ...r, metadata: meta(r.metadata.name) } });
  }
  return { resources, diagnostics };
}

/** The ServiceEntry also lists each `portMatch` clients send to (HTTP, as Gloo routes it), so that their sidecars capture it. */
function withClientPorts(sePorts: readonly Record<string, unknown>[], routes: readonly EgressRoute[]): Record<string, unknown>[] {
  const out = [...sePorts];
  for (const n of [...new Set(routes.map((r) => r.portMatch))].sort((a, b) => a - b)) {
    if (!out.some((p) => p.number === n)) out.push({ name: portName("HTTP", n), number: n, protocol: "HTTP" });
  }
  return out;
}

/**
 * Istio's egress-gateway pattern (istio.io, "Egress Gateways"), per external host in one cluster:
 * a VirtualService bound to `mesh` and to the egress Gateway(s) — from sidecars, requests on
 * `portMatch` go to the egress gateway Service (load-balanced over the referenced gateways), requests
 * on ports not routed through a gateway go straight to the host; at the gateway, requests on the
 * listener port go to the external host on the ExternalService port —
 * and, for ISTIO_MUTUAL listeners, a DestinationRule subset per gateway that sends Istio mTLS with
 * the external host as SNI (the gateway server matches it). Metadata is completed by the caller.
 */
function egressResources(baseName: string, hosts: readonly string[], routes: readonly EgressRoute[], directPorts: readonly number[], exportTo: readonly string[]): { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> }[] {
  if (routes.length === 0) return [];
  const out: { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> }[] = [];
  const gatewayRefs = [...new Set(routes.map((r) => r.binding.ref))].sort(cmpStr);
  const portIndexes = [...new Set(routes.map((r) => r.portIndex))].sort((a, b) => a - b);
  for (const host of hosts) {
    const name = hosts.length === 1 ? stableName(baseName, "egress") : stableName(baseName, "egress", host);
    const subset = sanitizeName(`egress-${host}`);
    const http: Record<string, unknown>[] = [];
    for (const pi of portIndexes) {
      const rs = routes.filter((r) => r.portIndex === pi);
      const first = rs[0]!;
      const share = Math.floor(100 / rs.length);
      http.push({
        name: `mesh-to-egress-gateway-${first.portMatch}`,
        match: [{ gateways: ["mesh"], port: first.portMatch }],
        route: rs.map((r, i) => ({
          destination: { host: r.gatewayHost, port: { number: r.servicePort }, ...(r.istioMutual ? { subset } : {}) },
          ...(rs.length > 1 ? { weight: i === 0 ? 100 - share * (rs.length - 1) : share } : {}),
        })),
      });
      for (const r of rs) {
        http.push({
          name: sanitizeName(`egress-gateway-to-${host}-${r.esPort}-${r.binding.namespace}`),
          match: [{ gateways: [r.binding.ref], port: r.listenerPort }],
          route: [{ destination: { host, port: { number: r.esPort } } }],
        });
      }
    }
    // A VirtualService covers every port of its host: ports not routed through a gateway keep going
    // straight to the host (without these routes their requests would find no route: 404).
    for (const n of directPorts) {
      if (routes.some((r) => r.portMatch === n)) continue;
      http.push({ name: `mesh-to-${sanitizeName(host)}-${n}`, match: [{ gateways: ["mesh"], port: n }], route: [{ destination: { host, port: { number: n } } }] });
    }
    out.push({ apiVersion: "networking.istio.io/v1", kind: "VirtualService", metadata: { name }, spec: { exportTo, gateways: ["mesh", ...gatewayRefs], hosts: [host], http } });
    const mutual = new Map<string, EgressRoute[]>();
    for (const r of routes.filter((x) => x.istioMutual)) mutual.set(r.gatewayHost, [...(mutual.get(r.gatewayHost) ?? []), r]);
    for (const gwHost of [...mutual.keys()].sort(cmpStr)) {
      const ports = [...new Set(mutual.get(gwHost)!.map((r) => r.servicePort))].sort((a, b) => a - b);
      out.push({
        apiVersion: "networking.istio.io/v1",
        kind: "DestinationRule",
        metadata: { name: stableName(name, gwHost) },
        spec: { exportTo, host: gwHost, subsets: [{ name: subset, trafficPolicy: { portLevelSettings: ports.map((number) => ({ port: { number }, tls: { mode: "ISTIO_MUTUAL", sni: host } })) } }] },
      });
    }
  }
  return out;
}

/**
 * `selector` → the ExternalEndpoints of the workspace whose labels it matches, as ServiceEntry
 * endpoints (sorted by namespace and name): the address, its ports by the ExternalService port name
 * they serve, its locality. Resolution STATIC when every address is an IP or a unix socket, else DNS.
 */
function endpointsOf(ctx: WorkspaceContext, es: InputObject, portNames: readonly string[], diagnostics: Diagnostic[]): { endpoints: Record<string, unknown>[]; resolution: string } {
  const selector = asLabels(asRecord(es.spec).selector) ?? {};
  const selected = ctx
    .own("ExternalEndpoint")
    .filter((ee) => labelsMatch(selector, ee.metadata.labels))
    .sort((a, b) => cmpStr(`${a.metadata.namespace ?? ""}/${a.metadata.name}`, `${b.metadata.namespace ?? ""}/${b.metadata.name}`));
  if (selected.length === 0) {
    diagnostics.push(ctx.diag(es, TranslateCode.SelectsNothing, Severity.Warning, "/spec/selector", "selector matches no ExternalEndpoint of this workspace; the hosts are resolved by DNS instead."));
  }
  const endpoints: Record<string, unknown>[] = [];
  let dns = false;
  for (const ee of selected) {
    const spec = asRecord(ee.spec);
    const address = asString(spec.address);
    if (address === undefined || address === "") {
      diagnostics.push(ctx.diag(ee, TranslateCode.InvalidField, Severity.Error, "/spec/address", "an ExternalEndpoint needs an address; it is not used."));
      continue;
    }
    const ip = isIpAddress(address) || address.startsWith("unix://");
    if (!ip && !isDnsName(address)) {
      // Istio rejects the ServiceEntry (STATIC: "not a valid IP address"; DNS: "not a valid FQDN or an IP address").
      diagnostics.push(
        ctx.diag(ee, TranslateCode.InvalidField, Severity.Error, "/spec/address", `address "${address}" is neither an IP address nor a host name (a port goes in spec.ports, not in the address); this endpoint is not used.`),
      );
      continue;
    }
    if (!ip) dns = true;
    const eePorts = asArray(spec.ports).map(asRecord);
    const ports: Record<string, number> = {};
    eePorts.forEach((p, i) => {
      const number = asNumber(p.number);
      const name = asString(p.name);
      if (number === undefined) return;
      if (name === undefined && eePorts.length === 1 && portNames.length === 1) ports[portNames[0]!] = number;
      else if (name !== undefined && portNames.includes(name)) ports[name] = number;
      else diagnostics.push(ctx.diag(ee, TranslateCode.PortNotFound, Severity.Warning, `/spec/ports/${String(i)}`, `port ${name === undefined ? "without a name" : `"${name}"`} matches no port name of ExternalService ${es.metadata.namespace ?? ""}/${es.metadata.name} (${portNames.join(", ")}); name it after the port it serves. It is not used (the endpoint receives that port's traffic on the ExternalService port number).`));
    });
    const loc = asRecord(spec.locality);
    const locality = [asString(loc.region), asString(loc.zone), asString(loc.subZone)].filter((x): x is string => x !== undefined && x !== "").join("/");
    const labels = ee.metadata.labels ?? {};
    endpoints.push({
      address,
      ...(Object.keys(ports).length > 0 ? { ports } : {}),
      ...(locality !== "" ? { locality } : {}),
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
    });
  }
  return { endpoints, resolution: dns ? "DNS" : "STATIC" };
}
