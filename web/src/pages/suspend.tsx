/**
 * Suspend and resume (admin): buttons for a cluster or the whole fleet, shown only to an admin session
 * (GET /api/session). The server records the token's role as the actor; the reason is optional.
 */
import { useState } from "preact/hooks";
import { postJson } from "../api.js";
import { useApi } from "../live.js";
import type { Suspension } from "../types.js";

/** `cluster` undefined: the whole fleet. `suspended`: what holds the scope now (null: nothing). */
export function SuspendControls({ cluster, suspended }: { cluster?: string; suspended: Suspension | null | undefined }) {
  const { data: session } = useApi<{ role: string | null }>("/api/session");
  const [reason, setReason] = useState("");
  const [message, setMessage] = useState<string | null>(null);
  if (session?.role !== "admin") return null;
  const path = (action: "suspend" | "resume") => (cluster === undefined ? `/api/fleet/${action}` : `/api/clusters/${encodeURIComponent(cluster)}/${action}`);
  const act = (action: "suspend" | "resume") => {
    setMessage(null);
    postJson<{ next: string }>(path(action), action === "suspend" && reason.trim() !== "" ? { reason: reason.trim() } : {})
      .then((a) => setMessage(a.next))
      .catch((err: unknown) => setMessage(err instanceof Error ? err.message : String(err)));
  };
  const what = cluster === undefined ? "the whole fleet" : cluster;
  const heldHere = suspended !== null && suspended !== undefined && suspended.source === "api" && (cluster === undefined ? suspended.scope === "fleet" : suspended.scope === cluster);
  return (
    <div class="suspend-controls" data-testid={cluster === undefined ? "fleet-suspend" : "cluster-suspend"}>
      {heldHere ? (
        <button type="button" onClick={() => act("resume")}>
          Resume {what}
        </button>
      ) : (
        <>
          <input type="text" placeholder="reason (optional)" maxLength={500} value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} aria-label={`reason to suspend ${what}`} />
          <button type="button" onClick={() => act("suspend")}>
            Suspend {what}
          </button>
        </>
      )}
      {message && <small> {message}</small>}
    </div>
  );
}
