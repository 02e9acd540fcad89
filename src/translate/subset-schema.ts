/**
 * Schemas gitmesh writes itself for rendered objects Istio's CRDs do not cover (the IssuedCertificate
 * request, the Sail operator resources, Envoy messages inside EnvoyFilters): one ajv instance for all
 * of them, each schema compiled on first use (nothing at import time, so a process that never renders
 * such an object never pays for it).
 */
import AjvModule from "ajv";

type ValidateFn = ((data: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };
type AjvLike = { compile(schema: object): ValidateFn };

let ajv: AjvLike | undefined;

export interface SubsetIssue {
  readonly path: string;
  readonly message: string;
}

/** A validator of `schema` (compiled on its first call): `[]` when valid, else the issues with their JSON pointers. */
export function subsetValidator(schema: object): (data: unknown) => SubsetIssue[] {
  let validate: ValidateFn | undefined;
  return (data) => {
    if (validate === undefined) {
      ajv ??= new (AjvModule as unknown as new (opts: object) => AjvLike)({ allErrors: true, strict: false });
      validate = ajv.compile(schema);
    }
    if (validate(data)) return [];
    return (validate.errors ?? []).map((e) => ({ path: e.instancePath, message: e.message ?? "invalid" }));
  };
}
