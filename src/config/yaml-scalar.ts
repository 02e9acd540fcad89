/**
 * The value of a plain (unquoted) scalar under the YAML 1.2 core schema, resolved by the `yaml`
 * package's own scalar tags in the composer's order (findScalarTagByTest), so that both fast paths
 * (yaml-scan.ts, yaml-fast.ts) give exactly the composer's value: `null`/`~`/empty → null,
 * `true`/`False`/`TRUE`… → booleans, `0o17`, `0x1F`, `010` → integers, `1e3`, `.5`, `-.inf`,
 * `.nan` → floats, anything else (`yes`, `on`, `1_000`) → the string itself.
 */
import { Document, isScalar } from "yaml";

interface ScalarTag {
  readonly test: RegExp;
  resolve(str: string, onError: (message: string) => void, options: unknown): unknown;
}

const coreDocument = new Document();
const scalarTags = coreDocument.schema.tags.filter((t) => t.default === true && t.test !== undefined && !t.collection) as unknown as readonly ScalarTag[];
const tagOptions = coreDocument.options;

/**
 * Characters a core tag's test can match first: `~`, `n N t T f F` (null, booleans), digits,
 * `+ - .` (numbers, .inf, .nan). Every other plain scalar is a string without trying the tags;
 * test/config/yaml-fast.test.ts checks this against the tags themselves.
 */
const MAY_BE_TAGGED = new Uint8Array(128);
for (const ch of "~nNtTfF0123456789+-.") MAY_BE_TAGGED[ch.charCodeAt(0)] = 1;

/**
 * Of those, the letters start only the core schema's words — null, true, false in their three
 * spellings — so a scalar that starts with one and is not 4 or 5 characters long is a string
 * (discovery's keys `name`, `namespace`, `targetPort`, `network` would otherwise try every tag).
 * test/config/yaml-fast.test.ts checks this against the tags too.
 */
const WORD_START = new Uint8Array(128);
for (const ch of "nNtTfF") WORD_START[ch.charCodeAt(0)] = 1;

const DIGIT_0 = 48;
const DIGIT_9 = 57;

function digitsOnly(source: string): boolean {
  for (let i = 1; i < source.length; i++) {
    const c = source.charCodeAt(i);
    if (c < DIGIT_0 || c > DIGIT_9) return false;
  }
  return true;
}

/**
 * The composer's value of plain scalar `source` (trimmed, one line), or undefined when the tag
 * reports a problem or resolves to something the fast paths do not build (an object, a bigint).
 */
export function plainScalarValue(source: string): string | number | boolean | null | undefined {
  if (source.length > 0) {
    const c = source.charCodeAt(0);
    if (c >= 128 || MAY_BE_TAGGED[c] === 0) return source;
    if (WORD_START[c] === 1 && (source.length < 4 || source.length > 5)) return source;
    // Decimal digits alone (ports, counts): the first tag to match them is the core int, which resolves
    // them with parseInt(…, 10) (the document's intAsBigInt is off), as here.
    if (c >= DIGIT_0 && c <= DIGIT_9 && digitsOnly(source)) return Number.parseInt(source, 10);
  }
  for (const tag of scalarTags) {
    if (!tag.test.test(source)) continue;
    const problem = { reported: false };
    const res = tag.resolve(source, () => (problem.reported = true), tagOptions);
    if (problem.reported) return undefined;
    // Null, booleans and floats come back as a Scalar node (to keep their source form); the composer takes its value.
    const v = isScalar(res) ? res.value : res;
    if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
    return undefined;
  }
  return source;
}

/** The core tags' tests, for the test that checks MAY_BE_TAGGED against them. */
export const coreScalarTests: readonly RegExp[] = scalarTags.map((t) => t.test);
