/**
 * Route flattening: a route table's `http` routes with delegation resolved. A `delegate` route is
 * replaced by the routes of the child route tables it selects (children have no hosts), with the
 * parent route's matchers combined into each child route's matchers. Children are ordered by
 * `sortMethod`: TABLE_WEIGHT (tables by weight, highest first, then as the parent lists them — a
 * label selector's tables by creation time —, routes in
 * table order) or ROUTE_SPECIFICITY (exact > regex > prefix, longer paths first; ties by table
 * weight, then order). Duplicate route names in one table become `duplicate-<name>-<n>`.
 */
import { Severity, type Diagnostic } from "../core/index.js";
import { reportUnsupported, type WorkspaceContext } from "./context.js";
import type { InputObject } from "./input.js";
import { routeSpecificity } from "./route-matchers.js";
import { asArray, asLabels, asNumber, asRecord, asString, type Labels, type ObjectSelectorSpec } from "./selectors.js";
import { TranslateCode } from "./types.js";

/** One route after delegation: which table defines it, and its effective matchers. */
export interface FlatRoute {
  /** The route table that defines the route (the root or a delegated child). */
  readonly table: InputObject;
  /** JSON pointer of the route inside `table`. */
  readonly path: string;
  /** Route name, de-duplicated within its table. */
  readonly name: string;
  readonly labels: Labels;
  /** Effective Gloo matchers (parent delegate matchers combined with the route's own). */
  readonly matchers: readonly unknown[];
  /** The Gloo route object. */
  readonly route: Record<string, unknown>;
}

export interface Flattened {
  readonly routes: readonly FlatRoute[];
  readonly diagnostics: readonly Diagnostic[];
}

const ROUTE_FIELDS = ["name", "labels", "matchers", "forwardTo", "delegate", "redirect", "directResponse", "graphql"];

export function flattenRoutes(ctx: WorkspaceContext, rt: InputObject): Flattened {
  const diagnostics: Diagnostic[] = [];
  const routes = flattenTable(ctx, rt, [], [rt.key], diagnostics);
  return { routes, diagnostics };
}

function flattenTable(ctx: WorkspaceContext, table: InputObject, parentMatchers: readonly unknown[], stack: readonly string[], diagnostics: Diagnostic[]): FlatRoute[] {
  const out: FlatRoute[] = [];
  const seen = new Map<string, number>();
  for (const [i, raw] of asArray(asRecord(table.spec).http).entries()) {
    const route = asRecord(raw);
    const path = `/spec/http/${i}`;
    diagnostics.push(...reportUnsupported(ctx, table, route, path, ROUTE_FIELDS));
    const name = uniqueName(ctx, table, asString(route.name) ?? `route-${i}`, path, seen, diagnostics);
    const combined = combineMatchers(parentMatchers, asArray(route.matchers));
    if ("error" in combined) {
      diagnostics.push(ctx.diag(table, TranslateCode.InvalidField, Severity.Error, `${path}/matchers`, `${combined.error}; the route is dropped. Make the child route's path fall under the parent delegate route's path.`));
      continue;
    }
    if (route.delegate === undefined) {
      out.push({ table, path, name, labels: asLabels(route.labels) ?? {}, matchers: combined.matchers, route });
      continue;
    }
    out.push(...delegate(ctx, table, route, path, combined.matchers, stack, diagnostics));
  }
  return out;
}

function uniqueName(ctx: WorkspaceContext, table: InputObject, base: string, path: string, seen: Map<string, number>, diagnostics: Diagnostic[]): string {
  const n = seen.get(base) ?? 0;
  seen.set(base, n + 1);
  if (n === 0) return base;
  const renamed = `duplicate-${base}-${n}`;
  diagnostics.push(ctx.diag(table, TranslateCode.DuplicateRouteName, Severity.Warning, `${path}/name`, `route name "${base}" is used more than once in this table; this one is rendered as "${renamed}". Give every route a unique name so policies and reports can refer to it.`));
  return renamed;
}

function delegate(
  ctx: WorkspaceContext,
  table: InputObject,
  route: Record<string, unknown>,
  path: string,
  matchers: readonly unknown[],
  stack: readonly string[],
  diagnostics: Diagnostic[],
): FlatRoute[] {
  const d = asRecord(route.delegate);
  diagnostics.push(...reportUnsupported(ctx, table, d, `${path}/delegate`, ["routeTables", "sortMethod"]));
  const children: InputObject[] = [];
  /** The index of the first `routeTables` entry that selects each child. */
  const listed = new Map<InputObject, number>();
  asArray(d.routeTables).forEach((s, i) => {
    const sel = selector(s, table);
    for (const c of ctx.select("RouteTable", sel)) {
      if (asArray(asRecord(c.spec).hosts).length > 0 || children.includes(c)) continue;
      children.push(c);
      listed.set(c, i);
    }
  });
  if (children.length === 0) {
    diagnostics.push(ctx.diag(table, TranslateCode.SelectsNothing, Severity.Warning, `${path}/delegate/routeTables`, `the delegate selects no route table without hosts in this workspace or its imports; the route produces nothing. Check the selector, and that the child table has no hosts and is exported to this workspace.`));
    return [];
  }
  // Gloo: heavier tables first; "tables of the same weight stay in the same order that you list them
  // in the parent route table, which is the list order when you specify sub-tables by name, or the
  // creation timestamp when you select sub-tables by label" (route_table.proto, RouteTableSpec.weight).
  const ordered = [...children].sort(
    (a, b) =>
      weightOf(b) - weightOf(a) ||
      (listed.get(a) ?? 0) - (listed.get(b) ?? 0) ||
      cmp(a.metadata.creationTimestamp ?? "", b.metadata.creationTimestamp ?? "") ||
      cmp(a.key, b.key),
  );
  const all: { r: FlatRoute; weight: number; order: number }[] = [];
  for (const child of ordered) {
    if (stack.includes(child.key)) {
      diagnostics.push(ctx.diag(table, TranslateCode.DelegationCycle, Severity.Error, `${path}/delegate`, `delegation to RouteTable ${child.metadata.namespace ?? ""}/${child.metadata.name} loops back (${[...stack, child.key].join(" → ")}); that delegation is skipped. Remove the cycle.`));
      continue;
    }
    for (const r of flattenTable(ctx, child, matchers, [...stack, child.key], diagnostics)) all.push({ r, weight: weightOf(child), order: all.length });
  }
  if (asString(d.sortMethod) === "ROUTE_SPECIFICITY") {
    all.sort((a, b) => {
      const sa = routeSpecificity(a.r.matchers);
      const sb = routeSpecificity(b.r.matchers);
      return sb[0] - sa[0] || sb[1] - sa[1] || b.weight - a.weight || a.order - b.order;
    });
  }
  return all.map((x) => x.r);
}

function selector(raw: unknown, table: InputObject): ObjectSelectorSpec {
  const r = asRecord(raw);
  return {
    labels: asLabels(r.labels),
    name: asString(r.name),
    // A selector by name without a namespace means the parent's namespace (ObjectReference semantics).
    namespace: asString(r.namespace) ?? (asString(r.name) !== undefined ? table.metadata.namespace : undefined),
    cluster: asString(r.cluster),
    workspace: asString(r.workspace),
  };
}

function weightOf(rt: InputObject): number {
  return asNumber(asRecord(rt.spec).weight) ?? 0;
}

/**
 * Parent delegate matchers × child matchers. A child uri must fall under the parent's uri (same
 * exact path, or starting with the parent prefix); headers and query parameters accumulate.
 */
export function combineMatchers(parent: readonly unknown[], child: readonly unknown[]): { readonly matchers: readonly unknown[] } | { readonly error: string } {
  if (parent.length === 0) return { matchers: child };
  if (child.length === 0) return { matchers: parent };
  const out: unknown[] = [];
  for (const p of parent.map(asRecord)) {
    for (const c of child.map(asRecord)) {
      const pu = asRecord(p.uri);
      const cu = asRecord(c.uri);
      let uri: unknown = c.uri ?? p.uri;
      if (c.uri !== undefined && p.uri !== undefined) {
        const parentPath = asString(pu.prefix) ?? asString(pu.exact);
        const childPath = asString(cu.prefix) ?? asString(cu.exact);
        if (parentPath !== undefined && asString(pu.prefix) !== undefined && childPath !== undefined && !childPath.startsWith(parentPath)) {
          return { error: `child path "${childPath}" is not under the parent delegate prefix "${parentPath}"` };
        }
        if (asString(pu.exact) !== undefined && childPath !== asString(pu.exact)) {
          return { error: `child path "${childPath ?? "(regex)"}" does not equal the parent delegate exact path "${asString(pu.exact) ?? ""}"` };
        }
        uri = c.uri;
      }
      out.push({
        ...p,
        ...c,
        ...(uri === undefined ? {} : { uri }),
        headers: [...asArray(p.headers), ...asArray(c.headers)],
        queryParameters: [...asArray(p.queryParameters), ...asArray(c.queryParameters)],
        ...(c.method === undefined && p.method !== undefined ? { method: p.method } : {}),
      });
    }
  }
  return { matchers: out };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
