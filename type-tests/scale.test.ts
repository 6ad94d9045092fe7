// 500 tools of mixed grades, in one toolkit, wired into Agent.run (read-only)
// and into a HumanConfirm program, must compile: every check the compiler
// runs stays within its limits (a check that grows with the square of the
// toolkit used to exceed them). Instantiations are counted, not timed.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { describe, expect, it } from "vitest"
import { gradedProgram } from "../bench/program.js"

const here = path.dirname(fileURLToPath(import.meta.url))

describe("a large toolkit", () => {
  it("500 tools compile, with Agent.run over the read ones and HumanConfirm over the rest", () => {
    const dir = mkdtempSync(path.join(here, ".scale-"))
    const file = path.join(dir, "index.ts")
    // The benchmark's program, plus `runnable`: the confirmed program must need nothing more.
    writeFileSync(file, gradedProgram(500, { runnable: true }))
    const config = ts.getParsedCommandLineOfConfigFile(path.join(here, "tsconfig.json"), {}, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: () => undefined
    })!
    const compiled = ts.createProgram([file], config.options)
    const errors = ts.getPreEmitDiagnostics(compiled, compiled.getSourceFile(file))
    expect(errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))).toEqual([])
    const instantiations = (compiled.getTypeChecker() as unknown as { getInstantiationCount(): number })
      .getInstantiationCount()
    console.log(`500 tools: ${instantiations} instantiations`)
    rmSync(dir, { recursive: true, force: true })
  }, 120_000)
})
