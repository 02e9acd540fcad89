/**
 * Small desired states and sync outcomes for the server's part tests: loaded by the real loader
 * (src/config), so a part sees what it sees in the server.
 */
import { loadDesiredState, type DesiredState } from "../../src/config/index.js";
import type { SyncOutcome } from "../../src/git-sync/index.js";
import type { Diagnostic } from "../../src/core/index.js";

/** A desired state with one KubernetesCluster per name (`skip` ones with spec.skipWarming). */
export function clustersState(names: readonly string[], skip: readonly string[] = []): DesiredState {
  const files = names.map((c) => ({
    path: `clusters/${c}.yaml`,
    content: `apiVersion: admin.gloo.solo.io/v2\nkind: KubernetesCluster\nmetadata: {name: ${c}, namespace: gloo-mesh}\nspec: {clusterDomain: cluster.local${skip.includes(c) ? ", skipWarming: true" : ""}}\n`,
  }));
  const { state, diagnostics } = loadDesiredState(files);
  const errors = diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0) throw new Error(`fixture does not load: ${errors.map((d) => d.message).join("; ")}`);
  return state;
}

const summary = (oid: string, message = "change\n") => ({ oid, tree: "0".repeat(40), parents: [], timestamp: 1_700_000_000, message, author: { name: "Alice Admin", email: "alice@example.test" } });

export function accepted(oid: string, state: DesiredState, message?: string): SyncOutcome<DesiredState> {
  return { kind: "updated", commit: summary(oid, message), state, full: false, changedKeys: new Set(["KubernetesCluster/gloo-mesh/x"]), parsedPaths: [], removedPaths: [], diagnostics: [] };
}

export function unchanged(oid: string, state: DesiredState): SyncOutcome<DesiredState> {
  return { kind: "unchanged", commit: summary(oid), state };
}

export function rejected(oid: string, diagnostics: readonly Diagnostic[]): SyncOutcome<DesiredState> {
  return {
    kind: "rejected",
    commit: summary(oid),
    state: undefined,
    rejection: { commit: oid, ref: "main", subPath: "", committedAt: new Date(0).toISOString(), rejectedAt: new Date(0).toISOString(), diagnostics },
  };
}

export const sha = (c: string) => c.repeat(40).slice(0, 40);
