import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/*/test/**/*.test.ts", "type-tests/**/*.test.ts"],
    testTimeout: 60_000
  }
})
