import { availableParallelism } from "node:os"
import { configDefaults, defineConfig } from "vitest/config"

// Two projects, both run by `pnpm test`:
// - unit: the library in one process, tests in worker threads that keep their
//   modules between files (Effect and graded load once per worker, not once per
//   file); what a file changes globally it puts back.
// - system: what needs a process of its own (a pseudo-terminal's native module,
//   child processes killed with -9, browsers, databases, the documentation's
//   commands), each file in a child process.
// `pnpm test:unit` / `pnpm test:system` run one; `pnpm test <path>` one area (test/all.mjs).
//
// A worker blocked by a long synchronous test (a compile through the TypeScript
// API, a property run) cannot answer the main process for a while: vitest 5's
// worker channel has no timeout (vitest 3's 60 s needed a patch).
const workers = Math.max(2, availableParallelism())

export const system = [
  // The CLI's files that start processes or a pseudo-terminal; the others run it in process (unit).
  "packages/cli/test/RedTeam.terminal.test.ts",
  "packages/cli/test/decide.race.test.ts",
  "packages/cli/test/listings.hostile.test.ts",
  "packages/cli/test/mcp.test.ts",
  "packages/cli/test/proposals.test.ts",
  "packages/cli/test/smoke.test.ts",
  "packages/cli/test/terminal.test.ts",
  "packages/sql/test/**/*.test.ts",
  "packages/confirm/test/browser.test.ts",
  "packages/confirm/test/browser.chat.test.ts",
  "packages/confirm/test/browser.timeline.test.ts",
  "packages/confirm/test/hiddenCharacters.test.ts",
  "packages/mcp/test/connect.test.ts",
  "packages/mcp/test/elicit.test.ts",
  "packages/mcp/test/layer.test.ts",
  "packages/mcp/test/serve.test.ts",
  // The demos in processes of their own; the examples' other tests are unit tests.
  "examples/credit-desk/test/story.test.ts",
  "examples/mcp/test/demo.test.ts",
  "examples/quickstart/test/readme.test.ts",
  "examples/support-desk/test/chat.test.ts",
  "examples/support-desk/test/supervised.test.ts",
  "examples/support-desk/test/web.test.ts",
  // The documented commands, each in a shell; the other checks of test/ are unit tests.
  "test/docs.test.ts",
  // The packages packed, installed outside the workspace from their tarballs, and run.
  "test/pack.test.ts"
]

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 60_000,
    maxWorkers: workers,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: [
            "packages/*/test/**/*.test.ts",
            "examples/*/test/**/*.test.ts",
            "test/**/*.test.ts",
            "type-tests/**/*.test.ts"
          ],
          exclude: [...configDefaults.exclude, ...system],
          // A threads worker keeps its modules from one file to the next.
          pool: "threads",
          isolate: false
        }
      },
      {
        extends: true,
        test: {
          name: "system",
          include: system,
          // Picks the browsers once per run; builds the programs tests start as processes.
          globalSetup: ["packages/confirm/test/chromium.ts", "test/built.ts"],
          pool: "forks"
        }
      }
    ]
  }
})
