/**
 * How many V8 hidden classes ("maps") a list of objects has, for tests that pin a layout as one class
 * (objects the translators read by the thousand: a class per object makes every read of them
 * megamorphic). Uses V8's natives syntax (%HaveSameMap), enabled for the importing test's worker.
 */
import { setFlagsFromString } from "node:v8";

setFlagsFromString("--allow-natives-syntax");
// Natives syntax is not TypeScript: the check is compiled at run time, after the flag is set.
// eslint-disable-next-line @typescript-eslint/no-implied-eval
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: object, b: object) => boolean;

export function hiddenClasses(objects: readonly object[]): number {
  const seen: object[] = [];
  for (const o of objects) if (!seen.some((s) => haveSameMap(s, o))) seen.push(o);
  return seen.length;
}
