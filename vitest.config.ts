import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Integration tests spawn real processes (redis-server, git http-backend, gRPC servers); give them room.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Builds the web UI once, when stale, for the tests that serve it.
    globalSetup: ["test/global-setup.ts"],
    reporters: process.env.CI ? ["default"] : ["default"],
  },
});
