/**
 * The mass-deletion guard's rule, one place for the agent that enforces it and the PR diff that warns
 * of it: an output may delete at most `maxFraction` of the objects the agent owns, and always
 * `alwaysAllowed` objects, unless its commit consents (`Gitmesh-Allow-Deletion`).
 */
export const MASS_DELETION_DEFAULTS = { maxFraction: 0.5, alwaysAllowed: 2 } as const;

/** How many of `owned` objects one output may delete: floor(maxFraction × owned), at least alwaysAllowed. */
export function massDeletionLimit(owned: number, maxFraction: number = MASS_DELETION_DEFAULTS.maxFraction, alwaysAllowed: number = MASS_DELETION_DEFAULTS.alwaysAllowed): number {
  return Math.max(alwaysAllowed, Math.floor(maxFraction * owned));
}
