/**
 * Commit trailers the server acts on. Only the trailer block counts (the last paragraph of the
 * message, every line `Key: value`, as `git interpret-trailers` reads it), so a message that
 * merely quotes a trailer in its body does not trigger it.
 *
 *   Gitmesh-Allow-Deletion: cluster1, cluster2     (several lines add up; `*` = every cluster)
 *
 * lets the outputs of that commit delete any number of objects at once in the named clusters (the
 * agents' mass-deletion guard stands down for that commit only).
 */
export const ALLOW_DELETION_TRAILER = "Gitmesh-Allow-Deletion";

const TRAILER_LINE = /^([A-Za-z0-9][A-Za-z0-9-]*)\s*:\s*(.*)$/;
const CLUSTER = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The trailers of a commit message, in order (keys as written). Empty when the last paragraph is not a trailer block. */
export function commitTrailers(message: string): { key: string; value: string }[] {
  const paragraphs = message.replace(/\r\n/g, "\n").trim().split(/\n\s*\n/);
  // A message of one paragraph is a subject (and body), never trailers.
  if (paragraphs.length < 2) return [];
  const lines = paragraphs[paragraphs.length - 1]!.split("\n");
  const out: { key: string; value: string }[] = [];
  for (const line of lines) {
    if (/^\s/.test(line) && out.length > 0) {
      // A continuation line folds into the previous trailer.
      const last = out[out.length - 1]!;
      out[out.length - 1] = { key: last.key, value: `${last.value} ${line.trim()}`.trim() };
      continue;
    }
    const m = TRAILER_LINE.exec(line);
    if (!m) return [];
    out.push({ key: m[1]!, value: m[2]!.trim() });
  }
  return out;
}

/**
 * Clusters a commit allows to delete any number of objects at once (`Gitmesh-Allow-Deletion`,
 * case-insensitive key; values separated by commas or spaces). `invalid` lists values that are no
 * cluster name (ignored; the server logs them).
 */
export function allowedDeletions(message: string): { clusters: string[]; invalid: string[] } {
  const clusters = new Set<string>();
  const invalid: string[] = [];
  for (const t of commitTrailers(message)) {
    if (t.key.toLowerCase() !== ALLOW_DELETION_TRAILER.toLowerCase()) continue;
    for (const v of t.value.split(/[\s,]+/).filter((x) => x !== "")) {
      if (v === "*" || CLUSTER.test(v)) clusters.add(v);
      else invalid.push(v);
    }
  }
  return { clusters: [...clusters].sort(), invalid };
}
