/**
 * IstioLifecycleManager / GatewayLifecycleManager → what installs Istio upstream (design note:
 * LIFECYCLE.md): per installation and cluster, a Sail operator `Istio` (plus the `default`
 * `IstioRevisionTag` and an `IstioCNI` where asked), and for each gateway the objects Istio's
 * `gateway` chart renders (ServiceAccount, a RoleBinding to the agent chart's gateway ClusterRole in place
 * of the chart's Role, Deployment with gateway injection,
 * Service, HorizontalPodAutoscaler, PodDisruptionBudget).
 *
 * Lifecycle managers belong to no workspace: like RootTrustPolicy, a cluster's objects are rendered
 * by the first workspace (by name) with namespaces in that cluster, and the managers' diagnostics by
 * the first workspace of the fleet, so each is reported once.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import type { WorkspaceContext } from "./context.js";
import type { InputObject } from "./input.js";
import { outputMetadata } from "./labels.js";
import { asArray, asLabels, asNumber, asRecord, asString, isRecord } from "./selectors.js";
import { dottedField, unreadKeys, type ReadTree } from "./read-keys.js";
import { subsetValidator } from "./subset-schema.js";
import { TranslateCode, type Emitted, type IstioResource, type TranslatorOutput } from "./types.js";

export const SAIL_API_VERSION = "sailoperator.io/v1";
/** Pod label that tells a gateway revision's pods apart; the active revision's Service selects it. */
export const LABEL_GATEWAY_REVISION = "gitmesh.io/gateway-revision";
/**
 * The ClusterRole that holds a gateway's own permission (read the TLS Secrets of its namespace, as Istio's
 * gateway chart grants with a Role). The agent chart creates it when `lifecycle.enabled` and grants the
 * agent only `bind` on it in each gateway namespace: the agent binds it to a gateway's ServiceAccount
 * with a RoleBinding without holding Secret reads itself (Kubernetes lets only a holder create a Role
 * with a permission; `bind` is the way around that).
 */
export const GATEWAY_SECRETS_CLUSTER_ROLE = "gitmesh-gateway-secrets";
const DEFAULT_NAMESPACE = "istio-system";
const DEFAULT_CNI_NAMESPACE = "istio-cni";

/** Gloo/IstioOperator profiles → Sail profiles (Sail never installs gateways, so `minimal` is its `default`). */
const PROFILES: Readonly<Record<string, string>> = {
  "": "default",
  default: "default",
  minimal: "default",
  demo: "demo",
  empty: "empty",
  ambient: "ambient",
  preview: "preview",
  remote: "remote",
  openshift: "openshift",
  stable: "stable",
};

/** istiod's switch that lets Kubernetes Services select WorkloadEntries (see `controlPlane`). */
const SELECT_WORKLOAD_ENTRIES = "PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES";
/** Gloo sets it to "true" by default: its east-west routing needs several trust domains (istio_lifecycle_manager.proto, trust_domain). */
const SKIP_VALIDATE_TRUST_DOMAIN = "PILOT_SKIP_VALIDATE_TRUST_DOMAIN";

const OVERLAYS = "k8s.overlays (JSON patches on generated objects) are applied by Gloo's controller only";
const HELM_GLOBAL = "helmGlobal (Gloo's chart repository) is not used: the Sail operator brings Istio's charts";
const NOT_SAIL = (k: string) => `${k} is not supported by the Sail operator`;
/** skipUpgradeValidation: true is what gitmesh does; false asks for Gloo's canary checks, which nothing runs here. */
const SKIP_UPGRADE_VALIDATION = (v: unknown) =>
  v === false ? "Gloo's upgrade checks (no in-place minor upgrade of a revision) are not run: the Sail operator upgrades a revision in place (InPlace); upgrade through a new revision for a canary" : undefined;
const BASE = {
  enabled: (v: unknown) => (v === false ? "components.base.enabled: false is not translated: the Sail operator installs Istio's base resources (CRDs, the default ServiceAccount) with the control plane" : undefined),
  k8s: "components.base.k8s is not translated: the base component runs no workload",
};

/**
 * What an IstioLifecycleManager translation reads (read-keys.ts): every other set key is reported
 * at its path, so a field the schema gains later is never dropped without a word. `true` under
 * ztunnel, istiodRemote and the gateway lists: `controlPlane` reports them when they install something.
 */
const ISTIO_READS: ReadTree = {
  helmGlobal: HELM_GLOBAL,
  installations: {
    revision: true,
    clusters: { name: true, defaultRevision: true, trustDomain: true },
    skipUpgradeValidation: SKIP_UPGRADE_VALIDATION,
    istioController: "istioController configures Gloo's own Istio controller; upstream the Sail operator installs Istio, configured where it is deployed",
    istioOperatorSpec: {
      profile: true,
      hub: true,
      tag: true,
      namespace: true,
      revision: true,
      defaultRevision: true,
      meshConfig: true,
      values: true,
      unvalidatedValues: true,
      installPackagePath: NOT_SAIL("installPackagePath"),
      resourceSuffix: NOT_SAIL("resourceSuffix"),
      addonComponents: NOT_SAIL("addonComponents"),
      components: {
        base: BASE,
        pilot: {
          enabled: (v) => (v === false ? "components.pilot.enabled: false is not translated: the Sail operator's Istio always installs istiod (for a remote cluster without one, no IstioLifecycleManager installation is the way)" : undefined),
          namespace: true,
          hub: true,
          tag: true,
          spec: "components.pilot.spec (arbitrary install-time configuration of Gloo's operator) is not translated; set istiod chart values in istioOperatorSpec.values",
          k8s: {
            affinity: true,
            env: { name: true, value: true, valueFrom: "istiod's chart takes env as literal values; valueFrom is not translated" },
            hpaSpec: {
              minReplicas: true,
              maxReplicas: true,
              behavior: true,
              metrics: "istiod's chart scales on CPU (values.pilot.cpu.targetAverageUtilization); hpaSpec.metrics is not translated",
              scaleTargetRef: "the istiod chart's autoscaler always targets istiod; hpaSpec.scaleTargetRef is not used",
            },
            nodeSelector: true,
            podAnnotations: true,
            replicaCount: true,
            resources: true,
            serviceAnnotations: true,
            tolerations: true,
            overlays: `${OVERLAYS}; set the istiod chart value in istioOperatorSpec.values instead`,
          },
        },
        cni: {
          enabled: true,
          namespace: true,
          hub: true,
          tag: true,
          k8s: "components.cni.k8s is not translated: the IstioCNI resource takes the cni chart's values (hub and tag are passed); overlays are applied by Gloo's controller only",
        },
        ztunnel: true,
        istiodRemote: true,
        ingressGateways: true,
        egressGateways: true,
      },
    },
  },
};

const NOT_A_GATEWAY = (what: string) => `${what} configures a control plane; a GatewayLifecycleManager installs gateways only (set it on the IstioLifecycleManager of the revision)`;
/** The Kubernetes ServiceSpec fields of `k8s.service` (solo-apis ServiceSpec) copied onto the gateway's Service (all but externalName). */
const SERVICE_FIELDS = ["clusterIP", "externalIPs", "externalTrafficPolicy", "healthCheckNodePort", "loadBalancerIP", "loadBalancerSourceRanges", "ports", "publishNotReadyAddresses", "selector", "sessionAffinity", "sessionAffinityConfig", "type"] as const;
const GATEWAY_K8S: ReadTree = {
  affinity: true,
  env: true,
  hpaSpec: { minReplicas: true, maxReplicas: true, metrics: true, behavior: true, scaleTargetRef: "the gateway's autoscaler always targets its Deployment; hpaSpec.scaleTargetRef is not used" },
  imagePullPolicy: true,
  nodeSelector: true,
  podDisruptionBudget: { minAvailable: true, maxUnavailable: true, selector: "the gateway's disruption budget selects its own pods; podDisruptionBudget.selector is not used" },
  podAnnotations: true,
  priorityClassName: true,
  readinessProbe: true,
  replicaCount: true,
  resources: true,
  service: {
    ...Object.fromEntries(SERVICE_FIELDS.map((f) => [f, true])),
    externalName: "a gateway's Service selects the gateway's pods; externalName (an ExternalName Service's DNS alias) has no meaning there and is not rendered",
  },
  strategy: true,
  tolerations: true,
  serviceAnnotations: true,
  securityContext: true,
  volumes: true,
  volumeMounts: true,
  overlays: `${OVERLAYS}; set the field in k8s instead where it has one`,
};
const GATEWAY_SPEC: ReadTree = {
  enabled: true,
  name: true,
  namespace: true,
  label: true,
  hub: "a gateway's image comes from its control plane revision's injector (image `auto`); hub is not used",
  tag: "a gateway's image comes from its control plane revision's injector (image `auto`); tag is not used",
  k8s: GATEWAY_K8S,
};
/** What a GatewayLifecycleManager translation reads; `true` under the control plane components: `gateways` reports them when enabled. */
const GATEWAY_READS: ReadTree = {
  helmGlobal: HELM_GLOBAL,
  installations: {
    gatewayRevision: true,
    controlPlaneRevision: true,
    clusters: { name: true, activeGateway: true, trustDomain: "a gateway's trust domain is its control plane's (meshConfig.trustDomain of the IstioLifecycleManager installation); clusters[].trustDomain is not used here" },
    skipUpgradeValidation: SKIP_UPGRADE_VALIDATION,
    istioOperatorSpec: {
      profile: (v) => (v === "empty" || v === "" ? undefined : `profile "${String(v)}" would also install the profile's control plane components; a GatewayLifecycleManager installs only its gateways (use profile: empty)`),
      namespace: true,
      revision: true,
      hub: "a gateway's image comes from its control plane revision's injector (image `auto`); hub is not used",
      tag: "a gateway's image comes from its control plane revision's injector (image `auto`); tag is not used",
      defaultRevision: NOT_A_GATEWAY("defaultRevision"),
      meshConfig: NOT_A_GATEWAY("meshConfig"),
      unvalidatedValues: "unvalidatedValues (values of Gloo's gateway chart) are not translated: the gateway's objects are rendered from k8s",
      values: { gateways: { "*": { customService: true } } },
      installPackagePath: NOT_SAIL("installPackagePath"),
      resourceSuffix: NOT_SAIL("resourceSuffix"),
      addonComponents: NOT_SAIL("addonComponents"),
      components: { base: true, pilot: true, cni: true, ztunnel: true, istiodRemote: true, ingressGateways: GATEWAY_SPEC, egressGateways: GATEWAY_SPEC },
    },
  },
};

type Diag = (path: string, message: string, severity?: Diagnostic["severity"], code?: string) => void;

export function translateLifecycle(ctx: WorkspaceContext): TranslatorOutput {
  const index = ctx.index;
  const istioManagers = index.byKind.get("IstioLifecycleManager") ?? [];
  const gatewayManagers = index.byKind.get("GatewayLifecycleManager") ?? [];
  if (istioManagers.length === 0 && gatewayManagers.length === 0) return { resources: [], diagnostics: [] };
  const ws = ctx.workspace.name;
  const reporter = index.workspaceNames[0] === ws;
  const known = new Set(index.clusters);
  const emitter = (cluster: string) => index.workspaceNames.find((w) => index.workspaces.get(w)?.namespaces.has(cluster));
  const resources: Emitted[] = [];
  const diagnostics: Diagnostic[] = [];
  const installed = installedRevisions(ctx, istioManagers);

  for (const manager of [...istioManagers, ...gatewayManagers]) {
    const diag: Diag = (path, message, severity = Severity.Warning, code = TranslateCode.UnsupportedField) => {
      if (reporter) diagnostics.push(ctx.diag(manager, code, severity, path, message));
    };
    const spec = asRecord(manager.spec);
    for (const u of unreadKeys(spec, manager.kind === "IstioLifecycleManager" ? ISTIO_READS : GATEWAY_READS, "/spec")) {
      diag(u.path, u.reason ?? `${dottedField(u.path)} is not translated by gitmesh; it has no effect on what is installed`);
    }
    asArray(spec.installations).forEach((raw, i) => {
      const inst = asRecord(raw);
      const path = `/spec/installations/${String(i)}`;
      const ios = asRecord(inst.istioOperatorSpec);
      const targets = asArray(inst.clusters).map((c, j) => ({ entry: asRecord(c), path: `${path}/clusters/${String(j)}` }));
      for (const { entry, path: cpath } of targets) {
        const cluster = asString(entry.name) ?? "";
        if (!known.has(cluster)) {
          diag(`${cpath}/name`, `cluster "${cluster}" is not registered (no KubernetesCluster of that name) and sends no discovery; nothing is installed there`, Severity.Warning, TranslateCode.NoTargetCluster);
        } else if (emitter(cluster) === undefined) {
          diag(`${cpath}/name`, `no workspace has namespaces in cluster "${cluster}", and lifecycle output travels with a workspace's output: add the cluster to a Workspace's workloadClusters`, Severity.Warning, TranslateCode.NoTargetCluster);
        }
      }
      const render = manager.kind === "IstioLifecycleManager" ? controlPlane(inst, ios, path, diag) : gateways(inst, ios, path, diag);
      if (render === undefined) return;
      const cpRevision = manager.kind === "GatewayLifecycleManager" ? controlPlaneRevisionOf(inst, ios) : "";
      for (const { entry, path: cpath } of targets) {
        const cluster = asString(entry.name) ?? "";
        if (!known.has(cluster)) continue;
        if (cpRevision !== "" && installed.get(cluster)?.has(cpRevision) !== true) {
          // Gloo (GatewayLifecycleManager, controlPlaneRevision): "If a control plane installation of
          // this revision is not found, no gateway is created."
          diag(`${cpath}/name`, `control plane revision "${cpRevision}" is not installed in cluster "${cluster}" (no discovered istiod of that revision, no IstioLifecycleManager installation of it there): like Gloo, no gateway is created there until it is. Install the revision or correct controlPlaneRevision.`, Severity.Warning, TranslateCode.ReferenceNotFound);
          continue;
        }
        if (emitter(cluster) !== ws) continue;
        for (const r of render(cluster, entry, cpath)) resources.push({ cluster, resource: withMetadata(r, cluster, ws, ctx, manager) });
      }
    });
  }
  return { resources, diagnostics };
}

/**
 * Control plane revisions per cluster: those discovery reports running (`meshes[].revision`) and
 * those an IstioLifecycleManager installs there (an installation with a usable version tag), so
 * that a gateway committed together with its control plane is rendered at once.
 */
function installedRevisions(ctx: WorkspaceContext, istioManagers: readonly InputObject[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (cluster: string, revision: string): void => {
    let set = out.get(cluster);
    if (set === undefined) out.set(cluster, (set = new Set()));
    set.add(revision);
  };
  for (const cluster of ctx.index.clusters) for (const m of ctx.snapshot(cluster)?.meshes ?? []) add(cluster, m.revision === undefined || m.revision === "" ? "default" : m.revision);
  for (const manager of istioManagers) {
    for (const raw of asArray(asRecord(manager.spec).installations)) {
      const inst = asRecord(raw);
      const ios = asRecord(inst.istioOperatorSpec);
      if (sailVersion(asString(ios.tag)) === undefined) continue;
      const revision = asString(inst.revision) || asString(ios.revision) || "default";
      for (const c of asArray(inst.clusters)) add(asString(asRecord(c).name) ?? "", revision);
    }
  }
  return out;
}

/** A gateway installation's control plane revision ("" = the cluster's default istiod, not checked). */
function controlPlaneRevisionOf(inst: Record<string, unknown>, ios: Record<string, unknown>): string {
  return asString(inst.controlPlaneRevision) || asString(ios.revision) || "";
}

/** An object under construction: metadata (name, namespace) is completed by `withMetadata`. */
interface Draft {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  /** `""` for cluster-scoped kinds (the Sail resources). */
  readonly namespace: string;
  readonly body: Record<string, unknown>;
  /** Annotations of the object itself (a Service's `serviceAnnotations`). */
  readonly annotations?: Readonly<Record<string, string>>;
}

/**
 * The rendered object with gitmesh's labels. ServiceAccount, Role and RoleBinding have no `spec` in
 * Kubernetes; they are rendered as Kubernetes defines them (IstioResource's `spec` is absent there).
 */
function withMetadata(d: Draft, cluster: string, ws: string, ctx: WorkspaceContext, manager: InputObject): IstioResource {
  return { apiVersion: d.apiVersion, kind: d.kind, metadata: outputMetadata(d.name, d.namespace, cluster, ws, ctx.parentOf(manager), d.annotations), ...d.body } as unknown as IstioResource;
}

/** `1.22.1-solo` / `v1.29.0` → `v1.22.1`; undefined when the tag names no version. */
export function sailVersion(tag: string | undefined): string | undefined {
  const m = /^v?(\d+\.\d+\.\d+)/.exec(tag ?? "");
  return m ? `v${m[1]!}` : undefined;
}

function controlPlane(inst: Record<string, unknown>, ios: Record<string, unknown>, path: string, diag: Diag): ((cluster: string, entry: Record<string, unknown>, entryPath: string) => Draft[]) | undefined {
  const iosPath = `${path}/istioOperatorSpec`;
  const version = sailVersion(asString(ios.tag));
  if (version === undefined) {
    diag(`${iosPath}/tag`, "an Istio version tag is needed (e.g. `1.29.0` or `1.29.0-solo`): the Sail operator installs Istio by version; nothing is installed for this installation", Severity.Error, TranslateCode.InvalidField);
    return undefined;
  }
  const profileIn = asString(ios.profile) ?? "";
  let profile = PROFILES[profileIn];
  if (profile === undefined) {
    diag(`${iosPath}/profile`, `profile "${profileIn}" has no Sail operator equivalent; "default" is used`, Severity.Warning, TranslateCode.InvalidField);
    profile = "default";
  }
  const components = asRecord(ios.components);
  for (const k of ["ztunnel", "istiodRemote"]) if (asRecord(components[k]).enabled === true) diag(`${iosPath}/components/${k}`, `${k} is not translated by gitmesh`);
  for (const k of ["ingressGateways", "egressGateways"]) {
    if (asArray(components[k]).some((g) => asRecord(g).enabled !== false)) diag(`${iosPath}/components/${k}`, "gateways of an IstioLifecycleManager are not installed: install them with a GatewayLifecycleManager");
  }
  const pilot = asRecord(components.pilot);
  const pilotK8s = asRecord(pilot.k8s);
  const env: Record<string, string> = {};
  for (const e of asArray(pilotK8s.env)) {
    const v = asRecord(e);
    if (v.valueFrom === undefined && typeof v.name === "string") env[v.name] = asString(v.value) ?? "";
  }
  // VirtualDestination WorkloadEntries carry the backing pods' labels (virtual-destination.ts); with
  // istiod's default (true) the local Kubernetes Service of the same selector would also take the
  // remote east-west gateways as its endpoints, on the Service's own port. Gloo's installations
  // turn it off; so does gitmesh's, unless set, and setting it to true is reported.
  if (env[SELECT_WORKLOAD_ENTRIES] === undefined) env[SELECT_WORKLOAD_ENTRIES] = "false";
  else if (env[SELECT_WORKLOAD_ENTRIES] !== "false") {
    diag(`${iosPath}/components/pilot/k8s/env`, `${SELECT_WORKLOAD_ENTRIES}=${env[SELECT_WORKLOAD_ENTRIES]}: the WorkloadEntries of VirtualDestinations (remote east-west gateways, labelled like the backing pods) then also become endpoints of the local Kubernetes Service with the same selector, which sends part of its traffic to a remote gateway on a port it does not serve. Leave it unset (gitmesh sets false, as Gloo does).`, Severity.Warning, TranslateCode.InvalidField);
  }
  // Gloo's default (istio_lifecycle_manager.proto, trust_domain): several trust domains, one per
  // cluster, so istiod must not refuse the other clusters' identities.
  if (env[SKIP_VALIDATE_TRUST_DOMAIN] === undefined) env[SKIP_VALIDATE_TRUST_DOMAIN] = "true";
  // Gloo sets meshConfig.trustDomain to each cluster's name unless clusters[].trustDomain overrides
  // it (istio_lifecycle_manager.proto): a trust domain in the operator spec alone is replaced.
  const specTrustDomain = asString(asRecord(ios.meshConfig).trustDomain);
  const hpa = asRecord(pilotK8s.hpaSpec);
  const pilotValues = compact({
    ...(asString(pilot.hub) !== undefined ? { hub: pilot.hub } : {}),
    ...(asString(pilot.tag) !== undefined ? { tag: pilot.tag } : {}),
    env,
    resources: pilotK8s.resources,
    nodeSelector: pilotK8s.nodeSelector,
    tolerations: pilotK8s.tolerations,
    affinity: pilotK8s.affinity,
    podAnnotations: pilotK8s.podAnnotations,
    replicaCount: pilotK8s.replicaCount,
    ...(asNumber(hpa.minReplicas) !== undefined ? { autoscaleEnabled: true, autoscaleMin: hpa.minReplicas } : {}),
    ...(asNumber(hpa.maxReplicas) !== undefined ? { autoscaleEnabled: true, autoscaleMax: hpa.maxReplicas } : {}),
    autoscaleBehavior: hpa.behavior,
    serviceAnnotations: pilotK8s.serviceAnnotations,
  });
  const cni = asRecord(components.cni);
  const withCni = cni.enabled === true;
  const revision = asString(inst.revision) || asString(ios.revision) || "default";
  // IstioOperator: a component's namespace overrides the spec's; istiod is the control plane's component.
  const namespace = asString(pilot.namespace) || asString(ios.namespace) || DEFAULT_NAMESPACE;

  return (cluster, entry, entryPath) => {
    const trustDomain = asString(entry.trustDomain) || cluster;
    if (specTrustDomain !== undefined && specTrustDomain !== trustDomain)
      diag(`${iosPath}/meshConfig/trustDomain`, `cluster ${cluster} gets the trust domain "${trustDomain}" (${asString(entry.trustDomain) ? "its clusters[].trustDomain" : "its name, Gloo's default"}), not "${specTrustDomain}": Gloo sets each cluster's trust domain from installations[].clusters[], so name it there (${entryPath}/trustDomain)`, Severity.Warning, TranslateCode.InvalidField);
    const values = deepMerge(deepMerge(asRecord(ios.unvalidatedValues), asRecord(ios.values)), compact({
      global: compact({ hub: ios.hub, tag: ios.tag }),
      meshConfig: deepMerge(asRecord(ios.meshConfig), { trustDomain }),
      pilot: Object.keys(pilotValues).length > 0 || withCni ? { ...pilotValues, ...(withCni ? { cni: { enabled: true } } : {}) } : undefined,
    }));
    const out: Draft[] = [
      {
        apiVersion: SAIL_API_VERSION,
        kind: "Istio",
        name: revision,
        namespace: "",
        body: { spec: compact({ version, namespace, profile, updateStrategy: { type: "InPlace" }, values: Object.keys(values).length > 0 ? values : undefined }) },
      },
    ];
    if (entry.defaultRevision === true || ios.defaultRevision === true) {
      out.push({ apiVersion: SAIL_API_VERSION, kind: "IstioRevisionTag", name: "default", namespace: "", body: { spec: { targetRef: { kind: "Istio", name: revision } } } });
    }
    if (withCni) {
      const cniValues = compact({ hub: cni.hub ?? ios.hub, tag: cni.tag ?? ios.tag });
      out.push({
        apiVersion: SAIL_API_VERSION,
        kind: "IstioCNI",
        name: "default",
        namespace: "",
        body: { spec: compact({ version, namespace: asString(cni.namespace) || DEFAULT_CNI_NAMESPACE, profile: profile === "ambient" ? "ambient" : undefined, values: Object.keys(cniValues).length > 0 ? { cni: cniValues } : undefined }) },
      });
    }
    return out;
  };
}

interface GatewayDef {
  readonly name: string;
  readonly namespace: string;
  readonly ingress: boolean;
  readonly labels: Record<string, string>;
  readonly k8s: Record<string, unknown>;
  readonly customService: boolean;
}

function gateways(inst: Record<string, unknown>, ios: Record<string, unknown>, path: string, diag: Diag): ((cluster: string, entry: Record<string, unknown>) => Draft[]) | undefined {
  const iosPath = `${path}/istioOperatorSpec`;
  const components = asRecord(ios.components);
  for (const k of ["base", "pilot", "cni", "ztunnel", "istiodRemote"]) {
    if (asRecord(components[k]).enabled === true) diag(`${iosPath}/components/${k}`, `${k} is not installed by a GatewayLifecycleManager: install it with an IstioLifecycleManager`);
  }
  const gatewayValues = asRecord(asRecord(ios.values).gateways);
  const defs: GatewayDef[] = [];
  for (const [list, ingress] of [["ingressGateways", true], ["egressGateways", false]] as const) {
    asArray(components[list]).forEach((raw, k) => {
      const g = asRecord(raw);
      const gpath = `${iosPath}/components/${list}/${String(k)}`;
      if (g.enabled === false) return;
      const name = asString(g.name);
      if (name === undefined || name === "") {
        diag(gpath, "a gateway needs a name (its Deployment and Service are named after it); it is not installed", Severity.Error, TranslateCode.InvalidField);
        return;
      }
      const k8s = asRecord(g.k8s);
      // As Istio's gateway chart, an autoscaled gateway's Deployment has no replica count of its own.
      if (k8s.replicaCount !== undefined && k8s.hpaSpec !== undefined) diag(`${gpath}/k8s/replicaCount`, "replicaCount is not rendered: hpaSpec autoscales the gateway (from hpaSpec.minReplicas)");
      const pdb = asRecord(k8s.podDisruptionBudget);
      if (pdb.minAvailable !== undefined && pdb.maxUnavailable !== undefined) {
        diag(`${gpath}/k8s/podDisruptionBudget/maxUnavailable`, "Kubernetes refuses a PodDisruptionBudget with both minAvailable and maxUnavailable: minAvailable is rendered, maxUnavailable is not", Severity.Warning, TranslateCode.InvalidField);
      }
      const label = asLabels(g.label) ?? {};
      defs.push({
        name,
        namespace: asString(g.namespace) || asString(ios.namespace) || DEFAULT_NAMESPACE,
        ingress,
        labels: { app: name, istio: ingress ? "ingressgateway" : "egressgateway", ...label },
        k8s,
        customService: asRecord(gatewayValues[name]).customService === true,
      });
    });
  }
  if (defs.length === 0) {
    diag(`${iosPath}/components`, "no enabled gateway in components.ingressGateways or components.egressGateways: nothing is installed", Severity.Warning, TranslateCode.InvalidField);
    return undefined;
  }
  const cpRevision = controlPlaneRevisionOf(inst, ios);
  const gwRevision = asString(inst.gatewayRevision) || cpRevision;
  const revisionLabel = gwRevision || "default";
  return (_cluster, entry) => defs.flatMap((g) => gatewayObjects(g, cpRevision, gwRevision, revisionLabel, entry.activeGateway === true));
}

const DEFAULT_PORTS = {
  ingress: [
    { name: "status-port", port: 15021, targetPort: 15021, protocol: "TCP" },
    { name: "http2", port: 80, targetPort: 80, protocol: "TCP" },
    { name: "https", port: 443, targetPort: 443, protocol: "TCP" },
  ],
  egress: [
    { name: "http2", port: 80, targetPort: 80, protocol: "TCP" },
    { name: "https", port: 443, targetPort: 443, protocol: "TCP" },
  ],
} as const;

function gatewayObjects(g: GatewayDef, cpRevision: string, gwRevision: string, revisionLabel: string, active: boolean): Draft[] {
  const name = gwRevision ? `${g.name}-${gwRevision}` : g.name;
  const selector = { ...g.labels, [LABEL_GATEWAY_REVISION]: revisionLabel };
  const k8s = g.k8s;
  const hpa = asRecord(k8s.hpaSpec);
  const autoscaled = k8s.hpaSpec !== undefined;
  const container = compact({
    name: "istio-proxy",
    image: "auto",
    env: asArray(k8s.env).length > 0 ? k8s.env : undefined,
    resources: k8s.resources,
    imagePullPolicy: k8s.imagePullPolicy,
    readinessProbe: k8s.readinessProbe,
    volumeMounts: k8s.volumeMounts,
  });
  const objects: Draft[] = [
    { apiVersion: "v1", kind: "ServiceAccount", name, namespace: g.namespace, body: {} },
    {
      // What Istio's gateway chart grants with a Role (the gateway reads the TLS Secrets its Gateways name,
      // credentialName), bound from the ClusterRole the agent chart holds it in. The binding's name differs
      // from the Role-based one of earlier versions: a roleRef cannot change, so the old pair is pruned.
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      name: `${name}-secrets`,
      namespace: g.namespace,
      body: { roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: GATEWAY_SECRETS_CLUSTER_ROLE }, subjects: [{ kind: "ServiceAccount", name, namespace: g.namespace }] },
    },
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      name,
      namespace: g.namespace,
      body: {
        spec: compact({
          replicas: autoscaled ? undefined : k8s.replicaCount,
          selector: { matchLabels: selector },
          strategy: k8s.strategy,
          template: {
            metadata: compact({
              labels: { ...selector, "sidecar.istio.io/inject": "true", ...(cpRevision ? { "istio.io/rev": cpRevision } : {}) },
              annotations: { "inject.istio.io/templates": "gateway", ...asRecord(k8s.podAnnotations) },
            }),
            spec: compact({
              serviceAccountName: name,
              containers: [container],
              nodeSelector: k8s.nodeSelector,
              tolerations: k8s.tolerations,
              affinity: k8s.affinity,
              priorityClassName: k8s.priorityClassName,
              // As Istio's gateway chart: without a securityContext of its own, the gateway may bind ports below 1024.
              securityContext: k8s.securityContext ?? { sysctls: [{ name: "net.ipv4.ip_unprivileged_port_start", value: "0" }] },
              volumes: k8s.volumes,
            }),
          },
        }),
      },
    },
  ];
  if (active && !g.customService) {
    const svc = asRecord(k8s.service);
    const ports = asArray(svc.ports).length > 0 ? svc.ports : DEFAULT_PORTS[g.ingress ? "ingress" : "egress"];
    objects.push({
      apiVersion: "v1",
      kind: "Service",
      name: g.name,
      namespace: g.namespace,
      ...(k8s.serviceAnnotations !== undefined ? { annotations: asLabels(k8s.serviceAnnotations) ?? {} } : {}),
      body: {
        spec: compact({
          type: asString(svc.type) || (g.ingress ? "LoadBalancer" : "ClusterIP"),
          selector: { ...(svc.selector !== undefined ? asRecord(svc.selector) : g.labels), [LABEL_GATEWAY_REVISION]: revisionLabel },
          ports,
          ...Object.fromEntries(SERVICE_FIELDS.filter((f) => f !== "type" && f !== "selector" && f !== "ports").map((f) => [f, svc[f]])),
        }),
      },
    });
  }
  if (autoscaled) {
    objects.push({
      apiVersion: "autoscaling/v2",
      kind: "HorizontalPodAutoscaler",
      name,
      namespace: g.namespace,
      body: {
        spec: compact({
          scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name },
          minReplicas: asNumber(hpa.minReplicas) ?? 1,
          maxReplicas: asNumber(hpa.maxReplicas) ?? 5,
          metrics: asArray(hpa.metrics).length > 0 ? hpa.metrics : [{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 80 } } }],
          behavior: hpa.behavior,
        }),
      },
    });
  }
  if (k8s.podDisruptionBudget !== undefined) {
    const pdb = asRecord(k8s.podDisruptionBudget);
    objects.push({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      name,
      namespace: g.namespace,
      body: { spec: compact({ minAvailable: pdb.minAvailable ?? (pdb.maxUnavailable === undefined ? 1 : undefined), maxUnavailable: pdb.minAvailable === undefined ? pdb.maxUnavailable : undefined, selector: { matchLabels: selector } }) },
    });
  }
  return objects;
}

/** The object without undefined members (rendered output never carries them). */
function compact(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined && !(isRecord(v) && Object.keys(v).length === 0 && k !== "spec")) out[k] = v;
  return out;
}

/** `b` merged into `a` (maps merged key by key, `b` winning scalars and lists). */
function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = isRecord(out[k]) && isRecord(v) ? deepMerge(out[k], v) : v;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Validation of the Sail operator resources (their CRDs are not part of Istio's; a documented
// subset of sailoperator.io/v1: the fields gitmesh writes, with their types and required members).

const versionSchema = { type: "string", pattern: "^v\\d+\\.\\d+\\.\\d+$" };
const SAIL_SCHEMAS: Readonly<Record<string, object>> = {
  Istio: {
    type: "object",
    additionalProperties: false,
    required: ["version", "namespace"],
    properties: {
      version: versionSchema,
      namespace: { type: "string", minLength: 1 },
      profile: { type: "string" },
      updateStrategy: { type: "object", properties: { type: { enum: ["InPlace", "RevisionBased"] } } },
      values: { type: "object" },
    },
  },
  IstioRevisionTag: {
    type: "object",
    additionalProperties: false,
    required: ["targetRef"],
    properties: { targetRef: { type: "object", additionalProperties: false, required: ["kind", "name"], properties: { kind: { enum: ["Istio", "IstioRevision"] }, name: { type: "string", minLength: 1 } } } },
  },
  IstioCNI: {
    type: "object",
    additionalProperties: false,
    required: ["version", "namespace"],
    properties: { version: versionSchema, namespace: { type: "string", minLength: 1 }, profile: { type: "string" }, values: { type: "object" } },
  },
};
const sailValidators = new Map(Object.entries(SAIL_SCHEMAS).map(([k, s]) => [k, subsetValidator(s)]));

/** Issues of a Sail operator resource (`[]` when valid); undefined when `r` is not one. */
export function validateSailResource(r: IstioResource): { path: string; message: string }[] | undefined {
  if (r.apiVersion !== SAIL_API_VERSION) return undefined;
  const validate = sailValidators.get(r.kind);
  if (validate === undefined) return [{ path: "/kind", message: `no schema for ${r.apiVersion} ${r.kind}` }];
  if (r.metadata.namespace !== "") return [{ path: "/metadata/namespace", message: `${r.kind} is cluster-scoped` }];
  return validate(r.spec).map((i) => ({ path: `/spec${i.path}`, message: i.message }));
}
