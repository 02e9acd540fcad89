/**
 * Gloo's CRD rules (the protos' `+kubebuilder:validation:XValidation` markers), declared in a schema as
 * `x-gloo-rules: [{when, requireAnyOf | forbid, message}]` and reported with Gloo's own message:
 * - `when`: `{field: value}` (the field equals the value) or `{absent: field}` (the field is not set);
 * - `requireAnyOf`: alternatives, each a list of dotted paths that must all be set;
 * - `forbid`: fields that must not be set.
 *
 * `checkGlooRules` is the keyword's function in ajv's calling convention (result, and the errors on the
 * function itself); the generated validators (generated/validators.gen.ts) import and call it.
 */

interface GlooRule {
  readonly when: Readonly<Record<string, unknown>>;
  readonly requireAnyOf?: readonly (readonly string[])[];
  readonly forbid?: readonly string[];
  readonly message: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const hasPath = (data: Record<string, unknown>, path: string): boolean => {
  let cur: unknown = data;
  for (const seg of path.split(".")) {
    if (!isRecord(cur) || cur[seg] === undefined) return false;
    cur = cur[seg];
  }
  return true;
};

export function checkGlooRules(this: unknown, rules: readonly GlooRule[], data: Record<string, unknown>): boolean {
  const failed: { keyword: string; message: string; params: Record<string, unknown> }[] = [];
  for (const r of rules) {
    const applies = Object.entries(r.when).every(([k, v]) => (k === "absent" ? data[String(v)] === undefined : data[k] === v));
    if (!applies) continue;
    const present = (r.forbid ?? []).find((f) => data[f] !== undefined);
    if (present !== undefined) failed.push({ keyword: "x-gloo-rules", message: r.message, params: { field: present } });
    else if (r.requireAnyOf !== undefined && !r.requireAnyOf.some((alt) => alt.every((p) => hasPath(data, p)))) failed.push({ keyword: "x-gloo-rules", message: r.message, params: {} });
  }
  (checkGlooRules as unknown as { errors: unknown[] }).errors = failed;
  return failed.length === 0;
}
