// Every example the documentation shows compiles. The test extracts each
// `@example` of the public modules' JSDoc (packages/*/src, not internal/) and
// each ```ts block of README.md and docs/*.md, writes each as its own module
// into a folder of .examples/ (gitignored), and type-checks them all in one
// program with tsconfig.base.json's settings. A failing block names its
// source file and the line of each error there.
//
// The folder has a node_modules of its own that links every workspace package
// (`@graded/core` is packages/core) and every package they depend on, so an
// example imports exactly what a user of the packages would. Each run gets
// its own folder, so two runs in one checkout do not trip over each other.
//
// A block that is deliberately a fragment (a signature, an elided argument)
// says so, and why, just before it: `<!-- docs:check skip: reason -->` on the
// line before a fenced block, or `// docs:check skip: reason` as the first line
// of an @example. It shows as skipped, with its reason.
//
// `pnpm docs:check` runs this file alone.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { afterAll, describe, expect, it } from "vitest"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

interface Block {
  /** The file it is written in, relative to the root. */
  readonly file: string
  /** The line of its first line of code in that file (1-based). */
  readonly line: number
  readonly code: string
  /** Why it is not compiled, when it is marked; "" when marked with no reason. */
  readonly skip: string | undefined
}

const skipMarker = /^docs:check skip(?::\s*(.*?))?\s*$/

// ---- extraction -------------------------------------------------------------

/** The @example blocks of one TypeScript file's JSDoc comments. */
const examplesOf = (file: string, text: string): ReadonlyArray<Block> => {
  const lines = text.split("\n")
  const found: Array<Block> = []
  let inComment = false
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? ""
    if (!inComment) {
      if (/^\s*\/\*\*/.test(line) && !line.includes("*/")) inComment = true
      continue
    }
    if (line.includes("*/")) {
      inComment = false
      continue
    }
    if (!/^\s*\*\s*@example\b/.test(line)) continue
    const body: Array<string> = []
    const start = i + 1
    for (i++; i < lines.length; i++) {
      const raw = lines[i] ?? ""
      if (raw.includes("*/")) break
      const content = raw.replace(/^\s*\* ?/, "")
      if (/^@\w/.test(content)) break
      body.push(content)
    }
    i-- // let the outer loop see the tag or the comment's end
    while (body.length > 0 && (body.at(-1) ?? "").trim() === "") body.pop()
    const first = /^\/\/\s*(.*)$/.exec((body[0] ?? "").trim())?.[1]
    const marker = first === undefined ? null : skipMarker.exec(first)
    found.push({ file, line: start + 1, code: body.join("\n"), skip: marker ? (marker[1] ?? "") : undefined })
  }
  return found
}

/** The ```ts blocks of one Markdown file. */
const fencesOf = (file: string, text: string): ReadonlyArray<Block> => {
  const lines = text.split("\n")
  const found: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? ""
    if (!/^```/.test(line)) continue
    const isTs = /^```(ts|typescript)\s*$/.test(line)
    let before = i - 1
    while (before >= 0 && (lines[before] ?? "").trim() === "") before--
    const comment = /^<!--\s*(.*?)\s*-->$/.exec((lines[before] ?? "").trim())?.[1]
    const marker = comment === undefined ? null : skipMarker.exec(comment)
    const start = i + 1
    const body: Array<string> = []
    for (i++; i < lines.length && !(lines[i] ?? "").startsWith("```"); i++) body.push(lines[i] ?? "")
    if (isTs) found.push({ file, line: start + 1, code: body.join("\n"), skip: marker ? (marker[1] ?? "") : undefined })
  }
  return found
}

const publicModules = (dir: string): ReadonlyArray<string> =>
  readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? entry.name === "internal" ? [] : publicModules(`${dir}/${entry.name}`)
      : entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [`${dir}/${entry.name}`] : []
  )

const packages = readdirSync(path.join(root, "packages")).filter((name) =>
  existsSync(path.join(root, "packages", name, "package.json"))
).sort()
const modules = packages.flatMap((name) =>
  existsSync(path.join(root, "packages", name, "src")) ? publicModules(`packages/${name}/src`) : []
)
const documents = [
  "README.md",
  ...readdirSync(path.join(root, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`)
]

const blocks: ReadonlyArray<Block> = [
  ...modules.flatMap((file) => examplesOf(file, readFileSync(path.join(root, file), "utf8"))),
  ...documents.flatMap((file) => fencesOf(file, readFileSync(path.join(root, file), "utf8")))
]
const checked = blocks.filter((block) => block.skip === undefined)

// ---- the folder the examples are written to ---------------------------------

const work = path.join(root, ".examples", `run-${process.pid}-${Date.now().toString(36)}`)

const link = (name: string, target: string) => {
  const at = path.join(work, "node_modules", name)
  if (existsSync(at)) return
  mkdirSync(path.dirname(at), { recursive: true })
  symlinkSync(target, at, "dir")
}

/** Links each workspace package under its name, and each of their dependencies as the package itself resolves it. */
const linkWorkspace = () => {
  const manifests = packages.map((name) => {
    const dir = path.join(root, "packages", name)
    return {
      dir,
      manifest: JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as Record<string, unknown>
    }
  })
  for (const { dir, manifest } of manifests) link(manifest["name"] as string, dir)
  for (const { dir, manifest } of manifests) {
    for (const field of ["dependencies", "peerDependencies", "devDependencies"]) {
      for (const dependency of Object.keys((manifest[field] ?? {}) as Record<string, string>)) {
        const installed = path.join(dir, "node_modules", dependency)
        if (!dependency.startsWith("@graded/") && existsSync(installed)) link(dependency, realpathSync(installed))
      }
    }
  }
}

const fileFor = (block: Block) => path.join(work, `${block.file.replace(/[^A-Za-z0-9]+/g, "_")}_L${block.line}.ts`)

const compile = () => {
  rmSync(work, { recursive: true, force: true })
  mkdirSync(work, { recursive: true })
  linkWorkspace()
  for (const block of checked) writeFileSync(fileFor(block), `${block.code}\n`)
  const config = ts.readConfigFile(path.join(root, "tsconfig.base.json"), ts.sys.readFile)
  if (config.error !== undefined) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, "\n"))
  const parsed = ts.parseJsonConfigFileContent(
    config.config,
    ts.sys,
    root,
    { noEmit: true },
    path.join(root, "tsconfig.base.json")
  )
  const program = ts.createProgram(checked.map(fileFor), parsed.options)
  const global = program.getOptionsDiagnostics().concat(program.getGlobalDiagnostics())
  return { program, global }
}

/** One line per diagnostic, at its place in the documentation: `README.md:52: message`. */
const report = (block: Block, diagnostics: ReadonlyArray<ts.Diagnostic>) =>
  diagnostics.map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")
    if (diagnostic.file === undefined || diagnostic.start === undefined) {
      return `${block.file}:${block.line}: ${message}`
    }
    const at = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start)
    return `${block.file}:${block.line + at.line}: TS${diagnostic.code}: ${message}`
  })

const { program, global } = compile()

afterAll(() => {
  rmSync(work, { recursive: true, force: true })
  // .examples/ itself goes once no other run is using it.
  try {
    if (readdirSync(path.join(root, ".examples")).length === 0) {
      rmSync(path.join(root, ".examples"), { recursive: true, force: true })
    }
  } catch {
    // another run removed it first
  }
})

describe("the documented examples", () => {
  it("are found: the modules' @example blocks and README.md's code", () => {
    expect(blocks.some((block) => block.file.startsWith("packages/core/src/"))).toBe(true)
    expect(blocks.some((block) => block.file === "README.md")).toBe(true)
  })

  it("each skipped block says why", () => {
    expect(blocks.filter((block) => block.skip === "").map((block) => `${block.file}:${block.line}`)).toEqual([])
  })

  it("compile with tsconfig.base.json's options", () => {
    expect(report({ file: "tsconfig.base.json", line: 1, code: "", skip: undefined }, global)).toEqual([])
  })
})

for (const block of blocks) {
  const name = `${block.file}:${block.line}`
  if (block.skip !== undefined) {
    it.skip(`${name} (not checked: ${block.skip || "no reason given"})`, () => {})
    continue
  }
  it(`${name} compiles`, () => {
    const file = program.getSourceFile(fileFor(block))
    if (file === undefined) expect.fail(`${name} was not compiled`)
    const diagnostics = [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]
    expect(report(block, diagnostics), `${name}\n${block.code}`).toEqual([])
  })
}
