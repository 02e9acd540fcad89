/**
 * What the apply path takes and gives (the Applier's public shapes), and the state its named steps
 * pass along (README "Apply as named steps"): one `Delivery` per output version, one `ApplyContext`
 * per applier.
 */
import type { Logger } from "../../core/index.js";
import type { Inventory } from "../inventory.js";
import type { FieldOwnerWriter, KindRef, KubeObject, KubeReader } from "../kube.js";
import type { AgentMetrics } from "../metrics.js";

/** One output version as received from the relay. */
export interface OutputVersion {
  readonly version: number;
  /** The server marked this the complete desired output: prune against it is allowed. */
  readonly complete: boolean;
  readonly sourceCommit: string;
  /** Relay key → JSON bytes of one object. */
  readonly resources: ReadonlyMap<string, Uint8Array>;
}

export interface ResourceError {
  readonly key: string;
  readonly message: string;
  /**
   * True when retrying is expected to succeed without anyone acting: the API server answered 429,
   * 5xx, timed out or reset the connection after the retries within the delivery, or this replica
   * lost leadership. Absent (false) for what needs a person: an invalid object (422), an object
   * gitmesh does not own, the mass-deletion guard, an RBAC refusal (403), a kind whose CRD is not
   * installed, an unreadable inventory.
   */
  readonly transient?: boolean;
}

export interface ApplyOutcome {
  readonly ack: boolean;
  readonly errors: readonly ResourceError[];
  /** Objects of the output now in the cluster: applied, or found unchanged. */
  readonly applied: number;
  /** Of those, the ones skipped because they were unchanged since the agent applied them. */
  readonly unchanged: number;
  readonly pruned: number;
  /** Objects of the output that exist but are not the agent's (not applied; NACKed). */
  readonly refused: number;
  /**
   * Why pruning did not run (incomplete output, mass-deletion guard, the inventory or leadership
   * unavailable) or was partly held (a kind that could not be listed, a control plane's removal).
   */
  readonly pruneSkipped?: "incomplete" | "mass_deletion" | "list_failed" | "control_plane";
  /** Certificate requests found in the output (not applied to the cluster; see cacerts.ts). */
  readonly certificateRequests: readonly KubeObject[];
}

/** One ignoreDifferences rule of the output options. */
export interface IgnoreDifference {
  readonly group?: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name?: string;
  readonly jsonPointers: readonly string[];
}

/**
 * How a step tells the pipeline to go on: `done` (next step), `retry-later` (stop; a later delivery
 * or resync is expected to succeed), `needs-person` (stop; nothing changes until someone acts).
 */
export type StepResult = { readonly reaction: "done" } | { readonly reaction: "retry-later" | "needs-person"; readonly reason: string };
export const DONE: StepResult = { reaction: "done" };

/** An output object the agent means to own (its relay key, the manifest it applies). */
export interface Wanted {
  readonly relayKey: string;
  readonly obj: KubeObject;
}

/** An object to write: absent (`live` undefined: create) or owned/adopted (forced apply with its uid). */
export interface Work extends Wanted {
  readonly live?: KubeObject;
}

/** What the steps of one delivery share; each step reads what the previous ones left. */
export interface Delivery {
  readonly output: OutputVersion;
  readonly errors: ResourceError[];
  /** parse: object key → wanted object. */
  readonly wanted: Map<string, Wanted>;
  readonly certificateRequests: KubeObject[];
  allowMassDeletion: boolean;
  /** observe: the live objects of every kind listed (object key → object). */
  readonly live: Map<string, KubeObject>;
  /** observe: kinds (`apiVersion/kind`) whose list failed → why (their objects are read one by one, never pruned). */
  readonly failedKinds: Map<string, { readonly message: string; readonly transient: boolean }>;
  /** observe: kinds whose CRD is not installed (`apiVersion/kind` → CRD name, e.g. virtualservices.networking.istio.io). */
  readonly missingKinds: Map<string, string>;
  /** guard: what apply writes. */
  readonly work: Work[];
  applied: number;
  unchanged: number;
  refused: number;
  pruned: number;
  pruneSkipped?: ApplyOutcome["pruneSkipped"];
  /** Set when a step stopped the pipeline. */
  halted?: Exclude<StepResult, { reaction: "done" }>;
}

/** What lives as long as the applier: clients, options, and what it remembers between deliveries. */
export interface ApplyContext {
  readonly cluster: string;
  /** Reads retried on transient answers. */
  readonly reader: KubeReader;
  /** Writes retried on transient answers, each attempt refused when this replica is not the leader. */
  readonly writer: FieldOwnerWriter;
  /** May be absent when the applier is driven without one: every delivery then stops at observe. */
  readonly inventory: Inventory | undefined;
  readonly kinds: readonly KindRef[];
  readonly fieldManager: string;
  readonly maxPruneFraction: number;
  readonly pruneAlwaysAllowed: number;
  readonly concurrency: number;
  readonly canWrite: () => boolean;
  readonly log: Logger;
  readonly metrics: AgentMetrics | undefined;
  /** Object key → hash of the manifest last applied successfully. */
  readonly lastApplied: Map<string, string>;
  readonly fights: Map<string, string>;
  readonly manageIstioInstall: boolean;
  /** What the agent wants in the cluster now (object key → manifest), for drift repair. */
  desired: Map<string, KubeObject>;
  /** The output options' ignoreDifferences rules in force. */
  ignoreRules: IgnoreDifference[];
  migrationChecked: boolean;
}

export function newDelivery(output: OutputVersion): Delivery {
  return {
    output,
    errors: [],
    wanted: new Map(),
    certificateRequests: [],
    allowMassDeletion: false,
    live: new Map(),
    failedKinds: new Map(),
    missingKinds: new Map(),
    work: [],
    applied: 0,
    unchanged: 0,
    refused: 0,
    pruned: 0,
  };
}
