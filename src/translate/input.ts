/**
 * Local adapter for the inputs of translation. The loader (src/config) and the discovery snapshot
 * type (src/model) are written in parallel; translation codes against these narrow structural
 * views so that it needs only what it reads. `DesiredState` from src/config is accepted as long as
 * it carries its objects as an array or a key → object record under `objects`.
 */
import { allObjects, type DesiredState } from "../config/index.js";

/** Where an object came from. */
export interface SourceRef {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly docIndex?: number;
}

/** The parts of a loaded Gloo object that translation reads. */
export interface InputObject {
  /** `<kind>/<cluster|''>/<namespace>/<name>`. */
  readonly key: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
    readonly creationTimestamp?: string;
  };
  readonly spec?: unknown;
  readonly cluster?: string;
  /** Owning workspace as resolved by the loader (translation resolves it itself when absent). */
  readonly workspace?: string;
  readonly source: SourceRef;
  /** JSON pointer (e.g. `/spec/http/0`) → [line, column]; optional position data from the loader. */
  readonly positions?: Readonly<Record<string, readonly [number, number]>>;
}

/** The desired state as translation sees it. */
export interface DesiredInput {
  readonly objects: readonly InputObject[] | Readonly<Record<string, InputObject>>;
  /** Admin namespace (default `gloo-mesh`). */
  readonly adminNamespace?: string;
}

export interface DiscoveredPort {
  readonly name?: string;
  readonly port: number;
  readonly targetPort?: number | string;
  readonly protocol?: string;
  readonly appProtocol?: string;
}

export interface DiscoveredService {
  readonly name: string;
  readonly namespace: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly selector?: Readonly<Record<string, string>>;
  readonly ports: readonly DiscoveredPort[];
  readonly type?: string;
}

export interface DiscoveredWorkload {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly podLabels: Readonly<Record<string, string>>;
  readonly serviceAccount: string;
}

export interface DiscoveredGateway {
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly podLabels: Readonly<Record<string, string>>;
  readonly ports: readonly DiscoveredPort[];
  readonly addresses?: readonly string[];
}

/** The parts of a DiscoverySnapshot translation reads (structurally compatible with src/model's type). */
export interface DiscoveryInput {
  readonly cluster: string;
  readonly namespaces: readonly { readonly name: string; readonly labels?: Readonly<Record<string, string>> }[];
  readonly services: readonly DiscoveredService[];
  readonly workloads: readonly DiscoveredWorkload[];
  readonly gateways: readonly DiscoveredGateway[];
  readonly meshes?: readonly { readonly namespace: string; readonly trustDomain: string; readonly revision?: string; readonly istiodServiceAccount?: string }[];
  readonly localities?: readonly unknown[];
  readonly istioObjects?: readonly unknown[];
}

export type DiscoveryMap = ReadonlyMap<string, DiscoveryInput>;

export function objectsOf(desired: DesiredInput): readonly InputObject[] {
  const o: readonly InputObject[] | Readonly<Record<string, InputObject>> = desired.objects;
  return isObjectArray(o) ? o : Object.values(o);
}

function isObjectArray(o: readonly InputObject[] | Readonly<Record<string, InputObject>>): o is readonly InputObject[] {
  return Array.isArray(o);
}

/** What the public entry points accept: the loader's DesiredState, or a plain list of objects (tests, benchmarks). */
export type Desired = DesiredState | DesiredInput;

const adapted = new WeakMap<object, DesiredInput>();

/** Adapter from src/config's DesiredState (objects stored by file location) to the view translation reads. Memoised by identity. */
export function toDesiredInput(desired: Desired): DesiredInput {
  if (!("formatVersion" in desired)) return desired;
  let d = adapted.get(desired);
  if (d === undefined) {
    d = { objects: allObjects(desired), adminNamespace: desired.settings.adminNamespace };
    adapted.set(desired, d);
  }
  return d;
}
