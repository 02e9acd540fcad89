/**
 * Egress through an egress gateway: ExternalService `ports[].egressGatewayRoutes` resolved against
 * egress VirtualGateways (listeners with `exposedExternalServices`, workloads selecting
 * `istio: egressgateway`). Shared by the ExternalService translator (which renders the routing) and
 * the AccessPolicy translator (which enforces access on the egress gateway, the only place Istio
 * can: an AuthorizationPolicy applies to the workload that receives the request).
 *
 * Gloo (external_service.proto, gloo-mesh-v2.6.x): `egressGatewayRoutes` — "A list of egress
 * VirtualGateways via which this ExternalService is reachable"; `portMatch` — "The port number to
 * match for traffic originating from the mesh. default to 80."; `virtualGatewayRefs` — "Multiple
 * gateways selected in this way will have egress traffic load-balanced across them."
 * (virtual_gateway.proto) `exposedExternalServices` — "If empty or omitted, any ExternalService is
 * exposed by this VirtualGateway."
 */
import { Severity, type Diagnostic } from "../core/index.js";
import type { WorkspaceContext } from "./context.js";
import type { InputObject } from "./input.js";
import { asArray, asNumber, asRecord, asString } from "./selectors.js";
import { TranslateCode } from "./types.js";
import { gatewayBindings, type GatewayBinding } from "./virtual-gateway.js";

/** One egress path of one ExternalService port through one egress gateway (one cluster, one gateway namespace). */
export interface EgressRoute {
  /** Index of the ExternalService port. */
  readonly portIndex: number;
  /** The ExternalService port number: the port of the final hop, gateway → external host. */
  readonly esPort: number;
  /** The port clients in the mesh send to (`portMatch`, default 80). */
  readonly portMatch: number;
  readonly virtualGateway: InputObject;
  readonly binding: GatewayBinding;
  /** Host of the gateway Service (`<svc>.<ns>.svc.cluster.local`). */
  readonly gatewayHost: string;
  /** Port of the gateway Service the listener uses: sidecar → gateway. */
  readonly servicePort: number;
  /** Port the gateway pod listens on (the Gateway server's port): the VirtualService match port at the gateway. */
  readonly listenerPort: number;
  /** The listener terminates Istio mTLS (tls.mode ISTIO_MUTUAL): clients need the SNI of the external host. */
  readonly istioMutual: boolean;
}

/**
 * Every egress path of `es` in every cluster. Problems (unknown VirtualGateway, no egress gateway,
 * no listener exposing the ExternalService) are reported into `diagnostics` when it is given.
 */
export function egressRoutes(ctx: WorkspaceContext, es: InputObject, diagnostics?: Diagnostic[]): EgressRoute[] {
  const spec = asRecord(es.spec);
  const esNs = es.metadata.namespace ?? ctx.index.adminNamespace;
  const hosts = asArray(spec.hosts).filter((h): h is string => typeof h === "string" && h !== "");
  const out: EgressRoute[] = [];
  asArray(spec.ports).forEach((raw, i) => {
    const p = asRecord(raw);
    const esPort = asNumber(p.number);
    if (p.egressGatewayRoutes === undefined || p.egressGatewayRoutes === null || esPort === undefined) return;
    const routes = asRecord(p.egressGatewayRoutes);
    const portMatch = asNumber(routes.portMatch) ?? 80;
    const path = `/spec/ports/${i}/egressGatewayRoutes`;
    asArray(routes.virtualGatewayRefs).forEach((r, j) => {
      const ref = asRecord(r);
      const name = asString(ref.name);
      const ns = asString(ref.namespace) ?? esNs;
      const cl = asString(ref.cluster);
      const vg = (ctx.index.byKind.get("VirtualGateway") ?? []).find((v) => v.metadata.name === name && (v.metadata.namespace ?? ctx.index.adminNamespace) === ns && (cl === undefined || v.cluster === undefined || v.cluster === cl));
      if (vg === undefined) {
        diagnostics?.push(ctx.diag(es, TranslateCode.VirtualGatewayNotFound, Severity.Error, `${path}/virtualGatewayRefs/${j}`, `VirtualGateway ${ns}/${name ?? "(no name)"} does not exist; this port is not routed through an egress gateway (its clients reach the host directly). Fix the reference.`));
        return;
      }
      const owner = ctx.index.workspaces.get(ctx.ownerOf(vg));
      const bindings = owner === undefined ? [] : gatewayBindings(ctx, vg, owner).filter((b) => (cl === undefined || b.cluster === cl) && b.gateways.some((g) => g.kind === "egress"));
      if (bindings.length === 0) {
        diagnostics?.push(ctx.diag(es, TranslateCode.GatewayNotFound, Severity.Error, `${path}/virtualGatewayRefs/${j}`, `VirtualGateway ${ns}/${vg.metadata.name} selects no discovered egress gateway (a Service labelled istio: egressgateway in a namespace of its workspace); this port is not routed through an egress gateway. Check its workloads selector.`));
        return;
      }
      const listener = exposingListener(vg, hosts, esNs);
      if (listener === undefined) {
        diagnostics?.push(ctx.diag(es, TranslateCode.RouteTableNotAllowed, Severity.Error, `${path}/virtualGatewayRefs/${j}`, `no listener of VirtualGateway ${ns}/${vg.metadata.name} exposes this ExternalService (listeners[].exposedExternalServices); this port is not routed through it. Add its host to exposedExternalServices.`));
        return;
      }
      for (const b of bindings) {
        const gw = b.gateways.find((g) => g.kind === "egress") ?? b.gateways[0]!;
        const portSel = asRecord(listener.port);
        const number = asNumber(portSel.number);
        const pname = asString(portSel.name);
        const port = gw.ports.find((x) => (number !== undefined ? x.port === number : x.name === pname));
        if (port === undefined) {
          diagnostics?.push(ctx.diag(es, TranslateCode.ListenerPortNotFound, Severity.Error, `${path}/virtualGatewayRefs/${j}`, `the listener of VirtualGateway ${ns}/${vg.metadata.name} that exposes this ExternalService uses port ${number ?? pname ?? "(unset)"}, which egress gateway ${gw.namespace}/${gw.name} in cluster "${b.cluster}" does not have; not routed there.`));
          continue;
        }
        out.push({
          portIndex: i,
          esPort,
          portMatch,
          virtualGateway: vg,
          binding: b,
          gatewayHost: `${gw.name}.${gw.namespace}.svc.cluster.local`,
          servicePort: port.port,
          listenerPort: typeof port.targetPort === "number" ? port.targetPort : port.port,
          istioMutual: asString(asRecord(listener.tls).mode) === "ISTIO_MUTUAL",
        });
      }
    });
  });
  return out;
}

/** The first listener of `vg` that exposes an ExternalService with one of `hosts` (no filter exposes all). */
function exposingListener(vg: InputObject, hosts: readonly string[], esNs: string): Record<string, unknown> | undefined {
  const vgNs = vg.metadata.namespace ?? "";
  return asArray(asRecord(vg.spec).listeners)
    .map(asRecord)
    .find((l) => {
      const filters = asArray(l.exposedExternalServices).map(asRecord);
      if (filters.length === 0) return true;
      return filters.some((f) => {
        const raw = asString(f.host) ?? "";
        const slash = raw.indexOf("/");
        const nsPart = slash >= 0 ? raw.slice(0, slash) : "*";
        const pattern = slash >= 0 ? raw.slice(slash + 1) : raw;
        const nsOk = nsPart === "*" || nsPart === esNs || (nsPart === "." && esNs === vgNs);
        return nsOk && hosts.some((h) => pattern === "*" || pattern === h || (pattern.startsWith("*.") && h.endsWith(pattern.slice(1))));
      });
    });
}
