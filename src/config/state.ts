/**
 * Look-ups on a DesiredState. The state is plain data; indexes are built on first use and cached per
 * state object (states are immutable, so a cache keyed by identity is always right).
 */
import { sortDiagnostics, type Diagnostic } from "../core/index.js";
import { positionOf } from "./parse-file.js";
import type { DesiredState, LoadedObject, UnsupportedObject } from "./types.js";
import { unsupportedDiagnostic } from "./unsupported.js";

interface Index {
  readonly all: readonly LoadedObject[];
  readonly byKind: ReadonlyMap<string, readonly LoadedObject[]>;
  readonly byWorkspace: ReadonlyMap<string, readonly LoadedObject[]>;
}

const indexes = new WeakMap<DesiredState, Index>();

function index(state: DesiredState): Index {
  const hit = indexes.get(state);
  if (hit) return hit;
  const all: LoadedObject[] = [];
  const byKind = new Map<string, LoadedObject[]>();
  const byWorkspace = new Map<string, LoadedObject[]>();
  for (const key of Object.keys(state.objects)) {
    const obj = getObject(state, key);
    if (!obj) continue;
    all.push(obj);
    push(byKind, obj.kind, obj);
    if (obj.workspace !== undefined) push(byWorkspace, obj.workspace, obj);
  }
  const built: Index = { all, byKind, byWorkspace };
  indexes.set(state, built);
  return built;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** The object in force under `key` (`<kind>/<cluster>/<namespace>/<name>`), if any. */
export function getObject(state: DesiredState, key: string): LoadedObject | undefined {
  const loc = state.objects[key];
  return loc ? state.files[loc.file]?.objects[loc.index] : undefined;
}

/** Every object in force, sorted by key. */
export function allObjects(state: DesiredState): readonly LoadedObject[] {
  return index(state).all;
}

/** Objects in force of one kind (e.g. `RouteTable`), sorted by key. */
export function objectsOfKind(state: DesiredState, kind: string): readonly LoadedObject[] {
  return index(state).byKind.get(kind) ?? [];
}

/** Objects owned by a workspace, sorted by key. */
export function objectsInWorkspace(state: DesiredState, workspace: string): readonly LoadedObject[] {
  return index(state).byWorkspace.get(workspace) ?? [];
}

/** The workspace that owns an object (as resolved by the loader), if any. */
export function workspaceOf(state: DesiredState, obj: Pick<LoadedObject, "key">): string | undefined {
  return getObject(state, obj.key)?.workspace;
}

/** Names of the Workspaces in force, sorted. */
export function workspaceNames(state: DesiredState): string[] {
  return objectsOfKind(state, "Workspace").map((w) => w.metadata.name).sort();
}

/** Documents of kinds gitmesh does not support, by file then position. */
export function unsupportedObjects(state: DesiredState): UnsupportedObject[] {
  return Object.keys(state.files)
    .sort()
    .flatMap((f) => state.files[f]!.unsupported);
}

/** Every diagnostic of the state, sorted by file, line, column. */
export function diagnosticsOf(state: DesiredState): Diagnostic[] {
  const list: Diagnostic[] = [...state.settingsDiagnostics, ...state.linkDiagnostics];
  for (const rec of Object.values(state.files)) {
    list.push(...rec.diagnostics);
    for (const u of rec.unsupported) list.push(unsupportedDiagnostic(u, state.settings));
  }
  return sortDiagnostics(list);
}

/**
 * Where a node inside an object is written: for translation diagnostics. Falls back to the nearest
 * ancestor that exists in the source (e.g. a defaulted field points at its parent).
 */
export function locate(obj: LoadedObject, pointer: string): { file: string; line: number; column: number; path: string } {
  const p = positionOf(obj.positions, pointer);
  return { file: obj.source.file, line: p ? p[0] : obj.source.line, column: p ? p[1] : obj.source.column, path: pointer };
}
