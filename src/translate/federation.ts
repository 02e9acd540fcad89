/**
 * WorkspaceSettings `options.federation` → cross-cluster hostnames for the selected Services the
 * workspace owns. Host format (documented choice):
 *   - no `hostSuffix`:  `<svc>.<ns>.svc.<cluster>.global`  (Gloo Mesh v1 default, observed in v2)
 *   - `hostSuffix: S`:  `<svc>.<ns>.<cluster>.<S>`          (the 2.6 proto's documented format)
 *
 * Per federated (Service, cluster of the Service) and per client cluster (clusters of this
 * workspace and of every workspace importing the Service):
 *   - a ServiceEntry `federation-<svc>-<ns>-<cluster>-<ws>` with that host, a stable synthetic
 *     address (240.0.0.0/4), the Service's ports (filtered by `federation.ports`);
 *     in the Service's own cluster it selects the pods (`workloadSelector`), elsewhere its
 *     endpoints are the Service cluster's east-west gateway (port 15443, locality);
 *   - a DestinationRule with ISTIO_MUTUAL and the SPIFFE names of the Service's accounts.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import type { WorkspaceContext } from "./context.js";
import { consumersOf,
  DestinationCode,
  addressTable,
  cmpStr,
  eastWestEndpoints,
  effectiveOptions,
  federationIdentity,
  gatewayEntryEndpoints,
  istioProtocol,
  namespacesIn,
  namespaceOwner,
  objectSelector,
  portName,
  serviceAccountsOf,
  spiffe,
  trustDomainOf,
  type GatewayEndpoint,
} from "./destination-common.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { ListTable, SpecTable, type SharedList } from "./spec-table.js";
import { asArray, asNumber, asRecord, asString, objectSelectorMatches } from "./selectors.js";
import { type Emitted, type TranslatorOutput } from "./types.js";

export function federatedHost(svc: string, namespace: string, cluster: string, hostSuffix: string | undefined): string {
  return hostSuffix === undefined || hostSuffix === "" ? `${svc}.${namespace}.svc.${cluster}.global` : `${svc}.${namespace}.${cluster}.${hostSuffix}`;
}

/**
 * On each east-west gateway of a cluster whose federated Services other clusters reach, a Gateway
 * with an AUTO_PASSTHROUGH server on the pod port behind "tls" (15443) for the workspace's
 * federated hosts there (`*.<ns>.svc.<cluster>.global`, one pattern per namespace, so workspaces
 * never serve the same host twice): without it the gateway has no listener for the clients' SNI.
 */
function federationEastWestServers(ctx: WorkspaceContext, byCluster: ReadonlyMap<string, { eps: readonly GatewayEndpoint[]; hosts: ReadonlySet<string> }>, file: string | undefined): Emitted[] {
  const ws = ctx.workspace.name;
  const out: Emitted[] = [];
  for (const cluster of [...byCluster.keys()].sort(cmpStr)) {
    const { eps, hosts } = byCluster.get(cluster)!;
    const seen = new Set<string>();
    for (const ep of eps) {
      const g = ep.gateway;
      const port = ep.serverPort;
      if (port === undefined || seen.has(`${g.namespace}/${g.name}`)) continue;
      seen.add(`${g.namespace}/${g.name}`);
      const name = stableName("federation-eastwest", g.name, cluster, ws);
      const parent = { kind: "Service", name: g.name, namespace: g.namespace, cluster, ...(file === undefined ? {} : { file }) };
      const spec = { selector: g.podLabels, servers: [{ hosts: [...hosts].sort(cmpStr), port: { name: `tls-${String(port)}`, number: port, protocol: "TLS" }, tls: { mode: "AUTO_PASSTHROUGH" } }] };
      out.push({ cluster, resource: { apiVersion: "networking.istio.io/v1", kind: "Gateway", metadata: outputMetadata(name, g.namespace, cluster, ws, parent), spec } });
    }
  }
  return out;
}

export function translateFederation(ctx: WorkspaceContext): TranslatorOutput {
  const ws = ctx.workspace;
  const fed = asRecord(effectiveOptions(ctx).federation);
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  if (fed.enabled !== true) return { resources, diagnostics };
  const settings = ws.settings;
  const hostSuffix = asString(fed.hostSuffix);
  const selectors = asArray(fed.serviceSelector).map(objectSelector);
  const portSels = asArray(fed.ports).map(asRecord);
  const table = addressTable(ctx.index);
  let selected = 0;
  const missingGateway = new Set<string>();
  // exportTo of a client cluster depends on the cluster, the consumers and whether it is the Service's own
  // cluster, not on the Service: computed once per combination and shared (rendered objects are never mutated).
  const exportLists = new Map<string, SharedList>();
  // …and clusters whose lists are equal share one list, so that a Service's entries and rules for them
  // can be one spec object each (see spec-table.ts).
  const lists = new ListTable();
  // Per cluster of federated Services reached from other clusters: the host patterns its east-west gateways serve.
  const eastWestHosts = new Map<string, { eps: readonly GatewayEndpoint[]; hosts: Set<string> }>();

  for (const svcCluster of ws.clusters) {
    const snap = ctx.snapshot(svcCluster);
    const owned = ws.namespaces.get(svcCluster) ?? [];
    for (const svc of snap?.services ?? []) {
      if (!owned.includes(svc.namespace) || namespaceOwner(ctx.index, svcCluster, svc.namespace) !== ws.name) continue;
      const sel = { kind: "Service", name: svc.name, namespace: svc.namespace, cluster: svcCluster, labels: svc.labels ?? {}, workspace: ws.name };
      if (selectors.length > 0 && !selectors.some((s) => objectSelectorMatches(s, sel))) continue;
      const ports = svc.ports.filter((p) => portSels.length === 0 || portSels.some((s) => asNumber(s.number) === p.port || (asString(s.name) !== undefined && asString(s.name) === p.name)));
      if (ports.length === 0) continue;
      selected++;
      const host = federatedHost(svc.name, svc.namespace, svcCluster, hostSuffix);
      const address = table.get(federationIdentity(svc.name, svc.namespace, svcCluster))?.address;
      const td = trustDomainOf(snap);
      const sans = td === undefined ? [] : serviceAccountsOf(snap, svc).map((sa) => spiffe(td, svc.namespace, sa));
      const sePorts = ports.map((p) => {
        const protocol = istioProtocol(p.appProtocol ?? p.name);
        return { name: portName(protocol, p.port), number: p.port, protocol, ...(typeof p.targetPort === "number" ? { targetPort: p.targetPort } : {}) };
      });
      const consumers = consumersOf(ctx, sel);
      const clients = new Set<string>();
      for (const w of [ws.name, ...consumers]) for (const c of ctx.index.workspaces.get(w)?.clusters ?? []) clients.add(c);
      const remoteEps = eastWestEndpoints(ctx, svcCluster, false);
      if ([...clients].some((c) => c !== svcCluster) && remoteEps.length > 0) {
        const entry = eastWestHosts.get(svcCluster) ?? { eps: remoteEps, hosts: new Set<string>() };
        entry.hosts.add(`*.${host.slice(host.indexOf(".") + 1)}`);
        eastWestHosts.set(svcCluster, entry);
      }
      // The same for every client cluster: built once, shared (rendered objects are never mutated).
      const remote = gatewayEntryEndpoints(remoteEps, sePorts.map((p) => p.name));
      const name = stableName("federation", svc.name, svc.namespace, svcCluster, ws.name);
      const parent = { kind: "Service", name: svc.name, namespace: svc.namespace, cluster: svcCluster, ...(settings === undefined ? {} : { file: settings.source.file }) };
      const trafficPolicy = { tls: { mode: "ISTIO_MUTUAL", ...(sans.length > 0 ? { subjectAltNames: sans } : {}) } };
      // This Service's entry in every remote client cluster, and its rule in every client cluster, is
      // made of the exportTo list and what is fixed above: one spec per list.
      const remoteEntries = new SpecTable();
      const rules = new SpecTable();
      for (const cluster of [...clients].sort(cmpStr)) {
        const local = cluster === svcCluster;
        if (!local && remoteEps.length === 0) {
          missingGateway.add(svcCluster);
          continue;
        }
        const exportKey = `${local ? "local" : "remote"}\u0000${cluster}\u0000${consumers.join("\u0000")}`;
        let exportList = exportLists.get(exportKey);
        if (exportList === undefined) {
          const exportTo = new Set(namespacesIn(ctx.index, cluster, [ws.name, ...consumers]));
          if (local) for (const g of snap?.gateways ?? []) if (g.kind === "east-west") exportTo.add(g.namespace);
          exportList = lists.intern([...exportTo].sort(cmpStr));
          exportLists.set(exportKey, exportList);
        }
        const exportItems = exportList.items;
        const namespace = local || exportItems.includes(svc.namespace) ? svc.namespace : exportItems[0];
        if (namespace === undefined) continue;
        // Keys in canonical (code-unit) order: the canonical form is this object, not a copy. Member by
        // member: a literal that starts with a spread gets a hidden class per object (see normalizeSnapshot).
        const makeSeSpec = (): Record<string, unknown> => {
          const spec: Record<string, unknown> = {};
          if (address !== undefined) spec.addresses = [address];
          if (!local) spec.endpoints = remote.endpoints;
          spec.exportTo = exportItems;
          spec.hosts = [host];
          spec.location = "MESH_INTERNAL";
          spec.ports = sePorts;
          spec.resolution = local ? "STATIC" : remote.resolution;
          if (local) spec.workloadSelector = { labels: svc.selector ?? {} };
          return spec;
        };
        const seSpec = local ? makeSeSpec() : remoteEntries.get(exportList, makeSeSpec);
        const drSpec = rules.get(exportList, () => ({ exportTo: exportItems, host, trafficPolicy }));
        const meta = outputMetadata(name, namespace, cluster, ws.name, parent);
        resources.push({ cluster, resource: { apiVersion: "networking.istio.io/v1", kind: "ServiceEntry", metadata: meta, spec: seSpec } });
        resources.push({ cluster, resource: { apiVersion: "networking.istio.io/v1", kind: "DestinationRule", metadata: meta, spec: drSpec } });
      }
    }
  }
  resources.push(...federationEastWestServers(ctx, eastWestHosts, settings?.source.file));
  const anchor = settings;
  if (anchor !== undefined) {
    if (selected === 0) diagnostics.push(ctx.diag(anchor, "SELECTS_NOTHING", Severity.Warning, "/spec/options/federation", `federation is enabled but selects no Service of workspace "${ws.name}"; check serviceSelector and ports.`));
    for (const c of [...missingGateway].sort(cmpStr)) {
      diagnostics.push(ctx.diag(anchor, DestinationCode.NoEastWestGateway, Severity.Warning, "/spec/options/federation", `cluster "${c}" has no east-west gateway with a "tls" (15443) port and an address; its federated Services are not reachable from other clusters.`));
    }
  }
  return { resources, diagnostics };
}

