/**
 * Keeps the packs of an audit repository from piling up: every audit commit adds one small pack, and each
 * lookup of an object walks the pack list. Once there are more than `limit` packs, the small ones are
 * merged into one, geometrically (as `git repack --geometric=2` chooses): sorted by size, every pack
 * that is not at least twice the size of all smaller packs together is merged with them, so the first,
 * large pack of a fleet is left alone and merging costs about as much as the objects written since.
 *
 * The merged objects are read with the object reader (deltas of fetched packs resolved) and written
 * whole into the new pack; the old packs are deleted only after the new one is in place (a reader that
 * still holds them in memory keeps working; one that lists the directory finds the new one). Packs git
 * marks as special (`.keep`, `.promisor`, with a bitmap) are never touched.
 */
import * as nodeFs from "node:fs";
import { join } from "node:path";
import type { ObjectReader } from "./object-reader.js";
import { createPackBuilder, writePack } from "./pack.js";

/** More packs than this in the repository start a merge (git's gc.autoPackLimit is 50). */
export const DEFAULT_PACK_LIMIT = 32;

interface PackFile {
  readonly base: string;
  readonly bytes: number;
}

/** Merges small packs when there are more than `limit`; returns what it merged, or undefined. */
export function consolidatePacks(gitdir: string, reader: ObjectReader, limit = DEFAULT_PACK_LIMIT): { packs: number; objects: number } | undefined {
  const dir = join(gitdir, "objects", "pack");
  let names: string[];
  try {
    names = nodeFs.readdirSync(dir);
  } catch {
    return undefined;
  }
  const present = new Set(names);
  const packs: PackFile[] = [];
  for (const name of names) {
    if (!name.endsWith(".idx")) continue;
    const stem = name.slice(0, -4);
    if (!present.has(`${stem}.pack`) || present.has(`${stem}.keep`) || present.has(`${stem}.promisor`) || present.has(`${stem}.bitmap`)) continue;
    packs.push({ base: join(dir, stem), bytes: nodeFs.statSync(join(dir, `${stem}.pack`)).size });
  }
  if (packs.length <= limit) return undefined;
  packs.sort((a, b) => a.bytes - b.bytes);
  // the largest index whose pack is less than twice all smaller ones: it and everything below merge
  let below = 0;
  let split = 0;
  for (let i = 0; i < packs.length; i++) {
    if (i > 0 && packs[i]!.bytes < 2 * below) split = i + 1;
    below += packs[i]!.bytes;
  }
  const merged = packs.slice(0, Math.max(split, 2));
  const builder = createPackBuilder();
  for (const p of merged) {
    for (const oid of indexOids(nodeFs.readFileSync(`${p.base}.idx`))) {
      if (builder.has(oid)) continue;
      const obj = reader.read(oid);
      if (obj.type === "tag") return undefined; // not ours to rewrite; leave the packs as they are
      builder.add(obj.type, obj.content, oid);
    }
  }
  const built = builder.finish();
  const written = writePack(gitdir, built).slice(0, -".pack".length);
  for (const p of merged) {
    if (p.base === written) continue;
    for (const ext of [".idx", ".pack", ".rev", ".mtimes"]) nodeFs.rmSync(`${p.base}${ext}`, { force: true });
  }
  return { packs: merged.length, objects: built.oids.length };
}

/** The object ids a version-2 pack index lists. */
function indexOids(idx: Buffer): string[] {
  if (idx.readUInt32BE(0) !== 0xff744f63 || idx.readUInt32BE(4) !== 2) throw new Error("unsupported pack index version");
  const n = idx.readUInt32BE(8 + 255 * 4);
  const start = 8 + 256 * 4;
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(idx.subarray(start + i * 20, start + i * 20 + 20).toString("hex"));
  return out;
}
