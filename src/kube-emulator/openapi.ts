/**
 * A minimal OpenAPI v2 document in the protobuf encoding kubectl asks for (gnostic `openapi_v2.Document`):
 * `swagger: "2.0"` and an `info` block, no definitions. kubectl's client-side validation skips kinds it
 * has no schema for, so `kubectl apply` (client- or server-side) works without `--validate=false`;
 * nothing is validated against schemas (see README).
 */

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return out;
}

/** A length-delimited protobuf field (wire type 2). */
function field(num: number, payload: Uint8Array | string): number[] {
  const bytes = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  return [...varint((num << 3) | 2), ...varint(bytes.length), ...bytes];
}

let cached: Buffer | undefined;

export function openApiV2Protobuf(): Buffer {
  if (cached === undefined) {
    const info = Uint8Array.from([...field(1, "Kubernetes (gitmesh kube-emulator)"), ...field(2, "v1.31.0")]);
    cached = Buffer.from([...field(1, "2.0"), ...field(2, info)]);
  }
  return cached;
}
