/** Secrets never reach logs, errors or the audit branch. These helpers are the one place that knows how. */

// The user name may be empty: `redis://:password@host` is the usual form of a Redis URL.
const URL_WITH_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)([^/\s:@]*)(?::[^/\s@]*)?@/gi;
const SECRET_KEY = /(token|password|passwd|passphrase|secret|authorization|cookie|private[-_]?key|credential|signature)/i;
// A query parameter of a URL whose name looks secret: `?sentinelPassword=…`, `&access_token=…`.
const SECRET_QUERY_PARAM = /([?&])([^=&#\s]+)=([^&#\s]*)/g;

/**
 * Removes `user:password@` from every URL in a string (`https://tok@host/x` → `https://host/x`) and
 * masks the values of secret-looking query parameters (`?sentinelPassword=x` → `?sentinelPassword=[redacted]`).
 */
export function stripCredentials(text: string): string {
  return text
    .replace(URL_WITH_CREDENTIALS, "$1")
    .replace(SECRET_QUERY_PARAM, (all: string, sep: string, name: string, value: string) => (value !== "" && isSecretKey(name) ? `${sep}${name}=[redacted]` : all));
}

/** True for field names whose values must never be logged. */
export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/** Deep copy of a log payload with secret-looking fields masked and URL credentials removed. */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 8) return "[…]";
  if (typeof value === "string") return stripCredentials(value);
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value instanceof Error) return stripCredentials(value.message);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = isSecretKey(k) && v !== undefined && v !== null && v !== "" ? "[redacted]" : redact(v, depth + 1);
    }
    return out;
  }
  return value;
}
