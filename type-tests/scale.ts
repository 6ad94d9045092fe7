// 500 tools of mixed grades, in one toolkit, wired into Agent.run (read-only)
// and into a HumanConfirm program, must compile: every check the compiler
// runs stays within its limits (a check that grows with the square of the
// toolkit used to exceed them). Instantiations are counted, not timed.
// A case of type-tests/program.ts's program, registered by messages.test.ts.
import * as path from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"
import { gradedProgram } from "../bench/program.js"
import { type Compiled, here } from "./program.js"

const name = "scale.case.ts"

/** The case's file: the benchmark's program, plus `runnable` (the confirmed program must need nothing more). */
export const scaleCase = { [name]: gradedProgram(500, { runnable: true }) }

/** Checks the case now (first, so its instantiations are its own) and registers its test. */
export const describeScale = ({ instantiations, program }: Compiled) => {
  const file = program.getSourceFile(path.join(here, name))!
  const before = instantiations()
  const errors = ts.getPreEmitDiagnostics(program, file)
  const made = instantiations() - before

  describe("a large toolkit", () => {
    it("500 tools compile, with Agent.run over the read ones and HumanConfirm over the rest", () => {
      expect(errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))).toEqual([])
      console.log(`500 tools: ${made} instantiations`)
    })
  })
}
