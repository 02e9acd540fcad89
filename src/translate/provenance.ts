/**
 * Provenance beside the translation: which Gloo objects contributed to the Istio objects of each
 * rendering parent, and which fields each wrote. Rendered objects name one parent in their labels
 * (gitmesh.io/parent-*); the other contributors merge into that parent's objects and leave no
 * object of their own — a delegated child route table becomes routes of its parent's
 * VirtualService, a RetryTimeoutPolicy becomes `retries` and `timeout` on those routes, an
 * OutlierDetectionPolicy `trafficPolicy.outlierDetection` of a DestinationRule. Without this side
 * result a policy shows "0 Istio objects".
 *
 * Selection follows Gloo's documented semantics through translate's own selection functions (one
 * decision, shared with the rendering): a route policy applies to the routes its `applyToRoutes`
 * selects (route or route-table labels, namespace, workspace, `withDestinations`; empty = every
 * route of its workspace), the oldest policy of a kind wins a route; a destination policy applies to
 * the destinations of its workspace that `applyToDestinations` selects. Delegated routes are
 * counted in the root route table that renders them. The policies enforced on a VirtualGateway's
 * routes (JWT, external auth, rate limits, CSRF) render objects of their own; they are listed on the
 * routes they guard too, chosen per route as the rendering chooses them.
 *
 * Pure: the same desired state and discovery give the same answer; nothing rendered changes.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { indexOf, workspaceContext, type WorkspaceContext } from "./context.js";
import { flattenRoutes } from "./delegation.js";
import { DESTINATION_POLICY_KINDS, destinationPolicyIndex, destinationTrafficPolicy } from "./destination-policies.js";
import { toDesiredInput, type Desired, type DiscoveryMap, type InputObject } from "./input.js";
import { extAuthSelectsRoutes } from "./ext-auth.js";
import { jwtSelectsRoutes } from "./jwt-policy.js";
import { rateLimitSelectsRoutes } from "./rate-limit.js";
import { applyRoutePolicies, ROUTE_POLICY_KINDS, winningPolicies, winningPolicy } from "./route-policies.js";
import { gatewayOnly } from "./route-table.js";
import { asArray, asRecord } from "./selectors.js";

/** A Gloo object as the rendered labels name it (namespace defaults to the admin namespace). */
export interface GlooRef {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

export const ContributionRole = {
  /** The object the Istio objects are rendered from (their parent labels). */
  Parent: "parent",
  /** A route table delegated to by the parent: its routes are routes of the parent's VirtualService. */
  DelegatedChild: "delegated-child",
  /** A route policy: fields of the HTTP routes it selects. */
  RoutePolicy: "route-policy",
  /** A destination policy: fields of the DestinationRule's traffic policy. */
  DestinationPolicy: "destination-policy",
  /**
   * A policy enforced on the gateway for the routes it selects (JWT, external auth, rate limits, CSRF):
   * rendered as objects of its own (labelled with it as their parent) that act on these routes; its
   * `fields` name those objects.
   */
  GatewayPolicy: "gateway-policy",
} as const;
export type ContributionRole = (typeof ContributionRole)[keyof typeof ContributionRole];

export interface Contribution {
  readonly from: GlooRef;
  readonly role: ContributionRole;
  /** The Istio fields it wrote (`http[].retries`, `trafficPolicy.outlierDetection`, …), sorted. */
  readonly fields: readonly string[];
  /** The routes it wrote (names as in the defining route table), for route contributions; sorted. */
  readonly routes?: readonly string[];
  /** The destinations it wrote (`service/<cluster>/<namespace>/<name>` or the Gloo object's key); sorted. */
  readonly destinations?: readonly string[];
}

/** Every contributor to the Istio objects rendered from one parent. */
export interface ParentProvenance {
  readonly parent: GlooRef;
  readonly contributions: readonly Contribution[];
}

/** Where one policy applies (routes by their root route table; destinations by key). */
export interface PolicyReach {
  readonly policy: GlooRef;
  /** Routes it wins, each once: the route table that defines it and the route's name. */
  readonly routes: readonly { readonly table: GlooRef; readonly route: string }[];
  readonly destinations: readonly string[];
  /** The rendering parents that carry its fields (their Istio objects say in which clusters). */
  readonly parents: readonly GlooRef[];
}

export interface Provenance {
  readonly parents: readonly ParentProvenance[];
  readonly policies: readonly PolicyReach[];
}

export function refKey(r: GlooRef): string {
  return `${r.kind}/${r.namespace}/${r.name}`;
}

/**
 * The policies a VirtualGateway's routes are guarded by, chosen per route as the rendering chooses them
 * (route-table.ts: the oldest selecting policy of each kind, with the same "applies to routes" test),
 * and what each renders that acts on the route. East-west routes get none of them (refused there).
 */
const GATEWAY_POLICIES: readonly { readonly kind: string; readonly appliesToRoutes: (p: InputObject) => boolean; readonly renders: readonly string[] }[] = [
  { kind: "ExtAuthPolicy", appliesToRoutes: extAuthSelectsRoutes, renders: ["EnvoyFilter: ext_authz or oauth2 on the route"] },
  { kind: "CSRFPolicy", appliesToRoutes: () => true, renders: ["EnvoyFilter: csrf on the route"] },
  { kind: "RateLimitPolicy", appliesToRoutes: rateLimitSelectsRoutes, renders: ["EnvoyFilter: rate limit actions on the route"] },
  { kind: "JWTPolicy", appliesToRoutes: jwtSelectsRoutes, renders: ["AuthorizationPolicy: the route's hosts and paths", "RequestAuthentication"] },
];

const ROUTE_FIELD_PROBE = (): { host: string } => ({ host: "probe" });

/** The Istio HTTP-route fields a route policy writes: its fields applied to an empty route. */
function routePolicyFields(ctx: WorkspaceContext, kind: string, policy: InputObject, memo: Map<string, string[]>): string[] {
  let fields = memo.get(policy.key);
  if (fields === undefined) {
    const probe: Record<string, unknown> = {};
    applyRoutePolicies(probe, new Map([[kind as never, policy]]), ROUTE_FIELD_PROBE, (p, code, path, msg, severity): Diagnostic => ctx.diag(p, code, severity ?? Severity.Error, path, msg));
    fields = Object.keys(probe).map((k) => `http[].${k}`).sort();
    memo.set(policy.key, fields);
  }
  return fields;
}

/** `{outlierDetection: {…}, loadBalancer: {localityLbSetting}}` → trafficPolicy.outlierDetection, trafficPolicy.loadBalancer.localityLbSetting. */
function trafficFields(tp: Record<string, unknown>): string[] {
  return Object.entries(tp)
    .flatMap(([k, v]) => (k === "loadBalancer" && typeof v === "object" && v !== null ? Object.keys(v).map((s) => `trafficPolicy.loadBalancer.${s}`) : [`trafficPolicy.${k}`]))
    .sort();
}

class Collector {
  private readonly parents = new Map<string, { parent: GlooRef; byFrom: Map<string, { from: GlooRef; role: ContributionRole; fields: Set<string>; routes: Set<string>; destinations: Set<string> }> }>();
  private readonly reach = new Map<string, { policy: GlooRef; routes: Map<string, { table: GlooRef; route: string }>; destinations: Set<string>; parents: Map<string, GlooRef> }>();

  add(parent: GlooRef, from: GlooRef, role: ContributionRole, fields: readonly string[], what: { route?: string; destination?: string }): void {
    let p = this.parents.get(refKey(parent));
    if (p === undefined) this.parents.set(refKey(parent), (p = { parent, byFrom: new Map() }));
    let c = p.byFrom.get(refKey(from));
    if (c === undefined) p.byFrom.set(refKey(from), (c = { from, role, fields: new Set(), routes: new Set(), destinations: new Set() }));
    for (const f of fields) c.fields.add(f);
    if (what.route !== undefined) c.routes.add(what.route);
    if (what.destination !== undefined) c.destinations.add(what.destination);
  }

  reached(policy: GlooRef, parent: GlooRef, what: { table?: GlooRef; route?: string; destination?: string }): void {
    let r = this.reach.get(refKey(policy));
    if (r === undefined) this.reach.set(refKey(policy), (r = { policy, routes: new Map(), destinations: new Set(), parents: new Map() }));
    r.parents.set(refKey(parent), parent);
    if (what.table !== undefined && what.route !== undefined) r.routes.set(`${refKey(what.table)}#${what.route}`, { table: what.table, route: what.route });
    if (what.destination !== undefined) r.destinations.add(what.destination);
  }

  /** A policy that reaches nothing is listed too: "applied to 0 routes". */
  known(policy: GlooRef): void {
    if (!this.reach.has(refKey(policy))) this.reach.set(refKey(policy), { policy, routes: new Map(), destinations: new Set(), parents: new Map() });
  }

  result(): Provenance {
    const byKey = <T>(m: Map<string, T>): T[] => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
    const roleOrder: readonly ContributionRole[] = Object.values(ContributionRole);
    return {
      parents: byKey(this.parents).map((p) => ({
        parent: p.parent,
        contributions: byKey(p.byFrom)
          .sort((a, b) => roleOrder.indexOf(a.role) - roleOrder.indexOf(b.role))
          .map((c) => ({
            from: c.from,
            role: c.role,
            fields: [...c.fields].sort(),
            ...(c.routes.size > 0 ? { routes: [...c.routes].sort() } : {}),
            ...(c.destinations.size > 0 ? { destinations: [...c.destinations].sort() } : {}),
          })),
      })),
      policies: byKey(this.reach).map((r) => ({ policy: r.policy, routes: byKey(r.routes), destinations: [...r.destinations].sort(), parents: byKey(r.parents) })),
    };
  }
}

/** Which Gloo objects contributed to the Istio objects of each rendering parent, and where each policy applies. */
export function contributions(desired: Desired, discovery: DiscoveryMap): Provenance {
  const index = indexOf(toDesiredInput(desired), discovery);
  const ref = (o: InputObject): GlooRef => ({ kind: o.kind, namespace: o.metadata.namespace ?? index.adminNamespace, name: o.metadata.name });
  const out = new Collector();
  const fieldMemo = new Map<string, string[]>();
  for (const ws of index.workspaceNames) {
    const ctx = workspaceContext(index, ws);
    if (ctx === undefined) continue;
    routeTables(ctx, ref, out, fieldMemo);
    destinations(ctx, ref, out);
  }
  return out.result();
}

function routeTables(ctx: WorkspaceContext, ref: (o: InputObject) => GlooRef, out: Collector, fieldMemo: Map<string, string[]>): void {
  for (const kind of ROUTE_POLICY_KINDS) for (const p of ctx.own(kind)) out.known(ref(p));
  for (const { kind, appliesToRoutes } of GATEWAY_POLICIES) for (const p of ctx.own(kind)) if (appliesToRoutes(p)) out.known(ref(p));
  for (const root of ctx.own("RouteTable")) {
    const spec = asRecord(root.spec);
    if (asArray(spec.hosts).length === 0) continue; // a delegated child: rendered through its parents
    const parent = ref(root);
    const onGateway = asArray(spec.virtualGateways).length > 0;
    const hostFields = gatewayOnly(spec) || onGateway ? ["hosts", "gateways"] : ["hosts"];
    for (const route of flattenRoutes(ctx, root).routes) {
      const table = ref(route.table);
      if (route.table === root) out.add(parent, parent, ContributionRole.Parent, [...hostFields, "http[]"], { route: route.name });
      else out.add(parent, table, ContributionRole.DelegatedChild, ["http[]"], { route: route.name });
      for (const [kind, policy] of winningPolicies(ctx, route)) {
        const p = ref(policy);
        out.add(parent, p, ContributionRole.RoutePolicy, routePolicyFields(ctx, kind, policy, fieldMemo), { route: route.name });
        out.reached(p, parent, { table, route: route.name });
      }
      if (!onGateway) continue;
      for (const { kind, appliesToRoutes, renders } of GATEWAY_POLICIES) {
        const policy = winningPolicy(ctx, route, kind, appliesToRoutes);
        if (policy === undefined) continue;
        const p = ref(policy);
        out.add(parent, p, ContributionRole.GatewayPolicy, renders, { route: route.name });
        out.reached(p, parent, { table, route: route.name });
      }
    }
  }
}

function destinations(ctx: WorkspaceContext, ref: (o: InputObject) => GlooRef, out: Collector): void {
  for (const kind of DESTINATION_POLICY_KINDS) for (const p of ctx.own(kind)) out.known(ref(p));
  const idx = destinationPolicyIndex(ctx);
  for (const [key, perKind] of [...idx.applications].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const service = idx.services.get(key);
    let parent: GlooRef | undefined;
    if (service !== undefined) {
      // A plain Service's DestinationRule is rendered from its policies (the first by key is its parent).
      const { policies } = destinationTrafficPolicy(ctx, key, service.service.ports.map((p) => p.port).sort((a, b) => a - b));
      parent = policies[0] === undefined ? undefined : ref(policies[0]);
    } else {
      const obj = ctx.index.objects.find((o) => o.key === key);
      parent = obj === undefined ? undefined : ref(obj);
    }
    if (parent === undefined) continue;
    for (const kind of DESTINATION_POLICY_KINDS) {
      const apps = perKind.get(kind) ?? [];
      for (const app of apps) {
        const p = ref(app.policy);
        out.add(parent, p, ContributionRole.DestinationPolicy, trafficFields(idx.fields.get(app.policy.key) ?? {}), { destination: key });
        out.reached(p, parent, { destination: key });
      }
    }
  }
}
