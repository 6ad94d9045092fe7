// What docs/security.md's "Adding an API" asks of a contributor, checked
// where a test can see it. Each block fails for an omission: a module of
// core that reads a service the app provides without the wrapper that runs
// its code as a service's, and a proposal store method that moves a human's
// queue without the guard. (A package export that is not sealed fails in
// sealed.test.ts.)
import { Cause, Effect, Exit, Result, Schema } from "effect"
import { readdirSync, readFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { ProposalStore, Registry, Tool, Toolkit, ToolError } from "../packages/core/src/index.js"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

const sources = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(path.join(dir, entry.name))
      : entry.name.endsWith(".ts") ? [path.join(dir, entry.name)]
      : []
  )

// Reading a service: `yield* Tag`, `Effect.map(Tag, ...)`, `Effect.serviceOption(Tag)`, `Context.get(c, Tag)`,
// and Effect 4's `Tag.use(...)` / `Tag.useSync(...)` and `fiber.getRef(Tag)`.
const reads = (tag: string) =>
  new RegExp(
    `(yield\\* |Effect\\.(map|flatMap|andThen|service|serviceOption)\\(|` +
      `Context\\.(get|getOption|getUnsafe|getOrUndefined|getOrElse)\\([^,]+, |getRef\\()${tag}\\b|` +
      `\\b${tag}\\.(use|useSync)\\(`
  )

describe("adding an API: what a contributor must call", () => {
  it("core reads the stores and the model the app provides only through internal/services.ts, which wraps them", () => {
    // services.ts wraps them; supervised.ts reads the run's own memory store, which it made.
    const allowed = new Set(["internal/services.ts", "internal/supervised.ts"])
    const dir = path.join(root, "packages/core/src")
    const found = sources(dir).flatMap((file) => {
      const name = path.relative(dir, file)
      if (allowed.has(name)) return []
      const text = readFileSync(file, "utf8")
      return ["ProposalStore", "ProposalStore\\.ProposalStore", "RunStore", "RunStore\\.RunStore", "LanguageModel"]
        .filter((tag) => text.split("\n").some((line) => !line.trimStart().startsWith("*") && reads(tag).test(line)))
        .map((tag) => `${name} reads ${tag.replace("\\", "")}`)
    })
    expect(found).toEqual([])
  })

  it("every ProposalStore method but reading and adding refuses a tool's own code (ProposalStore.guardDecisions)", async () => {
    const reading = new Set(["add", "get", "list", "withTransaction"])
    const outcome = await Effect.runPromise(
      Effect.gen(function*() {
        const store = yield* ProposalStore.ProposalStore
        const methods = Object.keys(store).filter((key) => !reading.has(key))
        const refused: Array<string> = []
        const Prober = Tool.read("kb.probe", {
          title: "Probe",
          description: "Calls every method.",
          input: Schema.Struct({}),
          output: Schema.Boolean,
          run: () =>
            Effect.forEach(methods, (method) => {
              // Any arguments: a guarded method refuses before it reads them.
              const call = Effect.suspend(() =>
                Reflect.apply(Reflect.get(store, method), store, [
                  "p-1",
                  "agent:x",
                  "2999-01-01T00:00:00Z"
                ]) as Effect.Effect<
                  unknown,
                  unknown
                >
              )
              return Effect.map(Effect.exit(call), (exit) => {
                const defect = Exit.isFailure(exit) ? Result.getOrUndefined(Cause.findDefect(exit.cause)) : undefined
                if (defect instanceof ToolError.Refused) refused.push(method)
              })
            }, { discard: true }).pipe(Effect.as(true))
        })
        yield* Registry.make(Toolkit.make(Prober)).invoke("kb.probe", {})
        return { methods, refused }
      }).pipe(Effect.provide(ProposalStore.memory))
    )
    expect(outcome.methods.length).toBeGreaterThanOrEqual(7)
    expect(outcome.refused).toEqual(outcome.methods)
  })

  it("what graded keeps about a tool is its one record (internal/toolState.ts), not a map of its own", () => {
    // A map keyed by a tool object elsewhere is a second home a contributor must find and keep in step.
    const keyedByTool = /new Weak(Map|Set)<\s*(Any|AnyTool|Tool\.Any)\b/
    const dir = path.join(root, "packages")
    const found = sources(dir)
      .filter((file) => file.includes(`${path.sep}src${path.sep}`) && !file.endsWith("toolState.ts"))
      .filter((file) => keyedByTool.test(readFileSync(file, "utf8")))
      .map((file) => path.relative(root, file))
    expect(found).toEqual([])
  })
})
