/**
 * A deterministic configuration repository for the loader: `objects` schema-valid Gloo v2 objects
 * in multi-document YAML files, every reference resolvable and every object owned by a workspace,
 * so a correct loader reports zero diagnostics. Used by bench/config/load.bench.ts and by the
 * loader's scale test.
 */
import { stringify } from "yaml";

export interface ConfigRepoOptions {
  /** Total number of objects. Default 10,000. */
  readonly objects?: number;
  /** Objects per workspace (including Workspace and WorkspaceSettings). Default 100. */
  readonly objectsPerWorkspace?: number;
  /** Documents per file. Default 4 (1 = one object per file). */
  readonly docsPerFile?: number;
}

export interface GeneratedFile {
  readonly path: string;
  readonly content: string;
}

const ADMIN = "admin.gloo.solo.io/v2";
const NET = "networking.gloo.solo.io/v2";
const RES = "resilience.policy.gloo.solo.io/v2";
const SEC = "security.policy.gloo.solo.io/v2";
const TRAFFIC = "trafficcontrol.policy.gloo.solo.io/v2";

interface Obj {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { name: string; namespace: string; labels?: Record<string, string> };
  readonly spec: unknown;
}

const obj = (apiVersion: string, kind: string, name: string, namespace: string, spec: unknown, labels?: Record<string, string>): Obj => ({
  apiVersion,
  kind,
  metadata: labels ? { name, namespace, labels } : { name, namespace },
  spec,
});

/** The objects of one workspace after its Workspace: settings, gateway, then a repeating cycle. */
function* workspaceObjects(ws: string, ns: string, gwNs: string): Generator<Obj> {
  yield obj(ADMIN, "WorkspaceSettings", ws, ns, {
    importFrom: [{ workspaces: [{ name: "*" }], resources: [{ kind: "SERVICE" }] }],
    exportTo: [{ workspaces: [{ name: "*" }], resources: [{ kind: "VIRTUAL_DESTINATION" }] }],
  });
  yield obj(NET, "VirtualGateway", "north", gwNs, {
    workloads: [{ selector: { labels: { istio: "ingressgateway" }, cluster: "cluster1" } }],
    listeners: [{ http: {}, port: { number: 80 }, allowedRouteTables: [{ host: "*" }] }],
  });
  for (let i = 0; ; i++) {
    const svc = `svc-${i}`;
    yield obj(NET, "VirtualDestination", svc, ns, {
      hosts: [`${svc}.${ws}.global`],
      services: [{ labels: { app: svc } }],
      ports: [{ number: 8080, protocol: "HTTP", targetPort: { name: "http" } }],
    });
    yield obj(
      NET,
      "RouteTable",
      svc,
      ns,
      {
        hosts: [`${svc}.${ws}.example.com`],
        virtualGateways: [{ name: "north", namespace: gwNs }],
        http: [
          {
            name: "main",
            labels: { route: svc },
            matchers: [{ uri: { prefix: "/" } }],
            forwardTo: { destinations: [{ ref: { name: svc, namespace: ns }, kind: "VIRTUAL_DESTINATION", port: { number: 8080 } }] },
          },
        ],
      },
      { team: ws },
    );
    yield obj(RES, "RetryTimeoutPolicy", svc, ns, {
      applyToRoutes: [{ route: { labels: { route: svc } } }],
      config: { requestTimeout: "5s", retries: { attempts: 3, perTryTimeout: "2s" } },
    });
    yield obj(RES, "OutlierDetectionPolicy", svc, ns, {
      applyToDestinations: [{ kind: "VIRTUAL_DESTINATION", selector: { name: svc, namespace: ns } }],
      config: { consecutiveErrors: 5, interval: "10s", baseEjectionTime: "30s", maxEjectionPercent: 50 },
    });
    yield obj(SEC, "AccessPolicy", svc, ns, {
      applyToDestinations: [{ selector: { labels: { app: svc } } }],
      config: { authn: { tlsMode: "STRICT" }, authzList: [{ allowedClients: [{ serviceAccountSelector: { namespace: ns } }] }] },
    });
    yield obj(TRAFFIC, "HeaderManipulationPolicy", svc, ns, {
      applyToRoutes: [{ route: { labels: { route: svc } } }],
      config: { appendRequestHeaders: { "x-workspace": ws } },
    });
  }
}

export function generateConfigRepo(options: ConfigRepoOptions = {}): GeneratedFile[] {
  const total = options.objects ?? 10_000;
  const perWorkspace = Math.max(3, options.objectsPerWorkspace ?? 100);
  const docsPerFile = Math.max(1, options.docsPerFile ?? 4);
  const workspaceCount = Math.max(1, Math.ceil(total / perWorkspace));
  const files: GeneratedFile[] = [];
  let remaining = total;

  const workspaces: Obj[] = [];
  for (let w = 0; w < workspaceCount && remaining > 0; w++, remaining--) {
    const ws = `ws-${String(w).padStart(4, "0")}`;
    workspaces.push(obj(ADMIN, "Workspace", ws, "gloo-mesh", { workloadClusters: [{ name: "*", namespaces: [{ name: ws }, { name: `${ws}-gateways` }] }] }, { team: ws }));
  }
  pushFiles(files, "admin/workspaces", workspaces, docsPerFile);

  for (let w = 0; w < workspaces.length && remaining > 0; w++) {
    const ws = workspaces[w]!.metadata.name;
    const quota = Math.min(remaining, perWorkspace - 1);
    const list: Obj[] = [];
    const gen = workspaceObjects(ws, ws, `${ws}-gateways`);
    for (let i = 0; i < quota; i++) list.push(gen.next().value as Obj);
    remaining -= quota;
    pushFiles(files, `workspaces/${ws}/objects`, list, docsPerFile);
  }
  return files;
}

function pushFiles(files: GeneratedFile[], prefix: string, list: readonly Obj[], docsPerFile: number): void {
  for (let i = 0; i * docsPerFile < list.length; i++) {
    const chunk = list.slice(i * docsPerFile, (i + 1) * docsPerFile);
    files.push({ path: `${prefix}-${String(i).padStart(4, "0")}.yaml`, content: chunk.map((o) => stringify(o)).join("---\n") });
  }
}
