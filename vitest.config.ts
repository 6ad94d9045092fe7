import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

// Tuned so that a green suite exits 0 on a busy 2-core machine, and a red one still fails:
// - forks: each test file in its own child process (the terminal tests load a native module);
//   one worker fewer than the cores, so the main process that collects results keeps a core.
// - A worker blocked by a long synchronous test (a compile through the TypeScript API, a
//   property run) cannot read the main process's answer to its own progress report, and
//   birpc's fixed 60 s timeout then fails the run with `Timeout calling "onTaskUpdate"`
//   although every test passed. patches/vitest@3.2.7.patch makes that timeout
//   VITEST_WORKER_RPC_TIMEOUT; test results still travel the same channel, so nothing that
//   fails is hidden, and a worker whose main process dies is ended with it all the same.
// - Hooks (a browser's launch, a server's start) and closing the workers get the time a test gets.
export default defineConfig({
  test: {
    include: [
      "packages/*/test/**/*.test.ts",
      "examples/*/test/**/*.test.ts",
      "type-tests/**/*.test.ts",
      "test/**/*.test.ts"
    ],
    // Picks the browsers for the browser tests once per run, before any worker starts.
    globalSetup: ["packages/confirm/test/chromium.ts"],
    pool: "forks",
    maxWorkers: Math.max(1, availableParallelism() - 1),
    minWorkers: 1,
    env: { VITEST_WORKER_RPC_TIMEOUT: String(15 * 60_000) },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 60_000
  }
})
