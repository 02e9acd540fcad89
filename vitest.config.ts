import { configDefaults, defineConfig } from "vitest/config";

/**
 * Two projects with two timeouts. Unit tests (pure translation, configuration, core, discovery, the
 * model) run in milliseconds; a 60 s timeout let one of them grow 10× or 100× slower unnoticed. They get
 * 20 s: ten times the slowest of them on a loaded 2-core CI machine next to the CPU-hog tests. The
 * integration tests spawn real processes (redis-server, git http-backend, kube-apiserver, gRPC servers,
 * Chromium) and keep 60 s. A unit test that spawns a process belongs to the integration project: the
 * files listed in SPAWNING are excluded from the unit set.
 */
const UNIT_DIRS = ["translate", "config", "core", "discovery", "model"];
const UNIT = [`test/{${UNIT_DIRS.join(",")}}/**/*.test.ts`];
const SPAWNING = ["test/discovery/examples.test.ts", "test/model/gen-types.test.ts", "test/model/standalone.test.ts"];

export default defineConfig({
  test: {
    pool: "forks",
    // Builds the web UI once, when stale, for the tests that serve it.
    globalSetup: ["test/global-setup.ts"],
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: { name: "unit", include: UNIT, exclude: [...configDefaults.exclude, ...SPAWNING], testTimeout: 20_000, hookTimeout: 20_000 },
      },
      {
        extends: true,
        test: { name: "integration", include: [`test/!(${UNIT_DIRS.join("|")})/**/*.test.ts`, ...SPAWNING], testTimeout: 60_000, hookTimeout: 60_000 },
      },
    ],
  },
});
