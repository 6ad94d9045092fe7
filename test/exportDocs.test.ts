// Every public export says what it is for. The test walks, with the compiler,
// every export reachable from each package's src/index.ts (an `export * as X`
// namespace makes every export of X public, and so do the exported members of
// an exported `declare namespace`), and fails naming each one, as
// `package/Module.name`, whose JSDoc has no prose: only tags such as @since and
// @category, or no comment at all.
//
// "Has a sentence": the text of the JSDoc before its first tag holds at least
// three words. Overloads and merged declarations (an interface and a const of
// one name) are one export; one of them carrying a sentence is enough. A name
// re-exported from an internal module is documented where it is exported
// (`/** ... */ export { X } from "./internal/x.js"`) or where it is declared.
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

const options = (): ts.CompilerOptions => {
  const config = ts.readConfigFile(path.join(root, "tsconfig.base.json"), ts.sys.readFile)
  if (config.error !== undefined) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, "\n"))
  return ts.parseJsonConfigFileContent(config.config, ts.sys, root, { noEmit: true }).options
}

/** Whether a JSDoc description is prose: at least three words. */
const isSentence = (text: string): boolean =>
  (text.replace(/\{@\w+\s+([^}|]*)(?:\|[^}]*)?\}/g, "$1").match(/[A-Za-z][A-Za-z'-]*/g) ?? []).length >= 3

/** The description (the text before the first tag) of the JSDoc nearest the node; "" when it has none. */
const descriptionOf = (node: ts.Node): string => {
  const doc = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc).at(-1)
  return doc === undefined ? "" : ts.getTextOfJSDocComment(doc.comment) ?? ""
}

interface Export {
  /** `package/Module.name`, or `package/Module.Namespace.name` for a namespace's member. */
  readonly name: string
  readonly documented: boolean
}

/** Every public export of the packages whose `src/index.ts` are `indexes`, each once. */
const exportsOf = (program: ts.Program, indexes: ReadonlyArray<{ readonly pkg: string; readonly file: string }>) => {
  const checker = program.getTypeChecker()
  const found = new Map<string, Export>()
  const resolve = (symbol: ts.Symbol) => symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
  const moduleName = (symbol: ts.Symbol) => {
    const file = symbol.declarations?.[0]?.getSourceFile().fileName ?? "?"
    return path.basename(file).replace(/\.ts$/, "")
  }

  const visit = (pkg: string, module: string, prefix: string, symbol: ts.Symbol) => {
    const target = resolve(symbol)
    // Where a reader finds the comment: an `export { X } from` statement, and
    // each declaration of the symbol it names (every overload, every merge).
    const nodes = [...(symbol.declarations ?? []), ...(target === symbol ? [] : target.declarations ?? [])].map((
      node
    ) => ts.isExportSpecifier(node) ? node.parent.parent : node)
    const name = `${pkg}/${module}.${prefix}${symbol.name}`
    if (found.has(name)) return
    found.set(name, { name, documented: nodes.some((node) => isSentence(descriptionOf(node))) })
    // A `declare namespace` merged with (or standing for) the export: its exported members are public too.
    for (const node of target.declarations ?? []) {
      if (!ts.isModuleDeclaration(node) || node.body === undefined || !ts.isModuleBlock(node.body)) continue
      for (const statement of node.body.statements) {
        const names = ts.isVariableStatement(statement)
          ? statement.declarationList.declarations.map((declaration) => declaration.name)
          : "name" in statement && statement.name !== undefined ? [statement.name as ts.Node] : []
        const exported = ts.canHaveModifiers(statement) &&
          (ts.getModifiers(statement) ?? []).some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)
        if (!exported) continue
        for (const member of names) {
          const memberSymbol = checker.getSymbolAtLocation(member)
          if (memberSymbol !== undefined) visit(pkg, module, `${prefix}${symbol.name}.`, memberSymbol)
        }
      }
    }
  }

  for (const { pkg, file } of indexes) {
    const source = program.getSourceFile(file)
    const moduleSymbol = source === undefined ? undefined : checker.getSymbolAtLocation(source)
    if (moduleSymbol === undefined) throw new Error(`${file} was not compiled`)
    for (const symbol of checker.getExportsOfModule(moduleSymbol)) {
      const target = resolve(symbol)
      const isModule = (target.declarations ?? []).some(ts.isSourceFile)
      if (isModule) {
        for (const member of checker.getExportsOfModule(target)) visit(pkg, moduleName(target), "", member)
      } else {
        // A single name the index re-exports (`export type { X } from "./M.js"`): named by the module that declares it.
        visit(pkg, moduleName(target), "", symbol)
      }
    }
  }
  return [...found.values()]
}

const packages = fs.readdirSync(path.join(root, "packages")).filter((name) =>
  fs.existsSync(path.join(root, "packages", name, "src", "index.ts"))
).sort()
const indexes = packages.map((pkg) => ({ pkg, file: path.join(root, "packages", pkg, "src", "index.ts") }))
const all = exportsOf(ts.createProgram(indexes.map(({ file }) => file), options()), indexes)

/** A program of in-memory files over the real ones, for checking the check. */
const fixture = (files: Readonly<Record<string, string>>) => {
  const at = (name: string) => path.join(root, ".exportDocs-fixture", name)
  const virtual = new Map(Object.entries(files).map(([name, text]) => [at(name), text]))
  const settings = options()
  const host = ts.createCompilerHost(settings)
  const { directoryExists, fileExists, getSourceFile, readFile } = host
  host.fileExists = (file) => virtual.has(file) || fileExists.call(host, file)
  host.directoryExists = (dir) =>
    [...virtual.keys()].some((file) => file.startsWith(`${dir}${path.sep}`)) ||
    (directoryExists?.call(host, dir) ?? false)
  host.readFile = (file) => virtual.get(file) ?? readFile.call(host, file)
  host.getSourceFile = (file, language, ...rest) => {
    const text = virtual.get(file)
    return text === undefined ? getSourceFile.call(host, file, language, ...rest)
      : ts.createSourceFile(file, text, language, true)
  }
  const index = at("src/index.ts")
  return exportsOf(ts.createProgram([index], settings, host), [{ pkg: "fixture", file: index }])
}

describe("export docs", () => {
  it("finds every package's public exports", () => {
    expect(packages).toEqual(expect.arrayContaining(["cli", "confirm", "core", "openai"]))
    expect(all.length).toBeGreaterThan(150)
    const names = all.map(({ name }) => name)
    expect(names).toEqual(expect.arrayContaining([
      "core/Registry.make",
      "core/Toolkit.Toolkit",
      "core/Capability.HumanTrigger",
      "core/Audit.Audit.Service",
      "core/Plan.PlanError",
      "openai/OpenAiModel.layer",
      "effect-ai/EffectAiModel.layer",
      "confirm/TerminalConfirm.layer",
      "cli/Cli.run"
    ]))
    expect(names.some((name) => name.includes("internal") || name.startsWith("core/index."))).toBe(false)
  })

  it("every public export has a sentence saying what it is for", () => {
    const missing = all.filter(({ documented }) => !documented).map(({ name }) => name)
    expect(missing, "each needs a line before its tags saying what it is for").toEqual([])
  })

  it("tells a sentence from tags alone (the check itself)", () => {
    const found = fixture({
      "src/index.ts": `export * as Thing from "./Thing.js"\n`,
      "src/internal/hidden.ts": `export const told = 1\nexport const untold = 1\n`,
      "src/Thing.ts": [
        `/** What a thing is for, in a sentence.\n * @since 0.1.0 */\nexport const told = 1`,
        `/**\n * @since 0.1.0\n * @category models\n */\nexport const tagsOnly = 1`,
        `export const bare = 1`,
        `/** @since 0.1.0 */\nexport function over(a: string): string\n/** Turns a value into text, either way. */\nexport function over(a: number): string\nexport function over(a: unknown) { return String(a) }`,
        `/** @since 0.1.0 */\nexport interface Merged { readonly a: 1 }\n/** The value whose type shares its name. */\nexport const Merged: Merged = { a: 1 }`,
        `/** A service, and its namespace of types. */\nexport class Svc {}\n/** @since 0.1.0 */\nexport declare namespace Svc {\n  /** What a service does, told here. */\n  export interface Told {}\n  /** @since 0.1.0 */\n  export interface Untold {}\n}`,
        `/** Two words. */\nexport const short = 1`,
        `/** Declared inside, told where it is exported. */\nexport { told as reexported } from "./internal/hidden.js"`,
        `/** @since 0.1.0 */\nexport { untold as reexportedUntold } from "./internal/hidden.js"`
      ].join("\n\n")
    })
    expect(found.filter(({ documented }) => !documented).map(({ name }) => name).sort()).toEqual([
      "fixture/Thing.Svc.Untold",
      "fixture/Thing.bare",
      "fixture/Thing.reexportedUntold",
      "fixture/Thing.short",
      "fixture/Thing.tagsOnly"
    ])
    expect(found.map(({ name }) => name)).toEqual(
      expect.arrayContaining([
        "fixture/Thing.over",
        "fixture/Thing.Merged",
        "fixture/Thing.told",
        "fixture/Thing.reexported"
      ])
    )
  })
})
