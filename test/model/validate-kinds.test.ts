/* eslint-disable @typescript-eslint/no-explicit-any -- these tests edit valid documents into deliberately malformed ones */
import { describe, expect, it } from "vitest";
import { SUPPORTED_KINDS, validateResource, type GlooKind } from "../../src/model/index.js";
import { VALID } from "./fixtures.js";

type Doc = Record<string, any>;
interface Case {
  readonly name: string;
  readonly edit: (d: Doc) => void;
  /** Exactly the [path, keyword] pairs expected, sorted by path then keyword. */
  readonly expect: readonly (readonly [string, string])[];
  /** Substrings the message of the first issue must contain. */
  readonly message?: readonly string[];
}

/** At least three invalid cases per kind: the type says so, so the type check (not a test) enforces it. */
type AtLeastThree = readonly [Case, Case, Case, ...Case[]];
const INVALID: { readonly [K in GlooKind]: AtLeastThree } = {
  Workspace: [
    { name: "unknown field", edit: (d) => (d.spec.workloadClusters[0].namespace = [{ name: "x" }]), expect: [["/spec/workloadClusters/0/namespace", "additionalProperties"]], message: ["did you mean `namespaces`?"] },
    { name: "wrong type", edit: (d) => (d.spec.workloadClusters[1].configEnabled = "yes"), expect: [["/spec/workloadClusters/1/configEnabled", "type"]], message: ["expected a boolean", "\"yes\""] },
    { name: "missing namespace", edit: (d) => delete d.metadata.namespace, expect: [["/metadata", "required"]], message: ["`namespace`"] },
    { name: "invalid name", edit: (d) => (d.metadata.name = "Book_Info"), expect: [["/metadata/name", "pattern"]], message: ["not a valid Kubernetes name"] },
    { name: "label value not a string", edit: (d) => (d.metadata.labels = { global: true }), expect: [["/metadata/labels/global", "type"]], message: ["quote it"] },
  ],
  WorkspaceSettings: [
    { name: "wrong enum", edit: (d) => (d.spec.exportTo[0].resources[0].kind = "SERVICES"), expect: [["/spec/exportTo/0/resources/0/kind", "enum"]], message: ['did you mean "SERVICE"', '"VIRTUAL_DESTINATION"'] },
    { name: "oneof: two client modes", edit: (d) => (d.spec.options.virtualDestClientMode = { auto: {}, sniRouting: {} }), expect: [["/spec/options/virtualDestClientMode", "oneOf"]], message: ["`auto` and `sniRouting`"] },
    { name: "port out of range", edit: (d) => (d.spec.options.eastWestGateways[0].hostInfoOverrides[0].port = 70000), expect: [["/spec/options/eastWestGateways/0/hostInfoOverrides/0/port", "maximum"]] },
    { name: "unknown option", edit: (d) => (d.spec.options.serviceIsolaton = { enabled: true }), expect: [["/spec/options/serviceIsolaton", "additionalProperties"]], message: ["did you mean `serviceIsolation`?"] },
  ],
  KubernetesCluster: [
    { name: "wrong type", edit: (d) => (d.spec.skipWarming = "true"), expect: [["/spec/skipWarming", "type"]], message: ["without quotes"] },
    { name: "unknown field", edit: (d) => (d.spec.clusterdomain = "x"), expect: [["/spec/clusterdomain", "additionalProperties"]], message: ["did you mean `clusterDomain`?"] },
    { name: "wrong apiVersion", edit: (d) => (d.apiVersion = "multicluster.solo.io/v1alpha1"), expect: [["/apiVersion", "kind"]], message: ["admin.gloo.solo.io/v2"] },
    { name: "metadata missing", edit: (d) => delete d.metadata, expect: [["", "required"]], message: ["`metadata`"] },
  ],
  RootTrustPolicy: [
    { name: "oneof: two CAs", edit: (d) => (d.spec.config.agentCa = { vault: { server: "https://vault:8200" } }), expect: [["/spec/config", "oneOf"]], message: ["`mgmtServerCa` and `agentCa`"] },
    { name: "ratio out of range", edit: (d) => (d.spec.config.intermediateCertOptions.secretRotationGracePeriodRatio = 1.5), expect: [["/spec/config/intermediateCertOptions/secretRotationGracePeriodRatio", "exclusiveMaximum"]] },
    { name: "negative ttl", edit: (d) => (d.spec.config.mgmtServerCa.generated.ttlDays = -1), expect: [["/spec/config/mgmtServerCa/generated/ttlDays", "minimum"]] },
    { name: "unknown mesh selector field", edit: (d) => (d.spec.applyToMeshes[0].istio.revisions = "1-20"), expect: [["/spec/applyToMeshes/0/istio/revisions", "additionalProperties"]], message: ["did you mean `revision`?"] },
  ],
  IstioLifecycleManager: [
    { name: "cluster without name", edit: (d) => delete d.spec.installations[0].clusters[0].name, expect: [["/spec/installations/0/clusters/0", "required"]], message: ["`name`"] },
    { name: "typo in operator spec", edit: (d) => (d.spec.installations[0].istioOperatorSpec.meshconfig = {}), expect: [["/spec/installations/0/istioOperatorSpec/meshconfig", "additionalProperties"]], message: ["did you mean `meshConfig`?"] },
    { name: "env without name", edit: (d) => (d.spec.installations[0].istioOperatorSpec.components.pilot.k8s.env = [{ value: "x" }]), expect: [["/spec/installations/0/istioOperatorSpec/components/pilot/k8s/env/0", "required"]] },
    { name: "defaultRevision as string", edit: (d) => (d.spec.installations[0].clusters[0].defaultRevision = "true"), expect: [["/spec/installations/0/clusters/0/defaultRevision", "type"]] },
  ],
  GatewayLifecycleManager: [
    { name: "unknown component", edit: (d) => (d.spec.installations[0].istioOperatorSpec.components.ingressGateway = []), expect: [["/spec/installations/0/istioOperatorSpec/components/ingressGateway", "additionalProperties"]], message: ["did you mean `ingressGateways`?"] },
    { name: "label not a string map", edit: (d) => (d.spec.installations[0].istioOperatorSpec.components.ingressGateways[0].label = { istio: 1 }), expect: [["/spec/installations/0/istioOperatorSpec/components/ingressGateways/0/label/istio", "type"]] },
    { name: "port as string", edit: (d) => (d.spec.installations[0].istioOperatorSpec.components.ingressGateways[0].k8s.service.ports[0].port = "80"), expect: [["/spec/installations/0/istioOperatorSpec/components/ingressGateways/0/k8s/service/ports/0/port", "type"]] },
  ],
  JWTPolicy: [
    { name: "local and remote keys", edit: (d) => (d.spec.config.providers.keycloak.local = { inline: "x" }), expect: [["/spec/config/providers/keycloak", "oneOf"]], message: ["`local` and `remote`"] },
    { name: "remote without url", edit: (d) => delete d.spec.config.providers.keycloak.remote.url, expect: [["/spec/config/providers/keycloak/remote", "required"]], message: ["`url`"] },
    { name: "unknown validation policy", edit: (d) => (d.spec.config.validationPolicy = "OPTIONAL"), expect: [["/spec/config/validationPolicy", "enum"]] },
    { name: "claim without key", edit: (d) => delete d.spec.config.claims[0].key, expect: [["/spec/config/claims/0", "required"]], message: ["`key`"] },
  ],
  ExternalEndpoint: [
    { name: "port out of range", edit: (d) => (d.spec.ports[0].number = 70000), expect: [["/spec/ports/0/number", "maximum"]] },
    { name: "port without number", edit: (d) => delete d.spec.ports[0].number, expect: [["/spec/ports/0", "required"]], message: ["`number`"] },
    { name: "typo in locality", edit: (d) => (d.spec.locality.subzone = "a"), expect: [["/spec/locality/subzone", "additionalProperties"]], message: ["did you mean `subZone`?"] },
  ],
  TrimProxyConfigPolicy: [
    { name: "unknown destination kind", edit: (d) => (d.spec.config.includedDestinations[1].kind = "SERVICES"), expect: [["/spec/config/includedDestinations/1/kind", "enum"]] },
    { name: "typo in config", edit: (d) => (d.spec.config.includedDestination = []), expect: [["/spec/config/includedDestination", "additionalProperties"]], message: ["did you mean `includedDestinations`?"] },
    { name: "selector not a mapping", edit: (d) => (d.spec.applyToWorkloads[0].selector = "productpage"), expect: [["/spec/applyToWorkloads/0/selector", "type"]] },
  ],
  CSRFPolicy: [
    { name: "percentage over 100", edit: (d) => (d.spec.config.percentage = 150), expect: [["/spec/config/percentage", "maximum"]] },
    { name: "applyToDestinations (not in Gloo 2.6)", edit: (d) => (d.spec.applyToDestinations = [{ selector: {} }]), expect: [["/spec/applyToDestinations", "additionalProperties"]] },
    { name: "origin with two matchers", edit: (d) => (d.spec.config.additionalOrigins[0].prefix = "login"), expect: [["/spec/config/additionalOrigins/0", "oneOf"]] },
  ],
  ExtAuthServer: [
    { name: "status not an HTTP status Envoy accepts", edit: (d) => (d.spec.statusOnError = 499), expect: [["/spec/statusOnError", "enum"]] },
    { name: "unknown transport version", edit: (d) => (d.spec.transportApiVersion = "V2"), expect: [["/spec/transportApiVersion", "enum"]] },
    { name: "typo in httpService", edit: (d) => (d.spec.httpService = { pathPrefx: "/auth" }), expect: [["/spec/httpService/pathPrefx", "additionalProperties"]], message: ["did you mean `pathPrefix`?"] },
  ],
  ExtAuthPolicy: [
    { name: "disable (Gloo 2.6: unsupported)", edit: (d) => { delete d.spec.config.glooAuth; d.spec.config.disable = true; }, expect: [["/spec/config/disable", "rule"]], message: ["The disable field is currently unsupported"] },
    { name: "glooAuth and customAuth together", edit: (d) => (d.spec.config.customAuth = {}), expect: [["/spec/config", "oneOf"]] },
    { name: "a config entry with two kinds", edit: (d) => (d.spec.config.glooAuth.configs[0].apiKeyAuth = {}), expect: [["/spec/config/glooAuth/configs/0", "oneOf"]] },
    { name: "unknown config kind", edit: (d) => (d.spec.config.glooAuth.configs[1] = { opaAuthh: {} }), expect: [["/spec/config/glooAuth/configs/1/opaAuthh", "additionalProperties"]], message: ["did you mean `opaAuth`?"] },
  ],
  RateLimitServerConfig: [
    { name: "no destinationServers (required)", edit: (d) => delete d.spec.destinationServers, expect: [["/spec", "required"]], message: ["`destinationServers`"] },
    { name: "unit not an enum value", edit: (d) => (d.spec.raw.descriptors[0].rateLimit.unit = "MINUTES"), expect: [["/spec/raw/descriptors/0/rateLimit/unit", "enum"]], message: ['did you mean "MINUTE"'] },
    { name: "nested descriptor without key", edit: (d) => delete d.spec.raw.descriptors[0].descriptors[0].key, expect: [["/spec/raw/descriptors/0/descriptors/0", "required"]], message: ["`key`"] },
  ],
  RateLimitServerSettings: [
    { name: "timeout not a duration", edit: (d) => (d.spec.requestTimeout = "fast"), expect: [["/spec/requestTimeout", "pattern"]] },
    { name: "denyOnFail not a boolean", edit: (d) => (d.spec.denyOnFail = "yes"), expect: [["/spec/denyOnFail", "type"]] },
    { name: "server without ref", edit: (d) => delete d.spec.destinationServer.ref, expect: [["/spec/destinationServer", "required"]], message: ["`ref`"] },
  ],
  RateLimitClientConfig: [
    { name: "action with two kinds", edit: (d) => (d.spec.raw.rateLimits[0].actions[0].remoteAddress = {}), expect: [["/spec/raw/rateLimits/0/actions/0", "oneOf"]] },
    { name: "requestHeaders without descriptorKey", edit: (d) => delete d.spec.raw.rateLimits[1].actions[0].requestHeaders.descriptorKey, expect: [["/spec/raw/rateLimits/1/actions/0/requestHeaders", "required"]], message: ["`descriptorKey`"] },
    { name: "typo in raw", edit: (d) => (d.spec.raw.rateLimit = []), expect: [["/spec/raw/rateLimit", "additionalProperties"]], message: ["did you mean `rateLimits`?"] },
  ],
  RateLimitPolicy: [
    { name: "raw and ratelimitClientConfig together", edit: (d) => (d.spec.config.raw = { rateLimits: [] }), expect: [["/spec/config", "oneOf"]] },
    { name: "both phases", edit: (d) => (d.spec.config.phase.preAuthz = {}), expect: [["/spec/config/phase", "oneOf"]] },
    { name: "server config reference without name", edit: (d) => delete d.spec.config.ratelimitServerConfig.name, expect: [["/spec/config/ratelimitServerConfig", "required"]], message: ["`name`"] },
  ],
  VirtualDestination: [
    { name: "port without number", edit: (d) => delete d.spec.ports[0].number, expect: [["/spec/ports/0", "required"]], message: ["`number`"] },
    { name: "empty ports", edit: (d) => (d.spec.ports = []), expect: [["/spec/ports", "minItems"]] },
    { name: "wrong protocol", edit: (d) => (d.spec.ports[0].protocol = "http"), expect: [["/spec/ports/0/protocol", "enum"]], message: ['did you mean "HTTP"'] },
    { name: "port number as string", edit: (d) => (d.spec.ports[0].number = "9080"), expect: [["/spec/ports/0/number", "type"]], message: ["remove the quotes"] },
    { name: "wildcard host", edit: (d) => (d.spec.hosts = ["*.global"]), expect: [["/spec/hosts/0", "pattern"]] },
  ],
  RouteTable: [
    { name: "typo forwardto", edit: (d) => { d.spec.http[0].forwardto = d.spec.http[0].forwardTo; delete d.spec.http[0].forwardTo; }, expect: [["/spec/http/0/forwardto", "additionalProperties"]], message: ["unknown field `forwardto`; did you mean `forwardTo`?"] },
    { name: "two actions", edit: (d) => (d.spec.http[3].forwardTo = { destinations: [] }), expect: [["/spec/http/3", "oneOf"]], message: ["`forwardTo` and `directResponse` are set together; set at most one of `forwardTo`, `delegate`, `redirect`, `directResponse`, `graphql`"] },
    { name: "wrong enum", edit: (d) => (d.spec.failureMode = "FREEZE"), expect: [["/spec/failureMode", "enum"]], message: ['"ROUTE_REPLACEMENT", "FREEZE_CONFIG"'] },
    { name: "two uri matchers", edit: (d) => (d.spec.http[0].matchers[0].uri.prefix = "/"), expect: [["/spec/http/0/matchers/0/uri", "oneOf"]], message: ["`exact` and `prefix`"] },
    { name: "destination without ref", edit: (d) => delete d.spec.http[0].forwardTo.destinations[0].ref, expect: [["/spec/http/0/forwardTo/destinations/0", "oneOf"]], message: ["`ref`, `awsLambda`"] },
    { name: "status out of range", edit: (d) => (d.spec.http[3].directResponse.status = 700), expect: [["/spec/http/3/directResponse/status", "maximum"]] },
    { name: "hosts not a list", edit: (d) => (d.spec.hosts = "*"), expect: [["/spec/hosts", "type"]], message: ["expected a list", "write it as a list"] },
    { name: "delegated table with failureMode (Gloo CRD rule)", edit: (d) => { delete d.spec.hosts; delete d.spec.virtualGateways; d.spec.failureMode = "FREEZE_CONFIG"; }, expect: [["/spec/failureMode", "rule"]], message: ["The failureMode field must be empty or unset for delegated RouteTables."] },
    { name: "no routes at all (Gloo CRD rule)", edit: (d) => { delete d.spec.http; delete d.spec.tcp; delete d.spec.tls; }, expect: [["/spec", "anyOf"]], message: ["set at least one of `http`, `tcp`, `tls`"] },
  ],
  VirtualGateway: [
    { name: "missing listeners", edit: (d) => delete d.spec.listeners, expect: [["/spec", "required"]], message: ["`listeners`"] },
    { name: "tls and httpsRedirect", edit: (d) => (d.spec.listeners[1].httpsRedirect = true), expect: [["/spec/listeners/1", "oneOf"]], message: ["`tls` and `httpsRedirect`"] },
    { name: "wrong tls mode", edit: (d) => (d.spec.listeners[1].tls.mode = "STRICT"), expect: [["/spec/listeners/1/tls/mode", "enum"]], message: ['"PASSTHROUGH"'] },
    { name: "missing port", edit: (d) => delete d.spec.listeners[0].port, expect: [["/spec/listeners/0", "required"]], message: ["`port`"] },
    { name: "port name and number", edit: (d) => (d.spec.listeners[0].port.name = "http"), expect: [["/spec/listeners/0/port", "oneOf"]] },
    { name: "SIMPLE without a certificate (Gloo CRD rule)", edit: (d) => delete d.spec.listeners[1].tls.secretName, expect: [["/spec/listeners/1/tls", "rule"]], message: ["If mode is SIMPLE, either secretName or both files.serverCert and files.privateKey must be set."] },
    { name: "ISTIO_MUTUAL with a secret (Gloo CRD rule)", edit: (d) => (d.spec.listeners[1].tls.mode = "ISTIO_MUTUAL"), expect: [["/spec/listeners/1/tls/secretName", "rule"]], message: ["If mode is ISTIO_MUTUAL, secretName must not be set."] },
  ],
  ExternalService: [
    { name: "hosts and addresses", edit: (d) => (d.spec.addresses = ["1.2.3.4"]), expect: [["/spec", "oneOf"]], message: ["`hosts` and `addresses`"] },
    { name: "wrong tls mode", edit: (d) => (d.spec.ports[1].clientsideTls.mode = "TLS"), expect: [["/spec/ports/1/clientsideTls/mode", "enum"]] },
    { name: "missing port number", edit: (d) => delete d.spec.ports[0].number, expect: [["/spec/ports/0", "required"]], message: ["`number`"] },
    { name: "unknown field", edit: (d) => (d.spec.ports[0].targetport = { number: 8080 }), expect: [["/spec/ports/0/targetport", "additionalProperties"]], message: ["did you mean `targetPort`?"] },
  ],
  RetryTimeoutPolicy: [
    { name: "bad duration", edit: (d) => (d.spec.config.requestTimeout = "10 seconds"), expect: [["/spec/config/requestTimeout", "pattern"]], message: ["not a duration", "1m30s"] },
    { name: "duration as number", edit: (d) => (d.spec.config.retries.perTryTimeout = 5), expect: [["/spec/config/retries/perTryTimeout", "type"]] },
    { name: "empty config", edit: (d) => (d.spec.config = {}), expect: [["/spec/config", "minProperties"]], message: ["set at least one of `retries`, `requestTimeout`"] },
    { name: "missing config", edit: (d) => delete d.spec.config, expect: [["/spec", "required"]] },
    { name: "negative attempts", edit: (d) => (d.spec.config.retries.attempts = -1), expect: [["/spec/config/retries/attempts", "minimum"]] },
  ],
  FaultInjectionPolicy: [
    { name: "status below 200", edit: (d) => (d.spec.config.abort.httpStatus = 100), expect: [["/spec/config/abort/httpStatus", "minimum"]] },
    { name: "percentage above 100", edit: (d) => (d.spec.config.delay.percentage = 150), expect: [["/spec/config/delay/percentage", "maximum"]] },
    { name: "missing fixedDelay", edit: (d) => delete d.spec.config.delay.fixedDelay, expect: [["/spec/config/delay", "required"]], message: ["`fixedDelay`"] },
    { name: "bad duration unit", edit: (d) => (d.spec.config.delay.fixedDelay = "2sec"), expect: [["/spec/config/delay/fixedDelay", "pattern"]] },
  ],
  FailoverPolicy: [
    { name: "wrong destination kind", edit: (d) => (d.spec.applyToDestinations[0].kind = "VIRTUALDESTINATION"), expect: [["/spec/applyToDestinations/0/kind", "enum"]], message: ['did you mean "VIRTUAL_DESTINATION"'] },
    { name: "missing region", edit: (d) => delete d.spec.config.localityMappings[0].to[0].region, expect: [["/spec/config/localityMappings/0/to/0", "required"]], message: ["`region`"] },
    { name: "snake_case field", edit: (d) => (d.spec.config.localityMappings[0].from.sub_zone = "a"), expect: [["/spec/config/localityMappings/0/from/sub_zone", "additionalProperties"]], message: ["did you mean `subZone`?"] },
    { name: "weight as string", edit: (d) => (d.spec.config.localityMappings[0].to[0].weight = "80"), expect: [["/spec/config/localityMappings/0/to/0/weight", "type"]] },
  ],
  OutlierDetectionPolicy: [
    { name: "bad duration", edit: (d) => (d.spec.config.interval = "5"), expect: [["/spec/config/interval", "pattern"]] },
    { name: "zero consecutive errors", edit: (d) => (d.spec.config.consecutiveErrors = 0), expect: [["/spec/config/consecutiveErrors", "minimum"]] },
    { name: "percent above 100", edit: (d) => (d.spec.config.maxEjectionPercent = 101), expect: [["/spec/config/maxEjectionPercent", "maximum"]] },
    { name: "unknown field", edit: (d) => (d.spec.config.consecutive5xxErrors = 3), expect: [["/spec/config/consecutive5xxErrors", "additionalProperties"]] },
  ],
  ConnectionPolicy: [
    { name: "bad duration", edit: (d) => (d.spec.config.tcp.connectTimeout = "1 ms"), expect: [["/spec/config/tcp/connectTimeout", "pattern"]] },
    { name: "wrong type", edit: (d) => (d.spec.config.http.maxPendingRequests = "64"), expect: [["/spec/config/http/maxPendingRequests", "type"]] },
    { name: "unknown field", edit: (d) => (d.spec.config.tcp.keepalive = {}), expect: [["/spec/config/tcp/keepalive", "additionalProperties"]], message: ["did you mean `tcpKeepalive`?"] },
    { name: "config not a mapping", edit: (d) => (d.spec.config = []), expect: [["/spec/config", "type"]], message: ["expected a mapping, got an array"] },
  ],
  AccessPolicy: [
    { name: "wrong tls mode", edit: (d) => (d.spec.config.authn.tlsMode = "strict"), expect: [["/spec/config/authn/tlsMode", "enum"]], message: ['did you mean "STRICT"'] },
    { name: "workload selector by name", edit: (d) => (d.spec.applyToWorkloads[0].selector.name = "reviews"), expect: [["/spec/applyToWorkloads/0/selector/name", "additionalProperties"]] },
    { name: "paths not a list", edit: (d) => (d.spec.config.authzList[0].allowedPaths = "/reviews*"), expect: [["/spec/config/authzList/0/allowedPaths", "type"]] },
    { name: "empty header match", edit: (d) => (d.spec.config.authzList[0].match.request.headers["x-user"] = {}), expect: [["/spec/config/authzList/0/match/request/headers/x-user", "minProperties"]], message: ["`values`, `notValues`"] },
  ],
  CORSPolicy: [
    { name: "origin as string", edit: (d) => (d.spec.config.allowOrigins[0] = "https://bookinfo.example.com"), expect: [["/spec/config/allowOrigins/0", "type"]], message: ["expected a mapping"] },
    { name: "bad maxAge", edit: (d) => (d.spec.config.maxAge = "1 day"), expect: [["/spec/config/maxAge", "pattern"]] },
    { name: "unknown field", edit: (d) => (d.spec.config.allowOrigin = []), expect: [["/spec/config/allowOrigin", "additionalProperties"]], message: ["did you mean `allowOrigins`?"] },
    { name: "route selector with both forms", edit: (d) => (d.spec.applyToRoutes[0].withDestinations = {}), expect: [["/spec/applyToRoutes/0", "oneOf"]], message: ["`route` and `withDestinations`"] },
  ],
  HeaderManipulationPolicy: [
    { name: "header value not a string", edit: (d) => (d.spec.config.appendRequestHeaders["x-count"] = 3), expect: [["/spec/config/appendRequestHeaders/x-count", "type"]] },
    { name: "remove list as map", edit: (d) => (d.spec.config.removeResponseHeaders = { server: true }), expect: [["/spec/config/removeResponseHeaders", "type"]] },
    { name: "unknown field", edit: (d) => (d.spec.config.addRequestHeaders = {}), expect: [["/spec/config/addRequestHeaders", "additionalProperties"]] },
  ],
  MirrorPolicy: [
    { name: "missing destination", edit: (d) => delete d.spec.config.destination, expect: [["/spec/config", "required"]], message: ["`destination`"] },
    { name: "percentage too high", edit: (d) => (d.spec.config.percentage = 101), expect: [["/spec/config/percentage", "maximum"]] },
    { name: "ref without name", edit: (d) => delete d.spec.config.destination.ref.name, expect: [["/spec/config/destination/ref", "required"]] },
  ],
  LoadBalancerPolicy: [
    { name: "wrong enum", edit: (d) => (d.spec.config = { simple: "ROUND_ROBN" }), expect: [["/spec/config/simple", "enum"]], message: ['did you mean "ROUND_ROBIN"'] },
    { name: "no algorithm", edit: (d) => (d.spec.config = { warmupDurationSecs: "60s" }), expect: [["/spec/config", "oneOf"]], message: ["set exactly one of `simple`, `consistentHash`"] },
    { name: "two hash keys", edit: (d) => (d.spec.config.consistentHash.useSourceIp = true), expect: [["/spec/config/consistentHash", "oneOf"]], message: ["`httpCookie` and `useSourceIp` are both set"] },
    { name: "cookie without name", edit: (d) => delete d.spec.config.consistentHash.httpCookie.name, expect: [["/spec/config/consistentHash/httpCookie", "required"]] },
  ],
};

describe("validateResource: one valid document per kind", () => {
  for (const k of SUPPORTED_KINDS) {
    it(`${k.kind} is valid`, () => {
      expect(validateResource(VALID[k.kind as GlooKind])).toEqual([]);
    });
  }
});

describe("validateResource: invalid documents report the exact node and keyword", () => {
  for (const k of SUPPORTED_KINDS) {
    const cases = INVALID[k.kind as GlooKind];
    for (const c of cases) {
      it(`${k.kind}: ${c.name}`, () => {
        const doc = structuredClone(VALID[k.kind as GlooKind]) as Doc;
        c.edit(doc);
        const issues = validateResource(doc);
        expect(issues.map((i) => [i.path, i.keyword])).toEqual(c.expect);
        for (const part of c.message ?? []) expect(issues[0]!.message).toContain(part);
      });
    }
  }
});
