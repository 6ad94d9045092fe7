// tsd's expectError proves that some error happened. This file proves it is
// the right one: every expectError in type-tests/ carries a `// error: <text>`
// comment just above it, and the compiler's diagnostic inside that call must
// contain the text; a pin that starts with `^` must be in the diagnostic's
// first line, so graded's message leads rather than sits under TypeScript's
// own ("No overload matches this call"). It also proves that nothing outside
// expectError fails.
import * as path from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"
import { compile, here } from "./program.js"
import { describeScale, scaleCase } from "./scale.js"

interface Case {
  readonly line: number
  readonly pin: string | undefined
  readonly start: number
  readonly end: number
}

const casesOf = (file: ts.SourceFile): Array<Case> => {
  const cases: Array<Case> = []
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "expectError") {
      const statement = node.parent
      const comments = ts.getLeadingCommentRanges(file.text, statement.getFullStart()) ?? []
      const last = comments.at(-1)
      const text = last === undefined ? "" : file.text.slice(last.pos, last.end)
      const match = /^\/\/ error: (.+)$/.exec(text)
      cases.push({
        line: file.getLineAndCharacterOfPosition(node.getStart()).line + 1,
        pin: match?.[1]?.trim(),
        start: node.getStart(),
        end: node.getEnd()
      })
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return cases
}

// One program for these and the scale case (type-tests/program.ts).
const compiled = compile(scaleCase)
const { diagnosticsOf, program } = compiled
describeScale(compiled)
const files = program.getSourceFiles().filter((file) => file.fileName.endsWith(".test-d.ts"))

describe("type-test messages", () => {
  it("finds the type tests", () => {
    expect(files.length).toBeGreaterThanOrEqual(4)
  })

  for (const file of files) {
    const name = path.relative(here, file.fileName)
    const diagnostics = diagnosticsOf(file)
    const cases = casesOf(file)

    describe(name, () => {
      it("has rejected cases, each with its message pinned", () => {
        expect(cases.length).toBeGreaterThan(0)
        expect(cases.filter((c) => c.pin === undefined).map((c) => `line ${c.line}`)).toEqual([])
      })

      it("compiles everywhere outside expectError", () => {
        const stray = diagnostics
          .filter((d) => d.start === undefined || !cases.some((c) => d.start! >= c.start && d.start! < c.end))
          .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))
        expect(stray).toEqual([])
      })

      for (const c of cases) {
        it(`line ${c.line}: ${c.pin ?? "(no pin)"}`, () => {
          const inside = diagnostics
            .filter((d) => d.start !== undefined && d.start >= c.start && d.start < c.end)
            .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))
          expect(inside.length, "the rejected case compiled").toBeGreaterThan(0)
          const leads = c.pin?.startsWith("^") === true
          const pin = leads ? c.pin!.slice(1) : c.pin ?? "\u0000"
          const found = inside.some((message) => (leads ? message.split("\n")[0]! : message).includes(pin))
          expect(found, inside.join("\n---\n")).toBe(true)
        })
      }
    })
  }
})
