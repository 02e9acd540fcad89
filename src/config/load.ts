/**
 * loadDesiredState / updateDesiredState: files → immutable DesiredState + diagnostics. Never
 * throws for user mistakes. Per-file results are cached in the state; an update re-parses only the
 * files handed in and re-runs the cheap whole-tree link stage.
 */
import type { Diagnostic } from "../core/index.js";
import { ConfigCode } from "./codes.js";
import { createPathFilter, isYamlPath, SETTINGS_FILE, type PathFilter } from "./ignore.js";
import { modelKindRegistry } from "./kinds.js";
import { link, type LinkIndex } from "./link.js";
import { diag, parseSourceFile, sha256 } from "./parse-file.js";
import { DEFAULT_ADMIN_NAMESPACE, DEFAULT_AUDIT_BRANCH, parseSettings } from "./settings.js";
import { diagnosticsOf } from "./state.js";
import type { DesiredState, FileRecord, LoadedObject, LoadOptions, LoadResult, RepoSettings, SourceFile, UpdateResult } from "./types.js";

/** The link index of each state made in this process (a state that went through JSON has none: its first update re-links fully). */
const linkIndexes = new WeakMap<DesiredState, LinkIndex>();

function resolveOptions(options: LoadOptions): Required<LoadOptions> {
  return {
    adminNamespace: options.adminNamespace ?? DEFAULT_ADMIN_NAMESPACE,
    auditBranch: options.auditBranch ?? DEFAULT_AUDIT_BRANCH,
    schemaValidation: options.schemaValidation ?? true,
  };
}

/**
 * Loads a whole configuration tree. `files` may come from disk (readConfigDirectory) or from Git
 * blobs; paths are repository-relative with `/`. `gitmesh.yaml` at the root is read as settings;
 * files that are not `.yaml`/`.yml`, or are ignored, are skipped.
 */
export function loadDesiredState(files: readonly SourceFile[], options: LoadOptions = {}): LoadResult {
  const registry = modelKindRegistry;
  const opts = resolveOptions(options);
  const settingsFile = files.find((f) => normalizePath(f.path) === SETTINGS_FILE);
  const { settings, diagnostics: settingsDiagnostics } = parseSettings(settingsFile?.content, opts);
  const filter = createPathFilter(settings.ignore);
  const records: Record<string, FileRecord> = {};
  const ignored: string[] = [];
  for (const f of files) {
    const path = normalizePath(f.path);
    if (path === SETTINGS_FILE || !isYamlPath(path)) continue;
    if (filter.isIgnored(path)) {
      ignored.push(path);
      continue;
    }
    records[path] = deepFreeze(parseSourceFile({ path, content: f.content }, registry, opts.schemaValidation));
  }
  const { state } = build(settings, settingsFile ? sha256(settingsFile.content) : "", settingsDiagnostics, records, ignored, opts);
  return { state, diagnostics: diagnosticsOf(state) };
}

/**
 * A new state from `prev` with some files changed (added or modified) and some removed. Only the
 * changed files are parsed again (and only if their bytes differ). `changedKeys` lists every key
 * whose object appeared, disappeared, or changed in content, owning workspace or source position
 * (so an object moved to another file is changed; translation diagnostics must point at the new place).
 */
export function updateDesiredState(prev: DesiredState, changed: readonly SourceFile[], removedPaths: readonly string[]): UpdateResult {
  const opts = prev.loadOptions;
  const registry = modelKindRegistry;
  const removed = new Set(removedPaths.map(normalizePath));
  const changedByPath = new Map(changed.map((f) => [normalizePath(f.path), f] as const));

  let settings: RepoSettings = prev.settings;
  let settingsDigest = prev.settingsDigest;
  // RELOAD_REQUIRED is recomputed below; the rest of the settings diagnostics stay until gitmesh.yaml changes.
  let settingsDiagnostics: Diagnostic[] = prev.settingsDiagnostics.filter((d) => d.code !== ConfigCode.RELOAD_REQUIRED);
  const settingsChange = changedByPath.get(SETTINGS_FILE);
  if (settingsChange || removed.has(SETTINGS_FILE)) {
    const parsed = parseSettings(settingsChange?.content, opts);
    settings = parsed.settings;
    settingsDiagnostics = parsed.diagnostics;
    settingsDigest = settingsChange ? sha256(settingsChange.content) : "";
  }
  const filter: PathFilter = createPathFilter(settings.ignore);
  const ignoreChanged = settings.ignore.join("\n") !== prev.settings.ignore.join("\n");

  const records: Record<string, FileRecord> = {};
  const ignored = new Set<string>();
  for (const [path, rec] of Object.entries(prev.files)) {
    if (removed.has(path) || changedByPath.has(path)) continue;
    if (ignoreChanged && filter.isIgnored(path)) ignored.add(path);
    else records[path] = rec;
  }
  for (const path of prev.ignored) {
    if (removed.has(path) || changedByPath.has(path)) continue;
    if (!filter.isIgnored(path)) {
      settingsDiagnostics.push(
        diag(
          ConfigCode.RELOAD_REQUIRED,
          SETTINGS_FILE,
          [1, 1],
          `gitmesh.yaml no longer ignores ${path}, but its content was not part of this update; load the whole tree again`,
        ),
      );
    }
    ignored.add(path);
  }
  for (const [path, f] of changedByPath) {
    if (path === SETTINGS_FILE || !isYamlPath(path)) continue;
    if (filter.isIgnored(path)) {
      ignored.add(path);
      continue;
    }
    const old = prev.files[path];
    records[path] = old && old.digest === sha256(f.content) ? old : deepFreeze(parseSourceFile({ path, content: f.content }, registry, opts.schemaValidation));
  }
  const { state, touchedKeys } = build(settings, settingsDigest, settingsDiagnostics, records, [...ignored], opts, prev);
  return { state, diagnostics: diagnosticsOf(state), changedKeys: diffKeys(prev, state, touchedKeys) };
}

function build(
  settings: RepoSettings,
  settingsDigest: string,
  settingsDiagnostics: readonly Diagnostic[],
  records: Record<string, FileRecord>,
  ignored: readonly string[],
  opts: Required<LoadOptions>,
  prev?: DesiredState,
): { state: DesiredState; touchedKeys?: ReadonlySet<string> | undefined } {
  const linked = link(settings, records, prev ? { files: prev.files, objects: prev.objects, index: linkIndexes.get(prev) } : undefined);
  const files: Record<string, FileRecord> = {};
  for (const path of Object.keys(linked.files).sort()) files[path] = linked.files[path]!;
  const state: DesiredState = Object.freeze({
    formatVersion: 1 as const,
    loadOptions: Object.freeze({ ...opts }),
    settings,
    settingsDigest,
    settingsDiagnostics: Object.freeze([...settingsDiagnostics]),
    files: Object.freeze(files),
    ignored: Object.freeze([...new Set(ignored)].sort()),
    objects: Object.freeze(linked.objects),
    linkDiagnostics: Object.freeze(linked.diagnostics),
  });
  linkIndexes.set(state, linked.index);
  return { state, touchedKeys: linked.touchedKeys };
}

function objectAt(state: DesiredState, key: string): LoadedObject | undefined {
  const loc = state.objects[key];
  return loc ? state.files[loc.file]?.objects[loc.index] : undefined;
}

/** `candidates`: the only keys that can differ (from an incremental link); all keys when absent. */
function diffKeys(prev: DesiredState, next: DesiredState, candidates?: ReadonlySet<string>): Set<string> {
  const changed = new Set<string>();
  if (candidates) {
    for (const key of candidates) {
      const a = objectAt(prev, key);
      const b = objectAt(next, key);
      if (a !== b && (!a || !b || !sameObject(a, b))) changed.add(key);
    }
    return changed;
  }
  for (const key of Object.keys(prev.objects)) if (!(key in next.objects)) changed.add(key);
  for (const key of Object.keys(next.objects)) {
    const a = objectAt(prev, key);
    const b = objectAt(next, key);
    if (a === b) continue;
    if (!a || !b || !sameObject(a, b)) changed.add(key);
  }
  return changed;
}

function sameObject(a: LoadedObject, b: LoadedObject): boolean {
  if (a.digest !== b.digest || a.workspace !== b.workspace || a.cluster !== b.cluster) return false;
  const sa = a.source;
  const sb = b.source;
  if (sa.file !== sb.file || sa.line !== sb.line || sa.column !== sb.column || sa.docIndex !== sb.docIndex) return false;
  const ka = Object.keys(a.positions);
  if (ka.length !== Object.keys(b.positions).length) return false;
  return ka.every((k) => {
    const pa = a.positions[k]!;
    const pb = b.positions[k];
    return pb !== undefined && pa[0] === pb[0] && pa[1] === pb[1];
  });
}

/** Repository-relative POSIX path without a leading `./` or `/`. */
export function normalizePath(path: string): string {
  return path.replace(/\\/g, "/").replace(/^(\.\/)+/, "").replace(/^\/+/, "");
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    // for…in over plain data (no inherited enumerable keys): no array allocated per node.
    for (const k in value) deepFreeze((value as Record<string, unknown>)[k]);
  }
  return value;
}
