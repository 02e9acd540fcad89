/**
 * Istio's own validation of YAML (tools/istio-validate: istiod's validating webhook handler, built
 * by scripts/build-tools.mjs). Many objects go through ONE process: files and directories as
 * arguments, or a multi-document stream on stdin.
 *
 *   const { verdicts } = await istioValidateFiles(["test/fixtures/translate/a/output.yaml"]);
 *   const results = await istioValidateObjects([{ label: "bad VS", object: vs }]);
 *   expect(istioFailures(verdicts)).toEqual([]);
 */
import { spawn } from "node:child_process";
import { stringify } from "yaml";
import { toolBinary } from "./tools.js";

/** One document as the tool judged it (see `istio-validate --help`). */
export interface IstioVerdict {
  readonly file: string;
  /** Index among the file's non-empty documents, from 0. */
  readonly document: number;
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** False for documents the webhook is not registered for (not networking/security/telemetry/extensions.istio.io). */
  readonly validated: boolean;
  readonly valid: boolean;
  /** The webhook's denial message, verbatim. */
  readonly message?: string;
  readonly errors: readonly string[];
  readonly warnings: readonly string[];
  /** Spec fields Istio's protos do not have (the webhook ignores them; the API server prunes or rejects them). */
  readonly unknownFields: readonly string[];
}

export interface IstioRun {
  readonly verdicts: IstioVerdict[];
  /** 0: all valid; 1: some invalid; 2: usage or read error. */
  readonly code: number;
  readonly stderr: string;
  readonly ms: number;
}

export interface IstioValidateOptions {
  /** Count spec fields unknown to Istio's protos as errors (--strict). */
  readonly strict?: boolean;
  /** Extra flags (--domain-suffix, --default-namespace). */
  readonly flags?: readonly string[];
}

function run(args: readonly string[], stdin: string | undefined, opts: IstioValidateOptions): Promise<IstioRun> {
  const bin = toolBinary("istio-validate", "istio-validate");
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(bin, [...(opts.strict === true ? ["--strict"] : []), ...(opts.flags ?? []), ...args], { stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let err = "";
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      const text = Buffer.concat(out).toString("utf8");
      if (code === null || code === 2) {
        reject(new Error(`istio-validate ${args.join(" ")} failed (${code === null ? `signal ${String(signal)}` : "exit 2"}): ${err}`));
        return;
      }
      const verdicts = text
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as IstioVerdict);
      resolve({ verdicts, code, stderr: err, ms: Date.now() - started });
    });
    child.stdin.on("error", () => undefined); // an early exit is reported by close
    child.stdin.end(stdin ?? "");
  });
}

/** Validates files and directories (every *.yaml / *.yml under them) in one process. */
export function istioValidateFiles(paths: readonly string[], opts: IstioValidateOptions = {}): Promise<IstioRun> {
  if (paths.length === 0) throw new Error("istioValidateFiles: no paths");
  return run(paths, undefined, opts);
}

/** Validates a multi-document YAML stream in one process (file "-" in the verdicts). */
export function istioValidateStream(yaml: string, opts: IstioValidateOptions = {}): Promise<IstioRun> {
  return run(["-"], yaml, opts);
}

/** Validates objects in one process; each verdict comes back with the label it was given. */
export async function istioValidateObjects<L extends string>(items: readonly { readonly label: L; readonly object: unknown }[], opts: IstioValidateOptions = {}): Promise<Map<L, IstioVerdict>> {
  const stream = items.map((i) => stringify(i.object)).join("---\n");
  const run = await istioValidateStream(stream, opts);
  if (run.verdicts.length !== items.length) throw new Error(`istio-validate returned ${String(run.verdicts.length)} verdicts for ${String(items.length)} objects: ${run.stderr}`);
  return new Map(items.map((item, i) => [item.label, run.verdicts[i] as IstioVerdict]));
}

/** `file#doc Kind ns/name: error; error` for every invalid document: empty when Istio accepts all. */
export function istioFailures(verdicts: readonly IstioVerdict[]): string[] {
  return verdicts.filter((v) => !v.valid).map((v) => `${describeVerdict(v)}: ${v.errors.join("; ")}`);
}

/** `file#doc Kind ns/name: warning` for every warning Istio gives. */
export function istioWarnings(verdicts: readonly IstioVerdict[]): string[] {
  return verdicts.flatMap((v) => v.warnings.map((w) => `${describeVerdict(v)}: ${w}`));
}

export function describeVerdict(v: IstioVerdict): string {
  return `${v.file}#${String(v.document)} ${v.kind} ${v.namespace === "" ? "" : `${v.namespace}/`}${v.name}`;
}
