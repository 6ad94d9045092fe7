import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8")

describe("README", () => {
  it("shows examples/quickstart/src/main.ts as it is, so the example in the README compiles and runs", () => {
    const readme = read("../../../README.md")
    const marker = readme.indexOf("<!-- quickstart")
    expect(marker).toBeGreaterThan(-1)
    const start = readme.indexOf("```ts\n", marker) + "```ts\n".length
    const end = readme.indexOf("```", start)
    expect(readme.slice(start, end)).toBe(read("../src/main.ts"))
  })
})

describe("quickstart", () => {
  it("runs: the agent answers and the confirmed reply is sent", async () => {
    const { execFileSync } = await import("node:child_process")
    const tsx = new URL("../../../node_modules/.bin/tsx", import.meta.url).pathname
    const output = execFileSync(tsx, [new URL("../src/main.ts", import.meta.url).pathname], { encoding: "utf8" })
    expect(output).toContain("See 'Changing the VAT number'. { sent: true }")
    expect(output).toContain("sending Billing > Settings > Tax ID.")
  })
})
