/**
 * What the loader needs from the configuration model (src/model): which kinds exist and how to
 * validate one object. A seam, so the loader's own logic does not depend on how the model compiles
 * its validators.
 */
import { currentApiVersion, kindInfo, SUPPORTED_KINDS, untranslatedGlooKind, validateResource } from "../model/index.js";

export interface KindRegistryIssue {
  /** JSON pointer inside the object, e.g. `/spec/http/0/forwardTo`. */
  readonly path: string;
  readonly message: string;
}

export interface KindRegistry {
  /** `undefined` when gitmesh does not support this apiVersion/kind. */
  kindInfo(apiVersion: string, kind: string): { readonly adminScoped: boolean } | undefined;
  validate(obj: unknown): readonly KindRegistryIssue[];
  /** The current apiVersion when `apiVersion` is a deprecated name of this kind's group, else undefined. */
  currentApiVersion?(apiVersion: string, kind: string): string | undefined;
  /** Top-level spec fields of a Gloo kind gitmesh recognises but does not translate, when known. */
  untranslatedSpecFields?(apiVersion: string, kind: string): readonly string[] | undefined;
  /** `apiVersion/Kind` strings, for messages. */
  readonly supportedKinds: readonly string[];
}

/** The registry backed by src/model: SUPPORTED_KINDS and the compiled JSON Schema validators. */
export const modelKindRegistry: KindRegistry = Object.freeze({
  kindInfo: (apiVersion: string, kind: string) => kindInfo(apiVersion, kind),
  validate: (obj: unknown) => validateResource(obj),
  currentApiVersion: (apiVersion: string, kind: string) => currentApiVersion(apiVersion, kind),
  untranslatedSpecFields: (apiVersion: string, kind: string) => untranslatedGlooKind(apiVersion, kind)?.specFields,
  supportedKinds: Object.freeze(SUPPORTED_KINDS.map((k) => `${k.kind} (${k.apiVersion})`)),
});
