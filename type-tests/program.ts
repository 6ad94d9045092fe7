// One TypeScript program for every compiler-API test: type-tests/tsconfig's
// files plus cases given as text (kept in memory, never written), so the lib,
// effect and graded are parsed, bound and checked once for all of them.
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

export const here = path.dirname(fileURLToPath(import.meta.url))

export interface Compiled {
  readonly program: ts.Program
  /** The file's semantic and syntactic diagnostics. */
  readonly diagnosticsOf: (file: ts.SourceFile) => ReadonlyArray<ts.Diagnostic>
  /** Instantiations the checker has made so far. */
  readonly instantiations: () => number
}

/** Compiles the type tests with `cases` (file name in type-tests/ to source) beside them. */
export const compile = (cases: Readonly<Record<string, string>>): Compiled => {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(here, "tsconfig.json"), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"))
    }
  })
  if (config === undefined) throw new Error("type-tests/tsconfig.json could not be read")
  const texts = new Map(Object.entries(cases).map(([name, text]) => [path.join(here, name), text]))
  const host = ts.createCompilerHost(config.options)
  const { fileExists, getSourceFile, readFile } = host
  host.fileExists = (file) => texts.has(file) || fileExists.call(host, file)
  host.readFile = (file) => texts.get(file) ?? readFile.call(host, file)
  host.getSourceFile = (file, language, ...rest) => {
    const text = texts.get(file)
    return text === undefined
      ? getSourceFile.call(host, file, language, ...rest)
      : ts.createSourceFile(file, text, language)
  }
  const program = ts.createProgram([...config.fileNames, ...texts.keys()], config.options, host)
  const checker = program.getTypeChecker() as unknown as { getInstantiationCount(): number }
  return {
    program,
    diagnosticsOf: (file) => program.getSemanticDiagnostics(file).concat(program.getSyntacticDiagnostics(file)),
    instantiations: () => checker.getInstantiationCount()
  }
}
