/** Shared by the long-running sub-commands (agent, server, kube-emulator). */

/** Resolves on the first SIGINT or SIGTERM, and removes its listeners so a second signal gets Node's default. */
export function untilStopSignal(): Promise<void> {
  return new Promise<void>((done) => {
    const stop = (): void => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      done();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
