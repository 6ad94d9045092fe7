// The shape of the code, checked: no module imports another at run time in a
// cycle (type-only imports are free to point anywhere), and no package, nor its
// tests, reaches into another package's internal/ modules. Tests may share a
// fixture by its path (packages/core/test/supportDesk.ts); it imports only
// public modules.
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

const sources = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sources(full)
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [full] : []
  })

const packages = fs.readdirSync(path.join(root, "packages")).filter((name) =>
  fs.existsSync(path.join(root, "packages", name, "src"))
)
const files = packages.flatMap((name) => sources(path.join(root, "packages", name, "src")))
const testFiles = packages.flatMap((name) => {
  const dir = path.join(root, "packages", name, "test")
  return fs.existsSync(dir) ? sources(dir) : []
})

interface Import {
  readonly from: string
  readonly specifier: string
  /** Whether the import is erased at run time. */
  readonly typeOnly: boolean
}

const importsOf = (file: string): Array<Import> => {
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  const found: Array<Import> = []
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const clause = statement.importClause
      const named = clause?.namedBindings
      const everyNameIsType = named !== undefined && ts.isNamedImports(named) && clause?.name === undefined &&
        named.elements.length > 0 && named.elements.every((element) => element.isTypeOnly)
      found.push({
        from: file,
        specifier: statement.moduleSpecifier.text,
        typeOnly: clause?.isTypeOnly === true || everyNameIsType
      })
    }
    if (
      ts.isExportDeclaration(statement) && statement.moduleSpecifier !== undefined &&
      ts.isStringLiteral(statement.moduleSpecifier)
    ) {
      found.push({ from: file, specifier: statement.moduleSpecifier.text, typeOnly: statement.isTypeOnly })
    }
  }
  return found
}

const imports = files.flatMap(importsOf)
const testImports = testFiles.flatMap(importsOf)

const resolveRelative = (from: string, specifier: string): string | undefined => {
  if (!specifier.startsWith(".")) return undefined
  const target = path.resolve(path.dirname(from), specifier).replace(/\.js$/, ".ts")
  return fs.existsSync(target) ? target : undefined
}

const relative = (file: string) => path.relative(root, file)

const runtimeEdges = (): Map<string, Array<string>> => {
  const edges = new Map<string, Array<string>>()
  for (const { from, specifier, typeOnly } of imports) {
    if (typeOnly) continue
    const target = resolveRelative(from, specifier)
    if (target !== undefined) edges.set(from, [...(edges.get(from) ?? []), target])
  }
  return edges
}

// Every cycle in a graph of files, each once, as the files around it.
const cycles = (
  edges: ReadonlyMap<string, ReadonlyArray<string>>,
  nodes: ReadonlyArray<string>
): Array<Array<string>> => {
  const found: Array<Array<string>> = []
  const seen = new Set<string>()
  const state = new Map<string, "open" | "done">()
  const stack: Array<string> = []
  const visit = (file: string) => {
    state.set(file, "open")
    stack.push(file)
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === "open") {
        const cycle = stack.slice(stack.indexOf(next)).map(relative)
        const key = [...cycle].sort().join("|")
        if (!seen.has(key)) {
          seen.add(key)
          found.push(cycle)
        }
      } else if (state.get(next) === undefined) visit(next)
    }
    stack.pop()
    state.set(file, "done")
  }
  for (const file of nodes) if (state.get(file) === undefined) visit(file)
  return found
}

describe("imports", () => {
  it("reads the packages' sources", () => {
    expect(files.length).toBeGreaterThan(30)
    expect(imports.some((i) => i.typeOnly)).toBe(true)
  })

  it("no module imports another at run time in a cycle", () => {
    expect(cycles(runtimeEdges(), files).map((cycle) => cycle.join(" -> "))).toEqual([])
  })

  it("no package, nor its tests, reaches into another package's internal/ modules", () => {
    expect(testFiles.length).toBeGreaterThan(20)
    const reaching = [...imports, ...testImports].filter(({ from, specifier }) => {
      if (/^@graded\/[^/]+\/internal\//.test(specifier)) return true
      const target = resolveRelative(from, specifier)
      if (target === undefined) return false
      const own = relative(from).split(path.sep)[1]
      const theirs = relative(target).split(path.sep)
      return theirs[1] !== own && theirs.includes("internal")
    })
    expect(reaching.map(({ from, specifier }) => `${relative(from)} imports ${specifier}`)).toEqual([])
  })

  it("finds a cycle when there is one (the check itself)", () => {
    const [a, b, c] = ["A.ts", "B.ts", "C.ts"].map((name) => path.join(root, name))
    expect(cycles(new Map([[a!, [b!]], [b!, [c!]], [c!, [a!]]]), [a!, b!, c!])).toEqual([["A.ts", "B.ts", "C.ts"]])
    expect(cycles(new Map([[a!, [b!]], [b!, [c!]]]), [a!, b!, c!])).toEqual([])
  })
})
