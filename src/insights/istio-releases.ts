/**
 * End of life of Istio minor versions, from istio.io's "Supported Releases" page
 * (https://istio.io/latest/docs/releases/supported-releases/#support-status-of-istio-releases, data
 * file data/compatibility/supportStatus.yml of github.com/istio/istio.io), read 2026-11-29.
 *
 * Istio's policy (same page): a minor release is supported until six weeks after the N+2 minor
 * release. Where the page gives an expected month instead of a date ("~Dec 2025 (Expected)"), the
 * entry is marked `expected` and uses the first day of that month, so the warning is never late.
 * A version absent from the table is not judged (newer than the table, or unparsable): update the
 * table when Istio publishes a date.
 */

export interface IstioRelease {
  /** `1.24` */
  readonly minor: string;
  /** End of life, `YYYY-MM-DD`. */
  readonly endOfLife: string;
  /** True when istio.io gives an expected month, not a date. */
  readonly expected?: true;
}

export const ISTIO_RELEASES_SOURCE = "https://istio.io/latest/docs/releases/supported-releases/";

export const ISTIO_RELEASES: readonly IstioRelease[] = [
  { minor: "1.13", endOfLife: "2022-10-12" },
  { minor: "1.14", endOfLife: "2022-12-27" },
  { minor: "1.15", endOfLife: "2023-04-04" },
  { minor: "1.16", endOfLife: "2023-07-25" },
  { minor: "1.17", endOfLife: "2023-10-27" },
  { minor: "1.18", endOfLife: "2024-01-04" },
  { minor: "1.19", endOfLife: "2024-04-24" },
  { minor: "1.20", endOfLife: "2024-06-25" },
  { minor: "1.21", endOfLife: "2024-09-01", expected: true },
  { minor: "1.22", endOfLife: "2025-01-01", expected: true },
  { minor: "1.23", endOfLife: "2025-04-16" },
  { minor: "1.24", endOfLife: "2025-06-24" },
  { minor: "1.25", endOfLife: "2025-12-01", expected: true },
  { minor: "1.26", endOfLife: "2026-01-01", expected: true },
];

/** `1.24.3`, `1.24`, `1.24.0-distroless`, `1.24.3-solo` → `1.24`; undefined when not a version. */
export function istioMinor(version: string): string | undefined {
  const m = /^v?(\d+)\.(\d+)(?:[.-]|$)/.exec(version.trim());
  return m ? `${m[1]!}.${m[2]!}` : undefined;
}

/** The release entry of a version, or undefined (not in the table). */
export function istioRelease(version: string): IstioRelease | undefined {
  const minor = istioMinor(version);
  return minor === undefined ? undefined : ISTIO_RELEASES.find((r) => r.minor === minor);
}
