import { FileSystem } from "@effect/platform"
import { NodeFileSystem } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Agent, Audit, ScriptedModel, Toolkit } from "@graded/core"
import { makeDesk } from "./supportDesk.js"

describe("Audit.jsonl", () => {
  it.scoped("writes one valid JSON line per entry, even from many fibers at once", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const dir = yield* fs.makeTempDirectoryScoped()
      const path = `${dir}/audit.jsonl`
      const sink = Audit.jsonl(path)
      yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        (i) => Audit.record({ type: "called", tool: "kb.search", input: { query: `q${i}`, big: "x".repeat(5000) } }),
        { concurrency: "unbounded" }
      ).pipe(Effect.provide(sink))
      const entries = yield* Audit.readJsonl(path)
      expect(entries).toHaveLength(200)
      expect(new Set(entries.map((e) => e.type === "called" && (e.input as { query: string }).query)).size).toBe(200)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("records an agent run: offered with the reasons, calls, answer", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = `${yield* fs.makeTempDirectoryScoped()}/audit.jsonl`
      const { support } = makeDesk()
      yield* Agent.run({ toolkit: support as unknown as Toolkit.Toolkit<readonly []>, prompt: "?" }).pipe(
        Effect.provide(Layer.merge(
          ScriptedModel.layer([
            ScriptedModel.calls(ScriptedModel.raw("chat__sendMessage", "{}")),
            ScriptedModel.text("no")
          ]),
          Audit.jsonl(path)
        ))
      )
      const entries = yield* Audit.readJsonl(path)
      expect(entries.map((e) => e.type)).toEqual(["refused", "offered", "refused", "answered"])
      expect(entries[0]).toMatchObject({ tool: "Agent.run", gate: "autonomous" })
      expect(entries[1]).toMatchObject({
        suppressed: [
          { tool: "ticket.submit", reason: "ticket.submit (write) needs WriteCapability" },
          { tool: "chat.sendMessage", reason: "chat.sendMessage (send) needs SendCapability" }
        ]
      })
      expect(entries.every((e) => e.autonomous && typeof e.traceId === "string" && typeof e.at === "string")).toBe(true)
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.scoped("reading a corrupt file names the line", () =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = `${yield* fs.makeTempDirectoryScoped()}/audit.jsonl`
      const entry = `{"type":"answered","rounds":1,"at":"2026-01-01T00:00:00.000Z","autonomous":true}`
      yield* fs.writeFileString(path, `${entry}\n{not json\n`)
      const error = yield* Effect.flip(Audit.readJsonl(path))
      expect(error).toMatchObject({ _tag: "@graded/core/Audit/CorruptLine", line: 2 })
      // JSON that is not an entry is named too: here a refusal without its gate.
      yield* fs.writeFileString(
        path,
        `${entry}\n${entry}\n{"type":"refused","tool":"kb.search","reason":"x","at":"t","autonomous":false}\n`
      )
      const wrong = yield* Effect.flip(Audit.readJsonl(path))
      expect(wrong).toMatchObject({ _tag: "@graded/core/Audit/CorruptLine", line: 3 })
      expect(wrong.message).toMatch(/line 3: not an audit entry/)
      // A good file decodes into entries, absent trace and actor included.
      yield* fs.writeFileString(path, `${entry}\n`)
      expect(yield* Audit.readJsonl(path)).toEqual([{
        type: "answered",
        rounds: 1,
        at: "2026-01-01T00:00:00.000Z",
        autonomous: true,
        traceId: undefined,
        actor: undefined
      }])
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
