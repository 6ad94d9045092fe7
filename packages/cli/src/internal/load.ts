// Loads the user's module and checks that it exports what the CLI needs,
// naming what is missing rather than failing somewhere deeper.
import { Data, Effect, Layer } from "effect"
import { Plan, Toolkit } from "@graded/core"
import { Policy } from "@graded/policy"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import type { Config } from "../Cli.js"
import { WorkingDirectory } from "./process.js"

export class ConfigError extends Data.TaggedError("@graded/cli/ConfigError")<{ readonly message: string }> {}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

// What is wrong with the `mcp` export (McpServe.Options), if anything.
const mcpProblem = (mcp: unknown): string | undefined => {
  if (!isRecord(mcp)) return "must be an object: { name, version, context, proposals, elicitation }"
  for (const key of ["name", "version"] as const) {
    if (mcp[key] !== undefined && typeof mcp[key] !== "string") return `.${key} must be a string`
  }
  for (const key of ["context", "proposals"] as const) {
    if (mcp[key] !== undefined && !isRecord(mcp[key])) return `.${key} must be an object`
  }
  if (mcp.elicitation !== undefined && mcp.elicitation !== false && !isRecord(mcp.elicitation)) {
    return ".elicitation must be false or an object: { timeout }"
  }
  return undefined
}

// A module written in TypeScript loads as it is. From its own sources (this
// repository, a test) the command runs under a loader that compiles
// TypeScript, which compiles the module too. Compiled (dist/, as installed),
// it registers tsx, an optional peer, when the app has it; without tsx, Node
// strips the types itself, which takes only erasable syntax and relative
// imports that name their .ts files.
const typescript = /\.[cm]?tsx?$/
const fromSources = import.meta.url.endsWith(".ts")
let tsx: Promise<boolean> | undefined
const withTsx = (): Promise<boolean> =>
  tsx ??= import("tsx/esm/api").then((api) => {
    api.register()
    return true
  }, () => false)

const withoutTsx =
  " (a TypeScript module loads through tsx when the project has it, `npm i -D tsx`; without it, Node strips the types itself, which takes only erasable syntax and relative imports that name their .ts files)"

export const load = (file: string): Effect.Effect<Config, ConfigError> =>
  Effect.gen(function*() {
    const resolved = path.resolve((yield* WorkingDirectory)(), file)
    const compiled = typescript.test(resolved) && !fromSources ? yield* Effect.promise(withTsx) : true
    const module = yield* Effect.tryPromise({
      try: () => import(pathToFileURL(resolved).href) as Promise<Record<string, unknown>>,
      catch: (error) =>
        new ConfigError({ message: `Cannot load ${file}: ${String(error)}${compiled ? "" : withoutTsx}` })
    })
    const exports = (module.default ?? module) as Record<string, unknown>
    if (!Toolkit.isToolkit(exports.toolkit)) {
      return yield* new ConfigError({ message: `${file} must export a toolkit (Toolkit.make(...)) named "toolkit"` })
    }
    if (exports.plans !== undefined && (!Array.isArray(exports.plans) || !exports.plans.every(Plan.isPlan))) {
      return yield* new ConfigError({ message: `${file}: "plans" must be an array of plans made by Plan.make` })
    }
    if (exports.layer !== undefined && !Layer.isLayer(exports.layer)) {
      return yield* new ConfigError({ message: `${file}: "layer" must be a Layer` })
    }
    if (exports.policy !== undefined && !Policy.isPolicy(exports.policy)) {
      return yield* new ConfigError({ message: `${file}: "policy" must be a policy made by Policy.make` })
    }
    if (exports.mcp !== undefined) {
      const problem = mcpProblem(exports.mcp)
      if (problem !== undefined) return yield* new ConfigError({ message: `${file}: "mcp" ${problem}` })
    }
    return exports as unknown as Config
  })
