/**
 * helm for `gitmesh cluster register/deregister`: the exact argument lists (so the command printed
 * when helm is missing is the one that would have run), finding helm on PATH, and running it.
 */
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface AgentInstall {
  readonly release: string;
  readonly chart: string;
  readonly namespace: string;
  readonly context: string;
  readonly kubeconfig?: string;
  readonly serverAddress: string;
  readonly cluster: string;
  readonly authority?: string;
}

export function helmInstallArgs(i: AgentInstall): string[] {
  return [
    "upgrade",
    "--install",
    i.release,
    i.chart,
    "--namespace",
    i.namespace,
    "--kube-context",
    i.context,
    ...(i.kubeconfig === undefined ? [] : ["--kubeconfig", i.kubeconfig]),
    "--set",
    `relay.serverAddress=${i.serverAddress}`,
    "--set",
    `relay.cluster=${i.cluster}`,
    ...(i.authority === undefined ? [] : ["--set", `relay.authority=${i.authority}`]),
  ];
}

export function helmUninstallArgs(i: Pick<AgentInstall, "release" | "namespace" | "context" | "kubeconfig">): string[] {
  return ["uninstall", i.release, "--namespace", i.namespace, "--kube-context", i.context, ...(i.kubeconfig === undefined ? [] : ["--kubeconfig", i.kubeconfig])];
}

/** The agent chart shipped next to this code (`charts/gitmesh-agent` in the repository and the image), when present. */
export function bundledAgentChart(): string | undefined {
  const dir = fileURLToPath(new URL("../../charts/gitmesh-agent", import.meta.url));
  return existsSync(join(dir, "Chart.yaml")) ? dir : undefined;
}

/** Absolute path of an executable `helm` on PATH, or undefined. */
export function findHelm(path: string | undefined): string | undefined {
  for (const dir of (path ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, "helm");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** POSIX shell quoting, for printing a command a user can paste. */
export function shellQuote(args: readonly string[]): string {
  return args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(" ");
}

export interface HelmRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function runHelm(helm: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<HelmRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(helm, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => err.push(c));
    child.on("error", reject);
    child.on("close", (code) => resolvePromise({ code: code ?? 1, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") }));
  });
}
