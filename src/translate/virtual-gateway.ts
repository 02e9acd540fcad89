/**
 * VirtualGateway → Istio Gateway, one per (cluster, gateway namespace) whose discovered gateway
 * workloads the VirtualGateway selects. One server per listener: the port number is the gateway
 * Service's targetPort (what the Envoy pod listens on), TLS modes map one to one with
 * `credentialName` = `secretName`, hosts come from `allowedRouteTables[].host` or `*`.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import type { DiscoveredGateway, DiscoveredPort, InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { sanitizeName, stableName } from "./names.js";
import { asArray, asLabels, asNumber, asRecord, asString, labelsMatch, objectSelectorMatches, type Labels } from "./selectors.js";
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
}

/** The discovered gateways a VirtualGateway selects in the workspace's clusters, grouped per (cluster, namespace). */
export function gatewayBindings(ctx: WorkspaceContext, vg: InputObject): GatewayBinding[] {
  const ws = ctx.workspace;
  const vgNs = vg.metadata.namespace ?? ctx.index.adminNamespace;
  const selectors = asArray(asRecord(vg.spec).workloads).map((w) => asRecord(asRecord(w).selector));
  const out: GatewayBinding[] = [];
  for (const cluster of ws.clusters) {
    const owned = ws.namespaces.get(cluster) ?? [];
    const gws = (ctx.snapshot(cluster)?.gateways ?? []).filter(
      (g) =>
        g.kind === "ingress" &&
        owned.includes(g.namespace) &&
        (selectors.length === 0 ||
          selectors.some((s) =>
            objectSelectorMatches(
              { name: asString(s.name), namespace: asString(s.namespace), cluster: asString(s.cluster), ...labelSel(s) },
              { kind: "Service", name: g.name, namespace: g.namespace, cluster, labels: g.podLabels, workspace: ws.name },
            ),
          )),
    );
    const byNs = new Map<string, DiscoveredGateway[]>();
    for (const g of gws) byNs.set(g.namespace, [...(byNs.get(g.namespace) ?? []), g]);
    for (const ns of [...byNs.keys()].sort()) {
      const list = byNs.get(ns)!;
      const name = stableName("virtualgateway", vg.metadata.name, vgNs, cluster, ws.name);
      out.push({ cluster, namespace: ns, name, ref: `${ns}/${name}`, podLabels: commonLabels(list.map((g) => g.podLabels)) });
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
    asArray(spec.listeners).forEach((raw, i) => {
      const server = translateListener(ctx, vg, asRecord(raw), `/spec/listeners/${i}`, gwService, diagnostics);
      if (server !== undefined) servers.push(server);
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

function translateListener(
  ctx: WorkspaceContext,
  vg: InputObject,
  l: Record<string, unknown>,
  path: string,
  gateways: readonly DiscoveredGateway[],
  diagnostics: Diagnostic[],
): Record<string, unknown> | undefined {
  diagnostics.push(...reportUnsupported(ctx, vg, l, path, ["port", "tls", "http", "tcp", "httpsRedirect", "allowedRouteTables"]));
  const portSel = asRecord(l.port);
  const number = asNumber(portSel.number);
  const pname = asString(portSel.name);
  let port: DiscoveredPort | undefined;
  for (const g of gateways) {
    port = g.ports.find((p) => (number !== undefined ? p.port === number : p.name === pname));
    if (port) break;
  }
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
  const mode = asString(tls.mode);
  let protocol: string;
  if (l.tcp !== undefined) protocol = mode === undefined ? "TCP" : "TLS";
  else if (mode === "PASSTHROUGH" || mode === "AUTO_PASSTHROUGH") protocol = "TLS";
  else protocol = mode === undefined ? "HTTP" : "HTTPS";
  const hosts = asArray(l.allowedRouteTables)
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
    diagnostics.push(...reportUnsupported(ctx, vg, tls, `${path}/tls`, ["mode", "secretName"]));
    const secret = asString(tls.secretName);
    if ((mode === "SIMPLE" || mode === "MUTUAL") && secret === undefined) {
      diagnostics.push(ctx.diag(vg, TranslateCode.InvalidField, Severity.Error, `${path}/tls/secretName`, `TLS mode ${mode} needs tls.secretName (a Secret in the gateway namespace holding the certificate); the listener is skipped.`));
      return undefined;
    }
    server.tls = { mode, ...(secret === undefined ? {} : { credentialName: secret }) };
  } else if (l.httpsRedirect === true) {
    server.tls = { httpsRedirect: true };
  }
  return server;
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
