/**
 * Warming (DESIGN.md "Management server"): after a restart that lost state (no discovery survived in
 * the snapshot store), no output is published until every registered cluster has re-sent its
 * discovery snapshot — clusters with `skipWarming` are not waited for — or the window passes.
 *
 * Separately, `inputsComplete()` says whether EVERY registered cluster's discovery is known. Output
 * rendered while it is not is published as incomplete (the agent applies it but prunes nothing): a
 * cluster's output depends on the other clusters' discovery (remote endpoints, east-west gateways),
 * so output computed from partial state must never delete another cluster's config.
 */

export interface RegisteredCluster {
  readonly name: string;
  readonly skipWarming: boolean;
}

export interface WarmingStatus {
  readonly warming: boolean;
  /** Why the gate opened: `not-needed` (state survived), `discovery` (every cluster resent), `window` (timed out). */
  readonly reason: "warming" | "not-needed" | "discovery" | "window";
  readonly sinceMs: number;
  readonly windowMs: number;
  /** Registered clusters whose discovery is still missing (skipWarming ones included, marked). */
  readonly waitingFor: readonly string[];
  readonly skipped: readonly string[];
  readonly discovered: readonly string[];
}

export interface WarmingGate {
  /** The clusters of the desired state in force. */
  setRegistered(clusters: readonly RegisteredCluster[]): void;
  discovered(cluster: string): void;
  readonly warming: boolean;
  inputsComplete(): boolean;
  status(): WarmingStatus;
  /** Called once when the gate opens (immediately if it never closed). */
  onWarmed(listener: () => void): void;
  /** Called whenever inputsComplete() turns true. */
  onInputsComplete(listener: () => void): void;
  stop(): void;
}

export interface WarmingGateOptions {
  /** True when the restart lost state: start closed. */
  readonly lostState: boolean;
  readonly windowMs: number;
  /** Extra clusters never waited for (flag), in addition to spec.skipWarming. */
  readonly skip?: readonly string[];
  /** Clusters whose discovery is already known (from the store). */
  readonly known?: readonly string[];
  readonly now?: () => number;
}

export function createWarmingGate(options: WarmingGateOptions): WarmingGate {
  const now = options.now ?? Date.now;
  const since = now();
  const extraSkip = new Set(options.skip ?? []);
  const discovered = new Set(options.known ?? []);
  let registered: readonly RegisteredCluster[] | undefined;
  let warming = options.lostState;
  let reason: WarmingStatus["reason"] = warming ? "warming" : "not-needed";
  let wasComplete = false;
  const warmedListeners: (() => void)[] = [];
  const completeListeners: (() => void)[] = [];

  const skipped = (c: RegisteredCluster) => c.skipWarming || extraSkip.has(c.name);
  const open = (why: WarmingStatus["reason"]) => {
    if (!warming) return;
    warming = false;
    reason = why;
    clearTimeout(timer);
    for (const l of warmedListeners) l();
  };
  const evaluate = () => {
    if (registered === undefined) return;
    if (warming && registered.filter((c) => !skipped(c)).every((c) => discovered.has(c.name))) open("discovery");
    const complete = registered.every((c) => discovered.has(c.name));
    if (complete && !wasComplete) {
      wasComplete = true;
      for (const l of completeListeners) l();
    } else if (!complete) wasComplete = false;
  };
  const timer = setTimeout(() => open("window"), options.windowMs);
  timer.unref();
  if (!warming) clearTimeout(timer);

  return {
    setRegistered(clusters) {
      registered = clusters;
      evaluate();
    },
    discovered(cluster) {
      if (discovered.has(cluster)) return;
      discovered.add(cluster);
      evaluate();
    },
    get warming() {
      return warming;
    },
    inputsComplete: () => registered !== undefined && registered.every((c) => discovered.has(c.name)),
    status() {
      const regs = registered ?? [];
      return {
        warming,
        reason,
        sinceMs: since,
        windowMs: options.windowMs,
        waitingFor: regs.filter((c) => !discovered.has(c.name)).map((c) => c.name).sort(),
        skipped: regs.filter(skipped).map((c) => c.name).sort(),
        discovered: [...discovered].sort(),
      };
    },
    onWarmed(listener) {
      if (!warming) listener();
      else warmedListeners.push(listener);
    },
    onInputsComplete(listener) {
      completeListeners.push(listener);
    },
    stop() {
      clearTimeout(timer);
    },
  };
}
