/**
 * How a DiscoverySnapshot travels in the relay, so that agent and server build the same state and
 * therefore the same checksum:
 *
 *   state = snapshotEntries(snapshot)  (src/discovery: stable key → canonical item, plus key `snapshot`
 *                                       holding the header {apiVersion?, kind?, cluster})
 *           each value → UTF-8 bytes of JSON.stringify(value)   (entries are canonical: plain JSON is canonical)
 *   checksum = stateChecksum(state)    (over keys and bytes; NOT snapshotChecksum, which hashes the whole document)
 *
 * The agent sends relayStateFromSnapshot(snapshot); the server rebuilds the snapshot with
 * snapshotFromRelayState(state, cluster).
 */
import { describeError } from "../core/index.js";
import { HEADER_KEY, snapshotEntries, snapshotFromEntries, type DiscoverySnapshot } from "../discovery/index.js";
import type { RelayState } from "./wire.js";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The relay state of a discovery snapshot: entry key → UTF-8 JSON of the canonical entry. */
export function relayStateFromSnapshot(snapshot: DiscoverySnapshot): Map<string, Uint8Array> {
  const state = new Map<string, Uint8Array>();
  for (const [key, value] of snapshotEntries(snapshot)) state.set(key, encoder.encode(JSON.stringify(value)));
  return state;
}

/**
 * The snapshot carried by a relay state, for the cluster whose certificate sent it. Not an exception
 * for bad content: a result that says what is wrong (the agent's state, not the server, is at fault).
 */
export function snapshotFromRelayState(
  state: RelayState,
  cluster: string,
): { readonly ok: true; readonly snapshot: DiscoverySnapshot } | { readonly ok: false; readonly message: string } {
  const entries = new Map<string, unknown>();
  for (const [key, bytes] of state) {
    try {
      entries.set(key, JSON.parse(decoder.decode(bytes)));
    } catch (err) {
      return { ok: false, message: `discovery entry ${JSON.stringify(key)} is not UTF-8 JSON (${describeError(err)})` };
    }
  }
  const head = entries.get(HEADER_KEY);
  if (head !== undefined && (typeof head !== "object" || head === null || Array.isArray(head))) {
    return { ok: false, message: `the discovery header (key ${JSON.stringify(HEADER_KEY)}) must be an object naming the cluster, got ${head === null ? "null" : Array.isArray(head) ? "an array" : typeof head}` };
  }
  if (head !== undefined && (head as { cluster?: unknown }).cluster !== cluster) {
    const named = (head as { cluster?: unknown }).cluster;
    return { ok: false, message: `the discovery snapshot names cluster ${named === undefined ? "(none)" : JSON.stringify(named)} but was sent with the certificate of cluster "${cluster}"` };
  }
  try {
    return { ok: true, snapshot: snapshotFromEntries(entries) };
  } catch (err) {
    return { ok: false, message: `the discovery state is not a snapshot: ${describeError(err)}` };
  }
}
