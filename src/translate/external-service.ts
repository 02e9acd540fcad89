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
import { consumersOf, cmpStr, istioProtocol, namespacesIn, portName } from "./destination-common.js";
import { destinationTrafficPolicy, type TrafficPolicy } from "./destination-policies.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { stableName } from "./names.js";
import { asArray, asNumber, asRecord, asString } from "./selectors.js";
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
  const diagnostics: Diagnostic[] = reportUnsupported(ctx, es, spec, "/spec", ["hosts", "addresses", "ports", "subjectAltNames"]);
  const hosts = asArray(spec.hosts).filter((h): h is string => typeof h === "string" && h !== "");
  if (hosts.length === 0) {
    diagnostics.push(ctx.diag(es, TranslateCode.InvalidField, Severity.Error, "/spec/hosts", "an ExternalService needs at least one host; nothing is rendered for it."));
    return { resources: [], diagnostics };
  }
  const ports: EsPort[] = [];
  asArray(spec.ports).forEach((raw, i) => {
    const p = asRecord(raw);
    const path = `/spec/ports/${i}`;
    diagnostics.push(...reportUnsupported(ctx, es, p, path, ["number", "targetPort", "name", "protocol", "clientsideTls"]));
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
  const portNumbers = ports.map((p) => p.number);
  const perHost = new Map<string, TrafficPolicy | undefined>();
  for (const host of hosts) {
    const { trafficPolicy } = destinationTrafficPolicy(ctx, es.key, portNumbers, (port) => {
      const tls = ports.find((p) => p.number === port)?.tls;
      return tls === undefined ? {} : { tls: tls(host) };
    });
    perHost.set(host, trafficPolicy);
  }

  const resources: Emitted[] = [];
  for (const cluster of [...clients].sort(cmpStr)) {
    const exportTo = namespacesIn(ctx.index, cluster, [ws, ...consumers]);
    const namespace = exportTo.includes(esNs) ? esNs : exportTo[0];
    if (namespace === undefined) continue;
    const meta = (name: string) => outputMetadata(name, namespace, cluster, ws, parent);
    resources.push({
      cluster,
      resource: {
        apiVersion: "networking.istio.io/v1",
        kind: "ServiceEntry",
        metadata: meta(baseName),
        spec: {
          hosts,
          ...(addresses.length > 0 ? { addresses } : {}),
          ports: ports.map((p) => p.se),
          location: "MESH_EXTERNAL",
          resolution: wildcard ? "NONE" : "DNS",
          ...(sans.length > 0 ? { subjectAltNames: sans } : {}),
          exportTo,
        },
      },
    });
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
  }
  return { resources, diagnostics };
}
