import { readFileSync } from "node:fs"
import { execFileSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"

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
  it("runs: the agent answers and the confirmed reply is sent", () => {
    // Its own process, built: the README's own commands run in test/docs.test.ts.
    const output = execFileSync(process.execPath, [built("examples/quickstart/src/main.ts")], { encoding: "utf8" })
    expect(output).toContain("See 'Changing the VAT number'. { sent: true }")
    expect(output).toContain("sending Billing > Settings > Tax ID.")
  })
})
