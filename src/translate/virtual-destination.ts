/**
 * VirtualDestination → per client cluster a ServiceEntry (global hosts, a stable synthetic address
 * in 240.0.0.0/4, ports), remote endpoints through each backing cluster's east-west gateway, and a
 * DestinationRule per host (ISTIO_MUTUAL + SPIFFE subjectAltNames of the backing service accounts,
 * plus the destination policies that select the VirtualDestination).
 *
 * Client clusters: every cluster where the owning workspace or a workspace that imports the
 * VirtualDestination has namespaces; `exportTo` = those workspaces' namespaces there (+ the
 * east-west gateway namespaces of a backing cluster, which must see the entry to pass traffic on).
 *
 * Endpoints in a client cluster C:
 * - C has a backing Service: the ServiceEntry lives in that Service's namespace and selects its
 *   pods (`workloadSelector` = the Service's selector); every other backing cluster becomes a
 *   WorkloadEntry with the same labels, pointing at that cluster's east-west gateway
 *   (`<name>-<cluster>-<address>`, ports → 15443, locality = the gateway's region only, label
 *   `security.istio.io/tlsMode: istio`; see `TLS_MODE_LABEL`).
 * - otherwise: `endpoints` on the ServiceEntry (one per east-west gateway address of each backing
 *   cluster), resolution STATIC when all addresses are IPs, DNS otherwise; the entry lives in the
 *   VirtualDestination's namespace when present in C, else the first consuming namespace.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import { consumersOf,
  DestinationCode,
  addressTable,
  cmpStr,
  eastWestEndpoints,
  effectiveOptions,
  gatewayEntryEndpoints,
  gatewayPorts,
  istioProtocol,
  namespacesIn,
  objectSelector,
  portName,
  selectServices,
  serviceAccountsOf,
  spiffe,
  trustDomainOf,
  vdIdentity,
  type GatewayEndpoint,
  type ServiceRef,
} from "./destination-common.js";
import { destinationTrafficPolicy } from "./destination-policies.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { asArray, asNumber, asRecord, asString } from "./selectors.js";
import { ListTable, SpecTable } from "./spec-table.js";
import { TranslateCode, type Emitted, type TranslatorOutput } from "./types.js";

interface VdPort {
  readonly number: number;
  readonly protocol: string;
  readonly name: string;
  readonly targetName: string | undefined;
  readonly targetNumber: number | undefined;
}

export function translateVirtualDestinations(ctx: WorkspaceContext): TranslatorOutput {
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const vd of ctx.own("VirtualDestination")) {
    const out = translateOne(ctx, vd);
    resources.push(...out.resources);
    diagnostics.push(...out.diagnostics);
  }
  return { resources, diagnostics };
}

/**
 * The server that lets other clusters in: on each east-west gateway of a backing cluster that a
 * client in another cluster reaches, a Gateway with an AUTO_PASSTHROUGH server on the gateway pod
 * port behind the "tls" (15443) Service port, for the VirtualDestination's hosts (Gloo renders
 * "E/W Gateway: servers[{port: "tls", tls: AUTO_PASSTHROUGH}]"). Without it the gateway has no
 * listener for the SNI `outbound_.<port>_._.<host>` the clients send (Istio's stock
 * cross-network gateway serves `*.local` only). istiod builds one filter chain per Service port
 * whose host is a subset of a server host (SNI = the cluster name, Istio mTLS ALPNs only).
 */
function eastWestServers(ctx: WorkspaceContext, vd: InputObject, hosts: readonly string[], backingClusters: readonly string[], clients: ReadonlySet<string>, gateways: ReadonlyMap<string, readonly GatewayEndpoint[]>): Emitted[] {
  const ws = ctx.workspace.name;
  const vdNs = vd.metadata.namespace ?? ctx.index.adminNamespace;
  const out: Emitted[] = [];
  for (const cluster of backingClusters) {
    if (![...clients].some((c) => c !== cluster)) continue;
    const seen = new Set<string>();
    for (const ep of gateways.get(cluster) ?? []) {
      const port = ep.serverPort;
      const g = ep.gateway;
      const key = `${g.namespace}/${g.name}`;
      if (port === undefined || seen.has(key)) continue;
      seen.add(key);
      const name = stableName("eastwest", vd.metadata.name, vdNs, g.name, cluster, ws);
      const spec = {
        selector: g.podLabels,
        servers: [{ hosts: [...hosts].sort(cmpStr), port: { name: `tls-${String(port)}`, number: port, protocol: "TLS" }, tls: { mode: "AUTO_PASSTHROUGH" } }],
      };
      out.push({ cluster, resource: { apiVersion: "networking.istio.io/v1", kind: "Gateway", metadata: outputMetadata(name, g.namespace, cluster, ws, ctx.parentOf(vd)), spec } });
    }
  }
  return out;
}

function translateOne(ctx: WorkspaceContext, vd: InputObject): TranslatorOutput {
  const ws = ctx.workspace.name;
  const spec = asRecord(vd.spec);
  const diagnostics: Diagnostic[] = reportUnsupported(ctx, vd, spec, "/spec", ["hosts", "services", "ports", "clientMode"]);
  const hosts = asArray(spec.hosts).filter((h): h is string => typeof h === "string" && h !== "");
  const ports: VdPort[] = asArray(spec.ports).flatMap((raw) => {
    const p = asRecord(raw);
    const number = asNumber(p.number);
    if (number === undefined) return [];
    const protocol = istioProtocol(asString(p.protocol));
    const tp = asRecord(p.targetPort);
    return [{ number, protocol, name: portName(protocol, number), targetName: asString(tp.name), targetNumber: asNumber(tp.number) }];
  });
  if (hosts.length === 0 || ports.length === 0) {
    diagnostics.push(ctx.diag(vd, TranslateCode.InvalidField, Severity.Error, hosts.length === 0 ? "/spec/hosts" : "/spec/ports", "a VirtualDestination needs at least one host and one port; nothing is rendered for it."));
    return { resources: [], diagnostics };
  }
  if (hosts.some((h) => h.includes("*"))) {
    diagnostics.push(ctx.diag(vd, TranslateCode.InvalidField, Severity.Error, "/spec/hosts", "VirtualDestination hosts cannot contain wildcards; nothing is rendered for it."));
    return { resources: [], diagnostics };
  }

  // backing services: at most one per cluster (first by namespace, name)
  const backing = new Map<string, ServiceRef>();
  asArray(spec.services).forEach((raw, i) => {
    for (const ref of selectServices(ctx, objectSelector(raw))) {
      const prev = backing.get(ref.cluster);
      if (prev === undefined) backing.set(ref.cluster, ref);
      else if (prev.service.namespace !== ref.service.namespace || prev.service.name !== ref.service.name) {
        const [keep, drop] = cmpStr(`${prev.service.namespace}/${prev.service.name}`, `${ref.service.namespace}/${ref.service.name}`) <= 0 ? [prev, ref] : [ref, prev];
        backing.set(ref.cluster, keep);
        diagnostics.push(
          ctx.diag(vd, DestinationCode.DuplicateBackingService, Severity.Warning, `/spec/services/${i}`,
            `cluster "${ref.cluster}" has two backing Services (${keep.service.namespace}/${keep.service.name} and ${drop.service.namespace}/${drop.service.name}); only the first is used. Narrow the selector to one Service per cluster.`),
        );
      }
    }
  });
  if (backing.size === 0) {
    diagnostics.push(ctx.diag(vd, TranslateCode.SelectsNothing, Severity.Warning, "/spec/services", `the VirtualDestination selects no Service visible to workspace "${ws}" in any cluster; nothing is rendered for it.`));
    return { resources: [], diagnostics };
  }
  const backingClusters = [...backing.keys()].sort(cmpStr);

  const mode = asRecord(spec.clientMode ?? effectiveOptions(ctx).virtualDestClientMode);
  const tlsTermination = mode.tlsTermination !== undefined;

  // identity: SPIFFE names of every backing service account
  const sans = new Set<string>();
  for (const cluster of backingClusters) {
    const ref = backing.get(cluster)!;
    const snap = ctx.snapshot(cluster);
    const td = trustDomainOf(snap);
    if (td === undefined) {
      diagnostics.push(ctx.diag(vd, DestinationCode.NoMesh, Severity.Warning, "/spec/services", `cluster "${cluster}" reports no Istio mesh, so the trust domain of ${ref.service.namespace}/${ref.service.name} is unknown; its service accounts are left out of subjectAltNames.`));
      continue;
    }
    for (const sa of serviceAccountsOf(snap, ref.service)) sans.add(spiffe(td, ref.service.namespace, sa));
  }

  // endpoints of each backing cluster, seen from elsewhere
  const gateways = new Map<string, GatewayEndpoint[]>();
  for (const cluster of backingClusters) {
    const eps = eastWestEndpoints(ctx, cluster, tlsTermination);
    gateways.set(cluster, eps);
  }

  const alloc = addressTable(ctx.index).get(vdIdentity(vd, ctx.index.adminNamespace));
  if (alloc?.collidedWith !== undefined) {
    diagnostics.push(ctx.diag(vd, DestinationCode.AddressCollision, Severity.Warning, "/metadata/name", `the synthetic address of this VirtualDestination collided with "${alloc.collidedWith}"; it was re-hashed to ${alloc.address}.`));
  }
  const addresses = alloc === undefined ? [] : [alloc.address];

  const vdNs = vd.metadata.namespace ?? ctx.index.adminNamespace;
  const parent = ctx.parentOf(vd);
  const baseName = stableName("vd", vd.metadata.name, vdNs, vd.cluster ?? "", ws);
  const consumers = consumersOf(ctx, ctx.selectable(vd));
  const clients = new Set<string>();
  for (const w of [ws, ...consumers]) for (const c of ctx.index.workspaces.get(w)?.clusters ?? []) clients.add(c);
  const resources: Emitted[] = [];
  const portNumbers = ports.map((p) => p.number);
  const { trafficPolicy } = destinationTrafficPolicy(ctx, vd.key, portNumbers, {
    tls: { mode: "ISTIO_MUTUAL", ...(sans.size > 0 ? { subjectAltNames: [...sans].sort() } : {}) },
  });
  const missingGateway = new Set<string>();
  const portNames = ports.map((p) => p.name).sort(cmpStr);
  // Per gateway endpoint, the entry's spec per selector of the client cluster's local Service.
  const entrySpecs = new SpecTable<SpecTable>();
  const exportLists = new ListTable();
  const serviceEntrySpecs = new SpecTable();
  const ruleSpecs = new SpecTable();

  for (const cluster of [...clients].sort(cmpStr)) {
    const local = backing.get(cluster);
    const exportTo = new Set(namespacesIn(ctx.index, cluster, [ws, ...consumers]));
    if (local !== undefined) for (const g of ctx.snapshot(cluster)?.gateways ?? []) if (g.kind === "east-west") exportTo.add(g.namespace);
    // Clusters with the same exportTo share the list, so that their specs can be shared (SpecTable).
    const { items: exportList, key: exportKey } = exportLists.intern([...exportTo].sort(cmpStr));
    const remote: GatewayEndpoint[] = [];
    for (const c of backingClusters) {
      if (c === cluster) continue;
      const eps = gateways.get(c) ?? [];
      if (eps.length === 0) missingGateway.add(c);
      remote.push(...eps);
    }
    if (local === undefined && remote.length === 0) continue;
    const namespace = local?.service.namespace ?? (exportList.includes(vdNs) ? vdNs : exportList[0]);
    if (namespace === undefined) continue;
    const meta = (name: string) => outputMetadata(name, namespace, cluster, ws, parent);

    const sePorts = ports.map((p) => {
      const out: Record<string, unknown> = { name: p.name, number: p.number, protocol: p.protocol };
      if (local !== undefined) {
        const tp = targetPortOf(local, p);
        if (typeof tp === "number") out.targetPort = tp;
        else if (typeof tp === "string") {
          diagnostics.push(ctx.diag(vd, DestinationCode.NamedTargetPort, Severity.Warning, "/spec/ports",
            `Service ${local.service.namespace}/${local.service.name} in cluster "${cluster}" sends port ${p.number} to the named container port "${tp}", whose number discovery does not report; the ServiceEntry keeps port ${p.number}. Give the Service a numeric targetPort.`));
        }
      }
      return out;
    });
    const selector = local?.service.selector ?? {};
    if (local !== undefined) {
      const selectorKey = JSON.stringify(selector);
      for (const ep of remote) {
        // The same gateway endpoint's entry in every client cluster whose local Service selects the same pods: one spec (SpecTable).
        const specs = entrySpecs.get(ep, () => new SpecTable());
        resources.push({
          cluster,
          resource: {
            apiVersion: "networking.istio.io/v1",
            kind: "WorkloadEntry",
            metadata: meta(stableName(baseName, ep.cluster, ep.address)),
            spec: specs.get(selectorKey, () => ({ address: ep.address, labels: { ...selector, [TLS_MODE_LABEL]: "istio" }, ...(ep.locality === undefined ? {} : { locality: regionOf(ep.locality) }), ports: gatewayPorts(ep, portNames) })),
          },
        });
      }
    }
    // Local backing: the entry selects the local workloads (plus WorkloadEntries above); otherwise it lists the gateways.
    const remoteEntries = local === undefined ? gatewayEntryEndpoints(remote, portNames) : undefined;
    // Keys in canonical (code-unit) order: the canonical form is this object, not a copy.
    const makeSeSpec = (): Record<string, unknown> => ({
      addresses,
      ...(remoteEntries === undefined ? {} : { endpoints: remoteEntries.endpoints }),
      exportTo: exportList,
      hosts,
      location: "MESH_INTERNAL",
      ports: sePorts,
      resolution: remoteEntries?.resolution ?? "STATIC",
      ...(local === undefined ? {} : { workloadSelector: { labels: selector } }),
    });
    // With a local backing the entry is made of the exportTo, the ports and the selector (one spec per
    // distinct content); without one, of this cluster's view of the remote gateways (built each time).
    const seSpec = local === undefined ? makeSeSpec() : serviceEntrySpecs.get(`${exportKey}\n${JSON.stringify(sePorts)}\n${JSON.stringify(selector)}`, makeSeSpec);
    resources.push({ cluster, resource: { apiVersion: "networking.istio.io/v1", kind: "ServiceEntry", metadata: meta(baseName), spec: seSpec } });
    for (const host of hosts) {
      const drSpec = ruleSpecs.get(`${exportKey}\n${host}`, () => (trafficPolicy === undefined ? { exportTo: exportList, host } : { exportTo: exportList, host, trafficPolicy }));
      resources.push({
        cluster,
        resource: { apiVersion: "networking.istio.io/v1", kind: "DestinationRule", metadata: meta(hosts.length === 1 ? baseName : stableName(baseName, host)), spec: drSpec },
      });
    }
  }
  if (!tlsTermination) resources.push(...eastWestServers(ctx, vd, hosts, backingClusters, clients, gateways));
  else if (backingClusters.some((b) => [...clients].some((c) => c !== b))) {
    // Gloo terminates the clients' mTLS on the east-west gateway's https port and routes by host there;
    // gitmesh renders no such server, so nothing in a backing cluster answers the clients' connections.
    diagnostics.push(
      ctx.diag(vd, TranslateCode.UnsupportedField, Severity.Warning, spec.clientMode !== undefined ? "/spec/clientMode/tlsTermination" : "/spec",
        `clientMode tlsTermination${spec.clientMode !== undefined ? "" : " (the workspace's virtualDestClientMode)"}: clients in other clusters are sent to the east-west gateway's "https" port, but gitmesh renders no server there that terminates their TLS and routes ${hosts.join(", ")} to the backing Services (Gloo does): those cross-cluster requests fail. Use the default client mode (AUTO_PASSTHROUGH on port "tls", 15443).`),
    );
  }
  for (const c of [...missingGateway].sort(cmpStr)) {
    diagnostics.push(ctx.diag(vd, DestinationCode.NoEastWestGateway, Severity.Warning, "/spec/services",
      `backing cluster "${c}" has no east-west gateway with a ${tlsTermination ? '"https"' : '"tls" (15443)'} port and an address, so other clusters cannot reach its endpoints. Install an east-west gateway there or set eastWestGateways in WorkspaceSettings.`));
  }
  return { resources, diagnostics };
}

/**
 * WorkloadEntries of remote backing clusters, as Gloo renders them (a published Gloo-generated
 * WorkloadEntry, solo-io workshop notes: `locality: us-east-1`, ports `http-9080: 15443`): the
 * locality is the region only — the east-west gateway's zone says nothing about the zone of the pods
 * behind it, which the gateway load-balances over — and the endpoint carries Istio's
 * `security.istio.io/tlsMode: istio` label, as Istio's own multi-network WorkloadEntries do, so that
 * sidecars use Istio mTLS to it (auto mTLS) even where a DestinationRule sets no TLS.
 */
const TLS_MODE_LABEL = "security.istio.io/tlsMode";

function regionOf(locality: string): string {
  return locality.split("/")[0] ?? locality;
}

/** The backing Service's target port for a VirtualDestination port (by target name/number, else by the port number). */
function targetPortOf(ref: ServiceRef, p: VdPort): number | string | undefined {
  const ports = ref.service.ports;
  const sp =
    (p.targetName !== undefined ? ports.find((x) => x.name === p.targetName) : undefined) ??
    (p.targetNumber !== undefined ? ports.find((x) => x.port === p.targetNumber) : undefined) ??
    ports.find((x) => x.port === p.number) ??
    (ports.length === 1 ? ports[0] : undefined);
  if (sp === undefined) return p.targetNumber;
  return sp.targetPort ?? sp.port;
}
