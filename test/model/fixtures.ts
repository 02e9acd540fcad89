/**
 * One realistic, valid document per supported kind (bookinfo on cluster1/cluster2, as in the Gloo docs),
 * shared by the validation tests and the typed-literal test. Typed with the generated types on purpose:
 * if a schema change breaks one of these, `tsc` fails as well as the tests.
 */
import type {
  CSRFPolicy,
  ExtAuthPolicy,
  ExtAuthServer,
  RateLimitClientConfig,
  RateLimitPolicy,
  RateLimitServerConfig,
  RateLimitServerSettings,
  TrimProxyConfigPolicy,
  ExternalEndpoint,
  JWTPolicy,
  GatewayLifecycleManager,
  IstioLifecycleManager,
  AccessPolicy,
  ConnectionPolicy,
  CORSPolicy,
  ExternalService,
  FailoverPolicy,
  FaultInjectionPolicy,
  GlooKind,
  HeaderManipulationPolicy,
  KubernetesCluster,
  LoadBalancerPolicy,
  MirrorPolicy,
  OutlierDetectionPolicy,
  ResourcesByKind,
  RetryTimeoutPolicy,
  RootTrustPolicy,
  RouteTable,
  VirtualDestination,
  VirtualGateway,
  Workspace,
  WorkspaceSettings,
} from "../../src/model/index.js";

const workspace: Workspace = {
  apiVersion: "admin.gloo.solo.io/v2",
  kind: "Workspace",
  metadata: { name: "bookinfo", namespace: "gloo-mesh", labels: { "gloo.solo.io/exportToGateway": "true" } },
  spec: {
    workloadClusters: [
      { name: "cluster1", namespaces: [{ name: "bookinfo-frontends" }, { name: "bookinfo-backends" }] },
      { name: "cluster2", namespaces: [{ name: "bookinfo-*", configEnabled: false }], configEnabled: true },
      { selector: { region: "us-east" }, namespaces: [{ labels: { team: "bookinfo" } }] },
    ],
  },
};

const workspaceSettings: WorkspaceSettings = {
  apiVersion: "admin.gloo.solo.io/v2",
  kind: "WorkspaceSettings",
  metadata: { name: "bookinfo", namespace: "bookinfo-frontends" },
  spec: {
    importFrom: [{ workspaces: [{ name: "gateways" }], resources: [{ kind: "SERVICE" }] }],
    exportTo: [{ workspaces: [{ selector: { "gloo.solo.io/global": "true" } }], resources: [{ kind: "SERVICE", labels: { app: "productpage" } }, { kind: "ALL", namespace: "bookinfo-backends" }] }],
    options: {
      serviceIsolation: { enabled: true, trimProxyConfig: true },
      federation: { enabled: false, hostSuffix: "global", serviceSelector: [{ namespace: "bookinfo-backends" }], ports: [{ number: 9080 }] },
      eastWestGateways: [{ selector: { labels: { istio: "eastwestgateway" } }, port: { name: "tls" }, hostInfoOverrides: [{ addr: "10.0.0.1", port: 15443 }] }],
      virtualDestClientMode: { tlsTermination: {} },
      trimAllProxyConfig: false,
    },
  },
};

const kubernetesCluster: KubernetesCluster = {
  apiVersion: "admin.gloo.solo.io/v2",
  kind: "KubernetesCluster",
  metadata: { name: "cluster1", namespace: "gloo-mesh", labels: { region: "us-east" } },
  spec: { clusterDomain: "cluster.local", skipWarming: false },
};

const rootTrustPolicy: RootTrustPolicy = {
  apiVersion: "admin.gloo.solo.io/v2",
  kind: "RootTrustPolicy",
  metadata: { name: "root-trust-policy", namespace: "gloo-mesh" },
  spec: {
    applyToMeshes: [{ istio: { revision: "1-20", clusterSelector: { region: "us-east" } } }],
    config: {
      mgmtServerCa: { generated: { ttlDays: 730, rsaKeySizeBytes: 4096, orgName: "gloo-mesh" } },
      intermediateCertOptions: { ttlDays: 365, secretRotationGracePeriodRatio: 0.1 },
      autoRestartPods: true,
    },
  },
};

const virtualDestination: VirtualDestination = {
  apiVersion: "networking.gloo.solo.io/v2",
  kind: "VirtualDestination",
  metadata: { name: "reviews", namespace: "bookinfo-backends" },
  spec: {
    hosts: ["reviews.global"],
    services: [{ namespace: "bookinfo-backends", labels: { app: "reviews" } }],
    ports: [{ number: 9080, protocol: "HTTP", targetPort: { name: "http" } }],
    clientMode: { auto: {} },
  },
};

const routeTable: RouteTable = {
  apiVersion: "networking.gloo.solo.io/v2",
  kind: "RouteTable",
  metadata: { name: "productpage", namespace: "bookinfo-frontends", annotations: { "cluster.solo.io/cluster": "cluster1" } },
  spec: {
    hosts: ["*"],
    virtualGateways: [{ name: "north-south-gw", namespace: "istio-gateways", cluster: "cluster1" }],
    workloadSelectors: [],
    http: [
      {
        name: "productpage",
        labels: { route: "productpage" },
        matchers: [{ uri: { exact: "/productpage" } }, { uri: { prefix: "/static" } }, { uri: { prefix: "/api/v1/products" }, headers: [{ name: "x-canary", value: "true" }], method: "GET" }],
        forwardTo: { destinations: [{ ref: { name: "productpage", namespace: "bookinfo-frontends" }, port: { number: 9080 }, weight: 100 }] },
      },
      { name: "reviews", matchers: [{ uri: { prefix: "/reviews" } }], forwardTo: { destinations: [{ ref: { name: "reviews" }, kind: "VIRTUAL_DESTINATION", port: { number: 9080 } }], pathRewrite: "/", autoHostRewrite: true } },
      { name: "legacy", matchers: [{ uri: { prefix: "/old" } }], redirect: { hostRedirect: "bookinfo.example.com", pathRedirect: "/productpage", responseCode: "PERMANENT_REDIRECT" } },
      { name: "health", matchers: [{ uri: { exact: "/healthz" } }], directResponse: { status: 200, body: "ok" } },
      { name: "teams", delegate: { routeTables: [{ labels: { team: "bookinfo" } }], sortMethod: "ROUTE_SPECIFICITY" } },
    ],
    tcp: [{ matchers: [{ port: 3306 }], forwardTo: { destinations: [{ ref: { name: "mysql" }, port: { number: 3306 } }] } }],
    tls: [{ matchers: [{ sniHosts: ["db.example.com"], port: 443 }], forwardTo: { destinations: [{ ref: { name: "db" }, port: { number: 443 } }] } }],
    weight: 10,
    failureMode: "FREEZE_CONFIG",
  },
};

const virtualGateway: VirtualGateway = {
  apiVersion: "networking.gloo.solo.io/v2",
  kind: "VirtualGateway",
  metadata: { name: "north-south-gw", namespace: "istio-gateways" },
  spec: {
    workloads: [{ selector: { labels: { istio: "ingressgateway" }, cluster: "cluster1" } }],
    listeners: [
      { http: {}, port: { number: 80 }, httpsRedirect: true },
      {
        http: {},
        port: { number: 443 },
        tls: { mode: "SIMPLE", secretName: "tls-secret", parameters: { minimumProtocolVersion: "TLSv1_2" } },
        allowedRouteTables: [{ host: "*", selector: { workspace: "bookinfo" } }],
        appProtocol: "HTTPS",
      },
    ],
  },
};

const externalService: ExternalService = {
  apiVersion: "networking.gloo.solo.io/v2",
  kind: "ExternalService",
  metadata: { name: "httpbin", namespace: "bookinfo-backends" },
  spec: {
    hosts: ["httpbin.org"],
    ports: [
      { name: "http", number: 80, protocol: "HTTP" },
      { name: "https", number: 443, protocol: "HTTPS", clientsideTls: { sni: "httpbin.org", mode: "SIMPLE" } },
    ],
  },
};

const retryTimeoutPolicy: RetryTimeoutPolicy = {
  apiVersion: "resilience.policy.gloo.solo.io/v2",
  kind: "RetryTimeoutPolicy",
  metadata: { name: "reviews-retry", namespace: "bookinfo-backends" },
  spec: {
    applyToRoutes: [{ route: { labels: { route: "reviews" } } }],
    config: { requestTimeout: "10s", retries: { attempts: 3, perTryTimeout: "1m30s", retryOn: "connect-failure,5xx", retryRemoteLocalities: true } },
  },
};

const faultInjectionPolicy: FaultInjectionPolicy = {
  apiVersion: "resilience.policy.gloo.solo.io/v2",
  kind: "FaultInjectionPolicy",
  metadata: { name: "ratings-fault", namespace: "bookinfo-backends" },
  spec: {
    applyToRoutes: [{ route: { labels: { route: "ratings" } } }],
    config: { delay: { fixedDelay: "2s", percentage: 50 }, abort: { httpStatus: 503, percentage: 10.5 } },
  },
};

const failoverPolicy: FailoverPolicy = {
  apiVersion: "resilience.policy.gloo.solo.io/v2",
  kind: "FailoverPolicy",
  metadata: { name: "reviews-failover", namespace: "bookinfo-backends" },
  spec: {
    applyToDestinations: [{ kind: "VIRTUAL_DESTINATION", selector: { name: "reviews" } }],
    config: {
      localityMappings: [{ from: { region: "us-east1", zone: "us-east1-b" }, to: [{ region: "us-west1", weight: 80 }, { region: "us-central1", weight: 20 }] }],
    },
  },
};

const outlierDetectionPolicy: OutlierDetectionPolicy = {
  apiVersion: "resilience.policy.gloo.solo.io/v2",
  kind: "OutlierDetectionPolicy",
  metadata: { name: "reviews-outlier", namespace: "bookinfo-backends" },
  spec: {
    applyToDestinations: [{ kind: "VIRTUAL_DESTINATION", selector: { name: "reviews" } }],
    config: { consecutiveErrors: 2, interval: "5s", baseEjectionTime: "30s", maxEjectionPercent: 100 },
  },
};

const connectionPolicy: ConnectionPolicy = {
  apiVersion: "resilience.policy.gloo.solo.io/v2",
  kind: "ConnectionPolicy",
  metadata: { name: "details-connections", namespace: "bookinfo-backends" },
  spec: {
    applyToDestinations: [{ selector: { labels: { app: "details" } }, port: { number: 9080 } }],
    config: {
      tcp: { maxConnections: 100, connectTimeout: "250ms", tcpKeepalive: { probes: 3, time: "7200s", interval: "75s" } },
      http: { maxRequestsPerConnection: 10, maxPendingRequests: 64, idleTimeout: "1h" },
    },
  },
};

const accessPolicy: AccessPolicy = {
  apiVersion: "security.policy.gloo.solo.io/v2",
  kind: "AccessPolicy",
  metadata: { name: "reviews-access", namespace: "bookinfo-backends" },
  spec: {
    applyToWorkloads: [{ selector: { labels: { app: "reviews" }, namespace: "bookinfo-backends" } }],
    config: {
      authn: { tlsMode: "STRICT" },
      authzList: [
        {
          allowedClients: [{ serviceAccountSelector: { name: "bookinfo-productpage", namespace: "bookinfo-frontends" } }],
          allowedPaths: ["/reviews*"],
          allowedMethods: ["GET"],
          match: { request: { headers: { "x-user": { values: ["jason"] } } } },
        },
      ],
    },
  },
};

const corsPolicy: CORSPolicy = {
  apiVersion: "security.policy.gloo.solo.io/v2",
  kind: "CORSPolicy",
  metadata: { name: "productpage-cors", namespace: "bookinfo-frontends" },
  spec: {
    applyToRoutes: [{ route: { labels: { route: "productpage" } } }],
    config: { allowOrigins: [{ exact: "https://bookinfo.example.com" }, { regex: "https://.*\\.example\\.com" }], allowMethods: ["GET", "POST"], allowHeaders: ["content-type"], maxAge: "1h", allowCredentials: true },
  },
};

const headerManipulationPolicy: HeaderManipulationPolicy = {
  apiVersion: "trafficcontrol.policy.gloo.solo.io/v2",
  kind: "HeaderManipulationPolicy",
  metadata: { name: "productpage-headers", namespace: "bookinfo-frontends" },
  spec: {
    applyToRoutes: [{ route: { labels: { route: "productpage" } } }],
    config: { appendRequestHeaders: { "x-request-source": "gateway" }, removeResponseHeaders: ["server"] },
  },
};

const mirrorPolicy: MirrorPolicy = {
  apiVersion: "trafficcontrol.policy.gloo.solo.io/v2",
  kind: "MirrorPolicy",
  metadata: { name: "reviews-mirror", namespace: "bookinfo-backends" },
  spec: {
    applyToRoutes: [{ withDestinations: { selector: { name: "reviews" }, kind: "SERVICE" } }],
    config: { destination: { ref: { name: "reviews-v3", namespace: "bookinfo-backends", cluster: "cluster2" }, port: { number: 9080 } }, percentage: 25 },
  },
};

const loadBalancerPolicy: LoadBalancerPolicy = {
  apiVersion: "trafficcontrol.policy.gloo.solo.io/v2",
  kind: "LoadBalancerPolicy",
  metadata: { name: "ratings-sticky", namespace: "bookinfo-backends" },
  spec: {
    applyToDestinations: [{ selector: { labels: { app: "ratings" } } }],
    config: { consistentHash: { httpCookie: { name: "session", ttl: "30m" } }, warmupDurationSecs: "60s", updateMergeWindow: "1s" },
  },
};

const istioLifecycleManager: IstioLifecycleManager = {
  apiVersion: "admin.gloo.solo.io/v2",
  kind: "IstioLifecycleManager",
  metadata: { name: "istiod-control-plane", namespace: "gloo-mesh" },
  spec: {
    installations: [
      {
        revision: "1-29",
        clusters: [{ name: "cluster1", defaultRevision: true }],
        istioOperatorSpec: {
          profile: "minimal",
          hub: "docker.io/istio",
          tag: "1.29.0",
          namespace: "istio-system",
          meshConfig: { accessLogFile: "/dev/stdout" },
          values: { global: { meshID: "mesh1", network: "cluster1" } },
          components: { pilot: { k8s: { env: [{ name: "PILOT_ENABLE_K8S_SELECT_WORKLOAD_ENTRIES", value: "false" }] } } },
        },
      },
    ],
  },
};

const gatewayLifecycleManager: GatewayLifecycleManager = {
  apiVersion: "admin.gloo.solo.io/v2",
  kind: "GatewayLifecycleManager",
  metadata: { name: "istio-ingressgateway", namespace: "gloo-mesh" },
  spec: {
    installations: [
      {
        gatewayRevision: "1-29",
        controlPlaneRevision: "1-29",
        clusters: [{ name: "cluster1", activeGateway: true }],
        istioOperatorSpec: {
          profile: "empty",
          hub: "docker.io/istio",
          tag: "1.29.0",
          components: {
            ingressGateways: [
              { name: "istio-ingressgateway", namespace: "istio-gateways", enabled: true, label: { istio: "ingressgateway" }, k8s: { service: { type: "LoadBalancer", ports: [{ name: "http2", port: 80, targetPort: 8080 }] } } },
            ],
          },
        },
      },
    ],
  },
};

const jwtPolicy: JWTPolicy = {
  apiVersion: "security.policy.gloo.solo.io/v2",
  kind: "JWTPolicy",
  metadata: { name: "require-jwt", namespace: "bookinfo-frontends" },
  spec: {
    applyToRoutes: [{ route: { labels: { oauth: "true" } } }],
    config: {
      phase: { preAuthz: {} },
      providers: {
        keycloak: {
          issuer: "https://keycloak.example.com/realms/workshop",
          audiences: ["bookinfo"],
          remote: { url: "https://keycloak.example.com/realms/workshop/protocol/openid-connect/certs", timeout: "5s" },
          tokenSource: { headers: [{ name: "Authorization", prefix: "Bearer " }] },
          claimsToHeaders: [{ claim: "email", header: "x-email" }],
        },
      },
      claims: [{ key: "group", values: ["admins"] }],
    },
  },
};

const externalEndpoint: ExternalEndpoint = {
  apiVersion: "networking.gloo.solo.io/v2",
  kind: "ExternalEndpoint",
  metadata: { name: "db-1", namespace: "bookinfo-backends", labels: { host: "db" } },
  spec: { address: "10.0.0.5", ports: [{ name: "tcp", number: 5432 }], locality: { region: "us-east-1", zone: "us-east-1a" } },
};

const trimProxyConfigPolicy: TrimProxyConfigPolicy = {
  apiVersion: "resilience.policy.gloo.solo.io/v2",
  kind: "TrimProxyConfigPolicy",
  metadata: { name: "productpage-trim", namespace: "bookinfo-frontends" },
  spec: {
    applyToWorkloads: [{ selector: { labels: { app: "productpage" } } }],
    config: { includedDestinations: [{ selector: { name: "reviews", namespace: "bookinfo-backends" } }, { kind: "EXTERNAL_SERVICE", selector: {} }] },
  },
};

const csrfPolicy: CSRFPolicy = {
  apiVersion: "security.policy.gloo.solo.io/v2",
  kind: "CSRFPolicy",
  metadata: { name: "csrf", namespace: "bookinfo-frontends" },
  spec: { applyToRoutes: [{ route: { labels: { "csrf-enabled": "true" } } }], config: { filterEnabled: true, percentage: 50, additionalOrigins: [{ exact: "login.example.com" }] } },
};

const rateLimitServerConfig: RateLimitServerConfig = {
  apiVersion: "admin.gloo.solo.io/v2",
  kind: "RateLimitServerConfig",
  metadata: { name: "limits", namespace: "gloo-mesh-addons" },
  spec: {
    destinationServers: [{ ref: { name: "rate-limiter", namespace: "gloo-mesh-addons", cluster: "cluster-1" }, port: { name: "grpc" } }],
    raw: { descriptors: [{ key: "generic_key", value: "counter", rateLimit: { requestsPerUnit: 10, unit: "MINUTE" }, descriptors: [{ key: "remote_address", rateLimit: { requestsPerUnit: 2, unit: "SECOND" } }] }] },
  },
};

const rateLimitServerSettings: RateLimitServerSettings = {
  apiVersion: "admin.gloo.solo.io/v2",
  kind: "RateLimitServerSettings",
  metadata: { name: "rate-limit-server", namespace: "bookinfo-frontends" },
  spec: { destinationServer: { ref: { name: "rate-limiter", namespace: "gloo-mesh-addons", cluster: "cluster-1" }, port: { name: "grpc" } }, requestTimeout: "200ms", denyOnFail: true },
};

const rateLimitClientConfig: RateLimitClientConfig = {
  apiVersion: "trafficcontrol.policy.gloo.solo.io/v2",
  kind: "RateLimitClientConfig",
  metadata: { name: "per-client", namespace: "bookinfo-frontends" },
  spec: { raw: { rateLimits: [{ actions: [{ genericKey: { descriptorValue: "counter" } }, { remoteAddress: {} }] }, { actions: [{ requestHeaders: { headerName: "x-user", descriptorKey: "user" } }] }] } },
};

const rateLimitPolicy: RateLimitPolicy = {
  apiVersion: "trafficcontrol.policy.gloo.solo.io/v2",
  kind: "RateLimitPolicy",
  metadata: { name: "limit-reviews", namespace: "bookinfo-frontends" },
  spec: {
    applyToRoutes: [{ route: { labels: { ratelimited: "true" } } }],
    config: {
      ratelimitServerConfig: { name: "limits", namespace: "gloo-mesh-addons" },
      serverSettings: { name: "rate-limit-server" },
      ratelimitClientConfig: { name: "per-client" },
      phase: { postAuthz: { priority: 1 } },
    },
  },
};

const extAuthServer: ExtAuthServer = {
  apiVersion: "admin.gloo.solo.io/v2",
  kind: "ExtAuthServer",
  metadata: { name: "ext-auth-server", namespace: "bookinfo-frontends" },
  spec: { destinationServer: { ref: { cluster: "cluster-1", name: "ext-auth-service", namespace: "gloo-mesh-addons" }, port: { name: "grpc" } }, requestTimeout: "1s", requestBody: { maxRequestBytes: 8192 }, statusOnError: 503 },
};

const extAuthPolicy: ExtAuthPolicy = {
  apiVersion: "security.policy.gloo.solo.io/v2",
  kind: "ExtAuthPolicy",
  metadata: { name: "productpage-oidc", namespace: "bookinfo-frontends" },
  spec: {
    applyToRoutes: [{ route: { labels: { oauth: "true" } } }],
    config: {
      server: { name: "ext-auth-server", namespace: "bookinfo-frontends", cluster: "cluster-1" },
      glooAuth: { configs: [{ oauth2: { oidcAuthorizationCode: { appUrl: "https://bookinfo.example.com", callbackPath: "/callback", clientId: "bookinfo" } } }, { name: "opa", opaAuth: { modules: [{ name: "allow", namespace: "bookinfo-frontends" }], query: "data.test.allow == true" } }] },
    },
  },
};

/** A valid document for every supported kind. */
export const VALID: { readonly [K in GlooKind]: ResourcesByKind[K] } = {
  Workspace: workspace,
  WorkspaceSettings: workspaceSettings,
  KubernetesCluster: kubernetesCluster,
  RootTrustPolicy: rootTrustPolicy,
  IstioLifecycleManager: istioLifecycleManager,
  GatewayLifecycleManager: gatewayLifecycleManager,
  VirtualDestination: virtualDestination,
  RouteTable: routeTable,
  VirtualGateway: virtualGateway,
  ExternalService: externalService,
  ExternalEndpoint: externalEndpoint,
  RetryTimeoutPolicy: retryTimeoutPolicy,
  FaultInjectionPolicy: faultInjectionPolicy,
  FailoverPolicy: failoverPolicy,
  OutlierDetectionPolicy: outlierDetectionPolicy,
  ConnectionPolicy: connectionPolicy,
  TrimProxyConfigPolicy: trimProxyConfigPolicy,
  AccessPolicy: accessPolicy,
  CORSPolicy: corsPolicy,
  JWTPolicy: jwtPolicy,
  CSRFPolicy: csrfPolicy,
  ExtAuthPolicy: extAuthPolicy,
  ExtAuthServer: extAuthServer,
  RateLimitPolicy: rateLimitPolicy,
  RateLimitClientConfig: rateLimitClientConfig,
  RateLimitServerConfig: rateLimitServerConfig,
  RateLimitServerSettings: rateLimitServerSettings,
  HeaderManipulationPolicy: headerManipulationPolicy,
  MirrorPolicy: mirrorPolicy,
  LoadBalancerPolicy: loadBalancerPolicy,
};
