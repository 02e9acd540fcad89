export * from "./diagnostics.js";
export * from "./errors.js";
export * from "./logger.js";
export * from "./redact.js";
export * from "./canonical.js";
export * from "./config-input.js";
export * from "./backoff.js";
export * from "./labels.js";
