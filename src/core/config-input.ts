/**
 * Helpers for the composition roots' configuration parsers (`parseAgentConfig`, `parseServerConfig`):
 * read raw flag/environment strings into numbers, ports and booleans with defaults, and collect what
 * is wrong as messages that say what to fix instead of throwing. Pure: no env reads here.
 */
import { LogLevel } from "./logger.js";

/** A Kubernetes namespace name (DNS-1123 label). */
export const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** True when `v` is one of the logger's levels (debug, info, warn, error). */
export function isLogLevel(v: string): v is LogLevel {
  return Object.hasOwn(LogLevel, v);
}

export interface ConfigReader {
  /** Problems found so far, in the order the values were read. */
  readonly problems: string[];
  /** `v` as a number; `dflt` when unset or empty; a problem `<what> "<v>" is invalid: <hint>` (and `dflt`) when not finite or `check` fails. */
  number(v: string | undefined, what: string, dflt: number, check: (n: number) => boolean, hint: string): number;
  /** A port number 0-65535 (0 picks a free port). */
  port(v: string | undefined, what: string, dflt: number): number;
  /** true/1/yes or false/0/no (any case); `dflt` when unset or empty. */
  bool(v: string | undefined, what: string, dflt: boolean): boolean;
}

/** A reader whose problems list starts empty; the parser pushes its own problems onto the same list. */
export function createConfigReader(): ConfigReader {
  const problems: string[] = [];
  const number = (v: string | undefined, what: string, dflt: number, check: (n: number) => boolean, hint: string): number => {
    if (v === undefined || v === "") return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || !check(n)) {
      problems.push(`${what} "${v}" is invalid: ${hint}`);
      return dflt;
    }
    return n;
  };
  return {
    problems,
    number,
    port: (v, what, dflt) => number(v, what, dflt, (n) => Number.isInteger(n) && n >= 0 && n <= 65535, "a port number 0-65535"),
    bool: (v, what, dflt) => {
      if (v === undefined || v === "") return dflt;
      if (/^(true|1|yes)$/i.test(v)) return true;
      if (/^(false|0|no)$/i.test(v)) return false;
      problems.push(`${what} "${v}" must be true or false`);
      return dflt;
    },
  };
}

/** The parsers' result: a frozen configuration when there is no problem, otherwise only the problems. */
export function configResult<T extends object>(config: T, problems: string[]): { config?: T; problems: string[] } {
  return problems.length > 0 ? { problems } : { config: Object.freeze(config), problems };
}
