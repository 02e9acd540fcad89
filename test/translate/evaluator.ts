/**
 * A small model of Istio's HTTP routing for produced VirtualServices: pick the VirtualService by
 * host and gateway, then the first http route (in order) with a matching match block (any match
 * of the list; every condition inside one match, including the match's own `gateways`). Used by behavioural tests.
 */
import type { IstioResource } from "../../src/translate/index.js";

export interface Request {
  readonly host: string;
  readonly path: string;
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string>>;
  readonly port?: number;
  readonly sourceLabels?: Readonly<Record<string, string>>;
  /** `mesh` for sidecars (default) or `<ns>/<gateway>`. */
  readonly gateway?: string;
}

export type Outcome =
  | { readonly kind: "route"; readonly route: string; readonly destinations: readonly { host: string; subset?: string; port?: number; weight?: number }[] }
  | { readonly kind: "direct"; readonly route: string; readonly status: number }
  | { readonly kind: "redirect"; readonly route: string; readonly code: number; readonly uri?: string; readonly authority?: string }
  | { readonly kind: "none" };

type Rec = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function hostMatches(pattern: string, host: string): boolean {
  if (pattern === "*") return true;
  if (pattern.startsWith("*.")) return host.endsWith(pattern.slice(1));
  return pattern === host;
}

function stringMatch(m: Rec | undefined, value: string | undefined, ignoreCase = false): boolean {
  if (m === undefined) return true;
  if (value === undefined) return false;
  const v = ignoreCase ? value.toLowerCase() : value;
  if (m.exact !== undefined) return v === (ignoreCase ? String(m.exact).toLowerCase() : m.exact);
  if (m.prefix !== undefined) return v.startsWith(ignoreCase ? String(m.prefix).toLowerCase() : m.prefix);
  if (m.regex !== undefined) return new RegExp(`^(?:${m.regex})$`, ignoreCase ? "i" : "").test(value);
  return true;
}

function matchOne(m: Rec, req: Request): boolean {
  if (Array.isArray(m.gateways) && !(m.gateways as string[]).includes(req.gateway ?? "mesh")) return false;
  if (!stringMatch(m.uri, req.path.split("?")[0], m.ignoreUriCase === true)) return false;
  if (m.method && !stringMatch(m.method, req.method ?? "GET")) return false;
  if (m.port !== undefined && m.port !== req.port) return false;
  const headers = Object.fromEntries(Object.entries(req.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  for (const [k, v] of Object.entries((m.headers ?? {}) as Rec)) if (!stringMatch(v, headers[k])) return false;
  for (const [k, v] of Object.entries((m.withoutHeaders ?? {}) as Rec)) if (stringMatch(v, headers[k])) return false;
  for (const [k, v] of Object.entries((m.queryParams ?? {}) as Rec)) if (!stringMatch(v, req.query?.[k])) return false;
  for (const [k, v] of Object.entries((m.sourceLabels ?? {}) as Rec)) if (req.sourceLabels?.[k] !== v) return false;
  return true;
}

export function evaluate(resources: readonly IstioResource[], req: Request): Outcome {
  const gateway = req.gateway ?? "mesh";
  const vss = resources.filter(
    (r) => r.kind === "VirtualService" && (r.spec.hosts as string[]).some((h) => hostMatches(h, req.host)) && ((r.spec.gateways as string[] | undefined) ?? ["mesh"]).includes(gateway),
  );
  for (const vs of vss) {
    for (const route of (vs.spec.http ?? []) as Rec[]) {
      const matches = route.match as Rec[] | undefined;
      if (matches !== undefined && !matches.some((m) => matchOne(m, req))) continue;
      if (route.directResponse) return { kind: "direct", route: route.name, status: route.directResponse.status };
      if (route.redirect) return { kind: "redirect", route: route.name, code: route.redirect.redirectCode ?? 301, uri: route.redirect.uri, authority: route.redirect.authority };
      return {
        kind: "route",
        route: route.name,
        destinations: (route.route as Rec[]).map((d) => ({ host: d.destination.host, subset: d.destination.subset, port: d.destination.port?.number, weight: d.weight })),
      };
    }
  }
  return { kind: "none" };
}
