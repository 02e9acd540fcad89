/**
 * VirtualGateway → Istio Gateway, one per (cluster, gateway namespace) whose discovered gateway
 * workloads the VirtualGateway selects. One server per listener: the port number is the gateway
 * Service's targetPort (what the Envoy pod listens on), TLS modes map one to one with
 * `credentialName` = `secretName`, hosts come from `allowedRouteTables[].host` or `*`.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { reportUnsupported, type WorkspaceContext, type WorkspaceInfo } from "./context.js";
import type { DiscoveredGateway, DiscoveredPort, InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { sanitizeName, stableName } from "./names.js";
import { asArray, asLabels, asNumber, asRecord, asString, isRecord, labelsMatch, objectSelectorMatches, type Labels } from "./selectors.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

const TLS_MODES = ["PASSTHROUGH", "SIMPLE", "MUTUAL", "AUTO_PASSTHROUGH", "ISTIO_MUTUAL", "OPTIONAL_MUTUAL"] as const;

/** One rendered Gateway of a VirtualGateway: where it lives and how routes reference it. */
export interface GatewayBinding {
  readonly cluster: string;
  readonly namespace: string;
  /** Name of the rendered Gateway object. */
  readonly name: string;
  /** `<namespace>/<name>`, for VirtualService `gateways`. */
  readonly ref: string;
  /** Labels common to the selected gateway pods (the Gateway's selector). */
  readonly podLabels: Labels;
  /** The selected gateway Services (same namespace), sorted by name. */
  readonly gateways: readonly DiscoveredGateway[];
}

/**
 * The discovered gateways a VirtualGateway selects in the clusters of its workspace (`ws`, default
 * the current one), grouped per (cluster, namespace). Ingress gateways, and egress gateways when the
 * VirtualGateway's `workloads` select them explicitly (an egress VirtualGateway selects
 * `istio: egressgateway`; a VirtualGateway without `workloads` stays on the ingress gateways).
 */
export function gatewayBindings(ctx: WorkspaceContext, vg: InputObject, ws: WorkspaceInfo = ctx.workspace): GatewayBinding[] {
  const vgNs = vg.metadata.namespace ?? ctx.index.adminNamespace;
  const selectors = asArray(asRecord(vg.spec).workloads).map((w) => asRecord(asRecord(w).selector));
  const out: GatewayBinding[] = [];
  for (const cluster of ws.clusters) {
    const owned = ws.namespaces.get(cluster) ?? [];
    const gws = (ctx.snapshot(cluster)?.gateways ?? []).filter(
      (g) =>
        (g.kind === "ingress" || (g.kind === "egress" && selectors.length > 0)) &&
        owned.includes(g.namespace) &&
        (selectors.length === 0 ||
          selectors.some((s) =>
            objectSelectorMatches(
              { name: asString(s.name), namespace: asString(s.namespace), cluster: asString(s.cluster), workspace: asString(s.workspace), ...labelSel(s) },
              { kind: "Service", name: g.name, namespace: g.namespace, cluster, labels: g.podLabels, workspace: ws.name },
            ),
          )),
    );
    const byNs = new Map<string, DiscoveredGateway[]>();
    for (const g of gws) byNs.set(g.namespace, [...(byNs.get(g.namespace) ?? []), g]);
    for (const ns of [...byNs.keys()].sort()) {
      const list = byNs.get(ns)!;
      const name = stableName("virtualgateway", vg.metadata.name, vgNs, cluster, ws.name);
      out.push({ cluster, namespace: ns, name, ref: `${ns}/${name}`, podLabels: commonLabels(list.map((g) => g.podLabels)), gateways: [...list].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) });
    }
  }
  return out;
}

function labelSel(s: Record<string, unknown>): { labels?: Labels } {
  const labels = asLabels(s.labels);
  return labels === undefined ? {} : { labels };
}

function commonLabels(all: readonly Labels[]): Labels {
  const [first, ...rest] = all;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(first ?? {})) if (rest.every((l) => l[k] === v)) out[k] = v;
  return out;
}

export function translateVirtualGateways(ctx: WorkspaceContext): TranslatorOutput {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const vg of ctx.own("VirtualGateway")) {
    const r = translateVirtualGateway(ctx, vg);
    resources.push(...r.resources);
    diagnostics.push(...r.diagnostics);
  }
  return { resources, diagnostics };
}

export function translateVirtualGateway(ctx: WorkspaceContext, vg: InputObject): TranslatorOutput {
  const diagnostics: Diagnostic[] = [];
  const spec = asRecord(vg.spec);
  diagnostics.push(...reportUnsupported(ctx, vg, spec, "/spec", ["workloads", "listeners"]));
  asArray(spec.workloads).forEach((w, i) => {
    diagnostics.push(...reportUnsupported(ctx, vg, w, `/spec/workloads/${i}`, ["selector", "kind"]));
    const kind = asString(asRecord(w).kind);
    if (kind !== undefined && kind !== "KUBE")
      diagnostics.push(ctx.diag(vg, TranslateCode.UnsupportedField, Severity.Warning, `/spec/workloads/${i}/kind`, `only KUBE gateway workloads are supported; "${kind}" is ignored.`));
  });
  const bindings = gatewayBindings(ctx, vg);
  if (bindings.length === 0) {
    diagnostics.push(
      ctx.diag(
        vg,
        TranslateCode.GatewayNotFound,
        Severity.Warning,
        "/spec/workloads",
        `VirtualGateway selects no ingress gateway in the clusters of workspace "${ctx.workspace.name}"; no Gateway is rendered. Check spec.workloads selectors against the discovered gateways and that the gateway namespace belongs to the workspace.`,
      ),
    );
  }
  const resources: Emitted[] = [];
  for (const b of bindings) {
    const gwService = (ctx.snapshot(b.cluster)?.gateways ?? []).filter((g) => g.namespace === b.namespace && labelsMatch(b.podLabels, g.podLabels));
    const servers: Record<string, unknown>[] = [];
    // port → host → the listener that serves it first (istiod keeps one server per host and port)
    const served = new Map<number, Map<string, number>>();
    asArray(spec.listeners).forEach((raw, i) => {
      const server = translateListener(ctx, vg, asRecord(raw), `/spec/listeners/${i}`, gwService, diagnostics);
      if (server === undefined) return;
      const clash = duplicateHosts(served, server, i);
      if (clash !== undefined) {
        diagnostics.push(ctx.diag(vg, TranslateCode.InvalidField, Severity.Error, `/spec/listeners/${i}`, `listener ${String(i)} serves host(s) ${clash.hosts.join(", ")} on the same gateway port as listener ${String(clash.listener)}; Istio serves one host once per port (istiod skips the duplicate server), so this listener is not rendered. Give the listeners different hosts (allowedRouteTables) or ports.`));
        return;
      }
      servers.push(server);
    });
    if (servers.length === 0) continue;
    resources.push({
      cluster: b.cluster,
      resource: {
        apiVersion: "networking.istio.io/v1",
        kind: "Gateway",
        metadata: outputMetadata(b.name, b.namespace, b.cluster, ctx.workspace.name, ctx.parentOf(vg)),
        spec: { selector: b.podLabels, servers },
      },
    });
  }
  return { resources, diagnostics: dedupe(diagnostics) };
}

/**
 * The hosts of `server` that an earlier listener already serves on its port, and that listener;
 * otherwise records the server's hosts and returns undefined. Hosts compare without their
 * namespace part (`*` + `/h` and `h` are one host for the listener).
 */
function duplicateHosts(served: Map<number, Map<string, number>>, server: Record<string, unknown>, listener: number): { hosts: string[]; listener: number } | undefined {
  const port = asNumber(asRecord(server.port).number) ?? 0;
  const hosts = asArray(server.hosts).map((h) => String(h).replace(/^[^/]*\//, ""));
  let byHost = served.get(port);
  if (byHost === undefined) served.set(port, (byHost = new Map<string, number>()));
  const clash = hosts.filter((h) => byHost.has(h));
  if (clash.length > 0) return { hosts: clash, listener: byHost.get(clash[0]!)! };
  for (const h of hosts) byHost.set(h, listener);
  return undefined;
}

/** The gateway Service port a listener names (by number, else by name), on the first gateway that has it. */
function listenerPort(l: Record<string, unknown>, gateways: readonly DiscoveredGateway[]): DiscoveredPort | undefined {
  const portSel = asRecord(l.port);
  const number = asNumber(portSel.number);
  const pname = asString(portSel.name);
  for (const g of gateways) {
    const port = g.ports.find((p) => (number !== undefined ? p.port === number : p.name === pname));
    if (port) return port;
  }
  return undefined;
}

/**
 * A listener's TLS mode, `undefined` without `tls`. Gloo's `TLSConfig.mode` is a proto enum whose
 * zero value is PASSTHROUGH, so `tls` without `mode` is PASSTHROUGH on a tcp listener (`tcp`, or
 * neither `tcp` nor `http`). On an `http` listener PASSTHROUGH cannot serve HTTP routes, and the
 * proto infers appProtocol HTTPS for "an `http` listener … if TLS settings are defined": the gateway
 * terminates TLS, i.e. SIMPLE (reported by `translateListener`, never a plain HTTP server).
 */
function listenerTlsMode(l: Record<string, unknown>): string | undefined {
  if (!isRecord(l.tls)) return undefined;
  return asString(l.tls.mode) ?? (l.http !== undefined ? "SIMPLE" : "PASSTHROUGH");
}

/** The Istio Gateway server protocol of a listener: TCP/TLS for `tcp` and passthrough, else HTTP/HTTPS. */
function listenerProtocol(l: Record<string, unknown>): "TCP" | "TLS" | "HTTP" | "HTTPS" {
  const mode = listenerTlsMode(l);
  if (l.tcp !== undefined) return mode === undefined ? "TCP" : "TLS";
  if (mode === "PASSTHROUGH" || mode === "AUTO_PASSTHROUGH") return "TLS";
  return mode === undefined ? "HTTP" : "HTTPS";
}

/**
 * The gateway pod ports (Service target ports) of a VirtualGateway's HTTP and HTTPS listeners on one
 * binding, sorted: where its HTTP requests arrive, which an AuthorizationPolicy of HTTP attributes
 * must be limited to (Istio applies such a DENY rule to every connection of the other, TCP, ports).
 */
export function httpTargetPorts(ctx: WorkspaceContext, vg: InputObject, b: GatewayBinding): number[] {
  const gateways = (ctx.snapshot(b.cluster)?.gateways ?? []).filter((g) => g.namespace === b.namespace && labelsMatch(b.podLabels, g.podLabels));
  const out = new Set<number>();
  for (const raw of asArray(asRecord(vg.spec).listeners)) {
    const l = asRecord(raw);
    const protocol = listenerProtocol(l);
    const port = protocol === "HTTP" || protocol === "HTTPS" ? listenerPort(l, gateways) : undefined;
    if (port !== undefined) out.add(typeof port.targetPort === "number" ? port.targetPort : port.port);
  }
  return [...out].sort((x, y) => x - y);
}

/**
 * Gateway Service port → the port of the rendered Gateway server (the Service's target port), for
 * the VirtualGateway's listeners on one binding. A RouteTable matcher's `port` names the listener's
 * (Service) port, while Istio compares a gateway route's port with the server port the request
 * arrived on, so gateway routes carry the server port.
 */
export function listenerServerPorts(ctx: WorkspaceContext, vg: InputObject, b: GatewayBinding): ReadonlyMap<number, number> {
  const gateways = (ctx.snapshot(b.cluster)?.gateways ?? []).filter((g) => g.namespace === b.namespace && labelsMatch(b.podLabels, g.podLabels));
  const out = new Map<number, number>();
  for (const raw of asArray(asRecord(vg.spec).listeners)) {
    const port = listenerPort(asRecord(raw), gateways);
    if (port !== undefined) out.set(port.port, typeof port.targetPort === "number" ? port.targetPort : port.port);
  }
  return out;
}

function translateListener(
  ctx: WorkspaceContext,
  vg: InputObject,
  l: Record<string, unknown>,
  path: string,
  gateways: readonly DiscoveredGateway[],
  diagnostics: Diagnostic[],
): Record<string, unknown> | undefined {
  diagnostics.push(...reportUnsupported(ctx, vg, l, path, ["port", "tls", "http", "tcp", "httpsRedirect", "allowedRouteTables", "exposedExternalServices"]));
  // Only the hosts of allowedRouteTables / exposedExternalServices are rendered (the server's hosts);
  // which tables, routes or ExternalServices may bind is not restricted: said where it is set.
  const notEnforced = (list: string, key: string, message: string) =>
    asArray(l[list]).forEach((a, j) => {
      const v = asRecord(a)[key];
      if (v !== undefined && v !== null) diagnostics.push(ctx.diag(vg, TranslateCode.UnsupportedField, Severity.Warning, `${path}/${list}/${String(j)}/${key}`, message));
    });
  notEnforced("allowedRouteTables", "selector", "allowedRouteTables[].selector is not enforced: every RouteTable visible to the workspace that names this VirtualGateway binds to the listener (for the host given here); restrict the tables by their virtualGateways instead");
  notEnforced("allowedRouteTables", "allowedRoutes", "allowedRoutes is not enforced: every route of a bound RouteTable is served on this listener");
  notEnforced("exposedExternalServices", "selector", "exposedExternalServices[].selector is not used: the listener serves the hosts given in host, for whatever routes to them");
  const portSel = asRecord(l.port);
  const number = asNumber(portSel.number);
  const pname = asString(portSel.name);
  const port = listenerPort(l, gateways);
  if (port === undefined) {
    diagnostics.push(
      ctx.diag(
        vg,
        TranslateCode.ListenerPortNotFound,
        Severity.Error,
        `${path}/port`,
        `listener port ${number ?? pname ?? "(unset)"} is not a port of the selected gateway Service; this listener is skipped. Use a port (number or name) of the gateway Service.`,
      ),
    );
    return undefined;
  }
  const target = typeof port.targetPort === "number" ? port.targetPort : port.port;
  const tls = asRecord(l.tls);
  const mode = listenerTlsMode(l);
  const protocol = listenerProtocol(l);
  if (mode !== undefined && tls.mode === undefined) diagnostics.push(unsetTlsModeDiagnostic(ctx, vg, l, `${path}/tls`, mode));
  // An egress listener serves the hosts of the ExternalServices it exposes (exposedExternalServices).
  const hostSource = asArray(l.allowedRouteTables).length > 0 ? l.allowedRouteTables : l.exposedExternalServices;
  const hosts = asArray(hostSource)
    .map((a) => asString(asRecord(a).host))
    .filter((h): h is string => h !== undefined && h !== "")
    .map((h) => (h.includes("/") ? h : `*/${h}`));
  const uniqueHosts = [...new Set(hosts)].sort();
  const server: Record<string, unknown> = {
    port: { number: target, name: sanitizeName(`${protocol.toLowerCase()}-${target}-${uniqueHosts.length === 0 ? "all" : uniqueHosts[0]!.replace(/^[^/]*\//, "")}`), protocol },
    hosts: uniqueHosts.length === 0 ? ["*"] : uniqueHosts,
  };
  if (mode !== undefined) {
    if (!(TLS_MODES as readonly string[]).includes(mode)) {
      diagnostics.push(ctx.diag(vg, TranslateCode.InvalidField, Severity.Error, `${path}/tls/mode`, `unknown TLS mode "${mode}"; use one of ${TLS_MODES.join(", ")}. The listener is skipped.`));
      return undefined;
    }
    diagnostics.push(...reportUnsupported(ctx, vg, tls, `${path}/tls`, ["mode", "secretName", "parameters"]));
    const secret = asString(tls.secretName);
    if ((mode === "SIMPLE" || mode === "MUTUAL") && secret === undefined) {
      diagnostics.push(ctx.diag(vg, TranslateCode.InvalidField, Severity.Error, `${path}/tls/secretName`, `TLS mode ${mode} needs tls.secretName (a Secret in the gateway namespace holding the certificate); the listener is skipped.`));
      return undefined;
    }
    const params = tlsParameters(ctx, vg, mode, tls.parameters, `${path}/tls/parameters`, diagnostics);
    if (params === undefined) return undefined;
    server.tls = { mode, ...(secret === undefined || mode === "PASSTHROUGH" || mode === "AUTO_PASSTHROUGH" ? {} : { credentialName: secret }), ...params };
  } else if (l.httpsRedirect === true) {
    server.tls = { httpsRedirect: true };
  }
  return server;
}

/** What an unset `tls.mode` became (listenerTlsMode), said where the listener is. */
function unsetTlsModeDiagnostic(ctx: WorkspaceContext, vg: InputObject, l: Record<string, unknown>, path: string, mode: string): Diagnostic {
  if (mode === "SIMPLE") {
    return ctx.diag(vg, TranslateCode.InvalidField, Severity.Warning, path, "tls.mode is not set on this http listener: Gloo's proto default is PASSTHROUGH, which cannot serve HTTP routes, and an http listener with TLS settings is HTTPS, so gitmesh terminates TLS here as SIMPLE with tls.secretName. Set mode: SIMPLE (or MUTUAL) to say so.");
  }
  const secret = isRecord(l.tls) && l.tls.secretName !== undefined ? " tls.secretName is ignored (nothing terminates TLS)." : "";
  return ctx.diag(vg, TranslateCode.InvalidField, Severity.Warning, path, `tls.mode is not set on this tcp listener: Gloo's proto default PASSTHROUGH applies (connections are routed by SNI, still encrypted).${secret} Set mode explicitly.`);
}

/** Gloo `TLSConfig.Parameters.ProtocolVersion` → Istio `ServerTLSSettings.TLSProtocol`, in increasing order (TLS_AUTO first). */
const TLS_VERSIONS: Readonly<Record<string, string>> = { TLS_AUTO: "TLS_AUTO", TLSv1_0: "TLSV1_0", TLSv1_1: "TLSV1_1", TLSv1_2: "TLSV1_2", TLSv1_3: "TLSV1_3" };
const VERSION_ORDER = ["TLSv1_0", "TLSv1_1", "TLSv1_2", "TLSv1_3"];

/**
 * Listener `tls.parameters` → Istio `servers[].tls.{minProtocolVersion, maxProtocolVersion, cipherSuites}`.
 * Returns undefined (listener skipped, error reported) when the parameters cannot be enforced as
 * written: a gateway that should refuse old TLS versions must not come up accepting them.
 * - Gloo's CRD requires `cipherSuites` when the minimum is TLSv1_0 or TLSv1_1 (virtual_gateway.proto
 *   CEL rules on `Parameters`); Istio documents the same requirement ("TLS protocol versions below
 *   TLSV1_2 require setting compatible ciphers").
 * - A maximum below the minimum accepts no connection at all.
 * - PASSTHROUGH / AUTO_PASSTHROUGH: the gateway does not terminate TLS, so it cannot enforce versions
 *   or ciphers; reported as an error (a security setting that is not enforced), the listener is kept.
 */
function tlsParameters(ctx: WorkspaceContext, vg: InputObject, mode: string, raw: unknown, path: string, diagnostics: Diagnostic[]): Record<string, unknown> | undefined {
  if (raw === undefined || raw === null) return {};
  const p = asRecord(raw);
  diagnostics.push(...reportUnsupported(ctx, vg, p, path, ["minimumProtocolVersion", "maximumProtocolVersion", "cipherSuites"]));
  const min = asString(p.minimumProtocolVersion);
  const max = asString(p.maximumProtocolVersion);
  const ciphers = asArray(p.cipherSuites).filter((c): c is string => typeof c === "string" && c !== "");
  if (mode === "PASSTHROUGH" || mode === "AUTO_PASSTHROUGH") {
    if (min !== undefined || max !== undefined || ciphers.length > 0)
      diagnostics.push(
        ctx.diag(vg, TranslateCode.InvalidField, Severity.Error, path, `TLS mode ${mode} does not terminate TLS at the gateway, so tls.parameters (protocol versions, cipher suites) cannot be enforced there and are NOT applied. Terminate TLS at the gateway (mode SIMPLE or MUTUAL) or enforce them on the backend, and remove tls.parameters.`),
      );
    return {};
  }
  for (const [k, v] of [["minimumProtocolVersion", min], ["maximumProtocolVersion", max]] as const) {
    if (v !== undefined && TLS_VERSIONS[v] === undefined) {
      diagnostics.push(ctx.diag(vg, TranslateCode.InvalidField, Severity.Error, `${path}/${k}`, `unknown TLS protocol version "${v}"; use one of ${Object.keys(TLS_VERSIONS).join(", ")}. The listener is skipped.`));
      return undefined;
    }
  }
  if ((min === "TLSv1_0" || min === "TLSv1_1") && ciphers.length === 0) {
    diagnostics.push(ctx.diag(vg, TranslateCode.InvalidField, Severity.Error, `${path}/cipherSuites`, `minimumProtocolVersion ${min} needs cipherSuites (versions below TLSv1_2 have no compatible default ciphers); the listener is skipped. Set cipherSuites or raise the minimum.`));
    return undefined;
  }
  if (min !== undefined && max !== undefined && VERSION_ORDER.includes(min) && VERSION_ORDER.includes(max) && VERSION_ORDER.indexOf(max) < VERSION_ORDER.indexOf(min)) {
    diagnostics.push(ctx.diag(vg, TranslateCode.InvalidField, Severity.Error, `${path}/maximumProtocolVersion`, `maximumProtocolVersion ${max} is below minimumProtocolVersion ${min}: no client could connect. The listener is skipped; fix the range.`));
    return undefined;
  }
  return {
    ...(min === undefined ? {} : { minProtocolVersion: TLS_VERSIONS[min] }),
    ...(max === undefined ? {} : { maxProtocolVersion: TLS_VERSIONS[max] }),
    ...(ciphers.length === 0 ? {} : { cipherSuites: [...new Set(ciphers)] }),
  };
}

function dedupe(list: readonly Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return list.filter((d) => {
    const k = `${d.code}|${d.path ?? ""}|${d.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
