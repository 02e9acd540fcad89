/**
 * One named logger per module (CONVENTIONS §10). Structured JSON for machines, a compact human
 * format for terminals. Loggers are created by a process's composition root and passed down; no
 * module reads the environment to configure its own. Every payload goes through `redact`.
 */
import { redact, stripCredentials } from "./redact.js";

export const LogLevel = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof LogLevel;
export type LogFormat = "json" | "human";
export type LogFields = Readonly<Record<string, unknown>>;

export interface LogRecord {
  readonly time: string;
  readonly level: LogLevel;
  readonly logger: string;
  readonly msg: string;
  readonly fields: LogFields;
}

export interface Logger {
  readonly name: string;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger for a sub-component: `relay` → `relay.registration`. */
  child(name: string, fields?: LogFields): Logger;
}

export interface LoggerOptions {
  /** Name of the root logger (default `gitmesh`). */
  readonly name?: string;
  /** Minimum level written (default `info`). */
  readonly level?: LogLevel;
  /** `json` (default) or `human`. */
  readonly format?: LogFormat;
  /** Where lines go (default: stderr). */
  readonly write?: (line: string) => void;
  /** Clock for timestamps (default: `Date.now`). */
  readonly now?: () => number;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const min = LogLevel[options.level ?? "info"];
  const format = options.format ?? "json";
  const write = options.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const now = options.now ?? Date.now;
  return makeLogger(options.name ?? "gitmesh", {}, (rec) => {
    if (LogLevel[rec.level] < min) return;
    write(format === "json" ? toJson(rec) : toHuman(rec));
  }, now);
}

/** A logger that keeps records in memory, for tests that assert what was (not) logged. */
export function createMemoryLogger(name = "test"): { logger: Logger; records: LogRecord[]; text: () => string } {
  const records: LogRecord[] = [];
  const logger = makeLogger(name, {}, (rec) => records.push(rec), Date.now);
  return { logger, records, text: () => records.map(toJson).join("\n") };
}

/** A logger that drops everything. */
export const silentLogger: Logger = makeLogger("silent", {}, () => undefined, Date.now);

function makeLogger(name: string, base: LogFields, emit: (rec: LogRecord) => void, now: () => number): Logger {
  const log = (level: LogLevel) => (msg: string, fields?: LogFields) => {
    emit({
      time: new Date(now()).toISOString(),
      level,
      logger: name,
      msg: stripCredentials(msg),
      fields: redact({ ...base, ...fields }) as LogFields,
    });
  };
  return {
    name,
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    child: (sub, fields) => makeLogger(`${name}.${sub}`, { ...base, ...fields }, emit, now),
  };
}

function toJson(rec: LogRecord): string {
  return JSON.stringify({ time: rec.time, level: rec.level, logger: rec.logger, msg: rec.msg, ...rec.fields });
}

function toHuman(rec: LogRecord): string {
  const fields = Object.entries(rec.fields)
    .map(([k, v]) => `${k}=${typeof v === "string" ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`)
    .join(" ");
  return `${rec.time.slice(11, 23)} ${rec.level.toUpperCase().padEnd(5)} ${rec.logger}: ${rec.msg}${fields ? "  " + fields : ""}`;
}
