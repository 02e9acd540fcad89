/**
 * Starts a Kubernetes API emulator on 127.0.0.1:<free port> and gives back a KubeConfig for
 * @kubernetes/client-node pointing at it (http://, `insecure-skip-tls-verify: true`, a dummy token).
 *
 *   const kube = await startKube({ seed: "apiVersion: v1\nkind: Namespace\nmetadata: {name: istio-system}\n" });
 *   const core = kube.kc.makeApiClient(CoreV1Api);
 *   ...
 *   await kube.stop();                           // in afterAll / afterEach
 *
 * `kube.emulator` exposes seeding, direct reads (`get`/`list`), the fault switch (`faults.closeWatches()`,
 * `faults.failRequests(n)`, `faults.goAway()` / `faults.comeBack()`), `onChange` and `registerKind`.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { createKubeEmulator, type KubeEmulator, type KubeEmulatorOptions } from "../../src/kube-emulator/index.js";

export interface StartedKube {
  readonly emulator: KubeEmulator;
  /** A fresh KubeConfig for the emulator (call `newKubeConfig()` for another, e.g. per agent replica). */
  readonly kc: KubeConfig;
  readonly url: string;
  newKubeConfig(namespace?: string): KubeConfig;
  stop(): Promise<void>;
}

export async function startKube(options: Omit<KubeEmulatorOptions, "port" | "host"> = {}): Promise<StartedKube> {
  const emulator = await createKubeEmulator({ ...options, port: 0, host: "127.0.0.1" });
  const newKubeConfig = (namespace?: string): KubeConfig => {
    const kc = new KubeConfig();
    kc.loadFromString(emulator.kubeconfig(namespace === undefined ? {} : { namespace }));
    return kc;
  };
  return {
    emulator,
    kc: newKubeConfig(),
    url: emulator.url,
    newKubeConfig,
    stop: () => emulator.stop(),
  };
}

/** Resolves when `predicate` holds, polling every 10 ms; rejects with `what` after `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
