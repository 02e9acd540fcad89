/**
 * `GET /api/traffic?workspace=&cluster=&namespace=&window=`: the traffic graph (src/traffic) read from
 * the Prometheus the operator names, with the workspaces of the commit in force (who owns which
 * namespace of which cluster) and each destination linked to the Gloo resources whose rendered
 * VirtualServices route to it. Without a Prometheus it answers how to configure one.
 */
import { allObjects, createOwnership, type DesiredState } from "../config/index.js";
import { routesByHost, trafficEdges, trafficGraph, type PrometheusClient, type RenderedObject, type TrafficFilter } from "../traffic/index.js";
import { HttpError } from "./http.js";

export interface TrafficViewOptions {
  /** undefined: no Prometheus configured. */
  readonly client: PrometheusClient | undefined;
  readonly desired: () => DesiredState | undefined;
  readonly outputs: () => Promise<readonly { readonly cluster: string; readonly resources: readonly RenderedObject[] }[]>;
  readonly now: () => number;
}

export const TRAFFIC_NOT_CONFIGURED =
  "No Prometheus is configured, so there is no traffic to show. Give the server the Prometheus that scrapes your Istio proxies: " +
  "--prometheus-url http(s)://host:9090 (GITMESH_PROMETHEUS_URL; chart value prometheus.url), and if it needs them a bearer token " +
  "(--prometheus-token-file, GITMESH_PROMETHEUS_TOKEN_FILE; chart prometheus.tokenSecret) and a CA bundle (--prometheus-ca-file, " +
  "GITMESH_PROMETHEUS_CA_FILE; chart prometheus.caSecret). See docs/observability.md, \"Traffic graph\".";

const WINDOW = /^[1-9][0-9]{0,3}(s|m|h)$/;

export function createTrafficView(options: TrafficViewOptions): (query: URLSearchParams) => Promise<unknown> {
  return async (query) => {
    if (options.client === undefined) return { configured: false, message: TRAFFIC_NOT_CONFIGURED };
    const window = query.get("window") ?? "5m";
    if (!WINDOW.test(window)) throw new HttpError(400, `window ${JSON.stringify(window)} must be a duration such as 30s, 5m or 1h`);
    const filter: { -readonly [K in keyof TrafficFilter]: TrafficFilter[K] } = {};
    for (const k of ["workspace", "cluster", "namespace"] as const) {
      const v = query.get(k);
      if (v !== null && v !== "") filter[k] = v;
    }
    const edges = await trafficEdges(options.client, { window });
    const state = options.desired();
    const owns = state === undefined ? undefined : createOwnership(state.settings, allObjects(state));
    const owner = (cluster: string, namespace: string) => {
      const r = owns?.(cluster, namespace);
      return r?.kind === "one" ? r.workspace : undefined;
    };
    const graph = trafficGraph(edges, { filter, owner, routes: routesByHost(await options.outputs()) });
    return { configured: true, source: options.client.url, window, at: new Date(options.now()).toISOString(), filter, ...graph };
  };
}
