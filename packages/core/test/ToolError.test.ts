// Each message is written once, beside its type in ToolError, and every gate
// that refuses for that reason says it with those words.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, Schema } from "effect"
import {
  Agent,
  Audit,
  Grade,
  HumanConfirm,
  Invocation,
  Registry,
  ScriptedModel,
  Tool,
  ToolError,
  Toolkit
} from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const refusals = (audit: Audit.Memory) => audit.entries.flatMap((entry) => entry.type === "refused" ? [entry] : [])

describe("ToolError messages", () => {
  it.effect("autonomous: HumanConfirm and the agent loop's capabilities refuse with one wording", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      // HumanConfirm, asked from a model's fiber.
      const viaHuman = yield* Effect.flip(
        Invocation.within({ autonomous: true })(
          Effect.provide(
            desk.SubmitTicket.invoke({ subject: "x" }),
            HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("x")]))
          )
        )
      )
      expect(viaHuman).toMatchObject({ gate: "autonomous", reason: ToolError.autonomousReason })
      // The capabilities the agent loop provides, reached by a read tool whose
      // check was cast away.
      const audit = Audit.memory()
      const Guarded = Tool.read("kb.guarded", {
        title: "t",
        description: "d",
        input: Schema.Struct({}),
        output: Schema.Unknown,
        run: (() => desk.SubmitTicket.invoke({ subject: "x" })) as unknown as () => Effect.Effect<unknown>
      })
      yield* Agent.run({ toolkit: Toolkit.make(Guarded), prompt: "go" }).pipe(
        Effect.provide(
          ScriptedModel.layer([ScriptedModel.calls(ScriptedModel.call("kb.guarded", {})), ScriptedModel.text("done")])
        ),
        Effect.provide(audit.layer)
      )
      const reasons = refusals(audit).filter((entry) => entry.gate === "autonomous").map((entry) => entry.reason)
      expect(reasons).toEqual([ToolError.autonomousReason])
      expect(desk.effects.submitted).toEqual([])
    }))

  it.effect("grade: a write asked for from inside a read tool says what the compiler would (Grade.gradeViolation)", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const audit = Audit.memory()
      const Inner = Tool.read("kb.inner", {
        title: "t",
        description: "d",
        input: Schema.Struct({}),
        output: Schema.Unknown,
        run: () =>
          Effect.provide(
            desk.SubmitTicket.invoke({ subject: "x" }),
            HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("x")]))
          )
      })
      yield* Effect.exit(Inner.invoke({}).pipe(Effect.provide(audit.layer)))
      expect(refusals(audit).map((entry) => entry.reason)).toEqual([
        Grade.gradeViolation("kb.inner", "read", "run", "WriteCapability")
      ])
      expect(refusals(audit)[0]?.reason).toBe(
        "kb.inner is a read tool, but its run needs WriteCapability: grade it Tool.write or Tool.send, or remove that call"
      )
      // A send's prepare that sends: named as the prepare of a send tool.
      const Sneaky = Tool.send("chat.sneaky", {
        title: "t",
        description: "d",
        input: Schema.Struct({}),
        payload: Schema.Struct({}),
        output: Schema.Unknown,
        prepare: (() => Effect.as(desk.SendReply.invoke({ text: "x" }), {})) as unknown as () => Effect.Effect<{}>,
        deliver: () => Effect.succeed(null)
      })
      const second = Audit.memory()
      yield* Effect.exit(
        Sneaky.invoke({}).pipe(
          Effect.provide(
            HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("x"), HumanConfirm.approve("x")]))
          ),
          Effect.provide(second.layer)
        )
      )
      expect(refusals(second)[0]?.reason).toBe(Grade.gradeViolation("chat.sneaky", "send", "prepare", "SendCapability"))
      expect(desk.effects.delivered).toEqual([])
      expect(desk.effects.submitted).toEqual([])
    }))

  it.effect("invalid input: the registry and the agent loop say it as InvalidInput does", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const result = yield* Registry.make(desk.support).invoke("kb.search", { query: 1 })
      const parsed = Schema.decodeUnknownResult(desk.KbSearch.input, ToolError.parseOptions)({ query: 1 })
      if (Result.isSuccess(parsed)) return expect.unreachable("the input decoded")
      expect(result.error).toBe(ToolError.InvalidInput.fromParseError("kb.search", parsed.failure).message)
      expect(result.error?.startsWith(ToolError.invalidInputMessage("kb.search", ""))).toBe(true)
      const run = yield* Agent.run({ toolkit: Toolkit.readOnly(desk.support), prompt: "go" }).pipe(
        Effect.provide(
          ScriptedModel.layer([
            ScriptedModel.calls(ScriptedModel.raw("kb__search", "{oops")),
            ScriptedModel.text("done")
          ])
        )
      )
      const denied = run.calls[0]
      expect(denied?.ok === false && denied.error.message).toBe(
        ToolError.invalidInputMessage("kb.search", "the arguments are not valid JSON")
      )
    }))

  it.effect("invalid edit: HumanConfirm says it as InvalidEdit does, with the parse issue", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const edited = { to: "c-1", text: "" }
      const error = yield* Effect.flip(
        desk.SendReply.invoke({ text: "Fixed" }).pipe(
          Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:bob", edited)])))
        )
      )
      const parsed = Schema.decodeUnknownResult(desk.SendReply.payload, ToolError.parseOptions)(edited)
      if (Result.isSuccess(parsed)) return expect.unreachable("the edit decoded")
      expect(error).toEqual(ToolError.InvalidEdit.fromParseError("chat.sendMessage", "agent:bob", parsed.failure))
      expect(error.message).toContain("nothing was delivered")
      expect(desk.effects.delivered).toEqual([])
    }))

  it.effect("a defect: the fixed text, never the exception's", () =>
    Effect.gen(function*() {
      const Boom = Tool.read("kb.boom", {
        title: "t",
        description: "d",
        input: Schema.Struct({}),
        output: Schema.Unknown,
        run: () => Effect.die(new Error("secret stack"))
      })
      const result = yield* Registry.make(Toolkit.make(Boom)).invoke("kb.boom", {})
      expect(result.error).toBe(ToolError.unexpectedFailure("kb.boom"))
    }))
})

describe("ToolError as a schema", () => {
  it("every error crosses a wire as JSON and decodes back into its class", () => {
    const errors = [
      new ToolError.InvalidInput({ tool: "kb.search", issue: "query is missing" }),
      new ToolError.InvalidOutput({ tool: "kb.search", issue: "title is missing" }),
      new ToolError.Refused({ tool: "chat.sendMessage", gate: "autonomous", reason: ToolError.autonomousReason }),
      new ToolError.Rejected({ tool: "chat.sendMessage", by: "agent:alice", reason: "wrong tone" }),
      new ToolError.InvalidEdit({ tool: "chat.sendMessage", by: "agent:alice", issue: "text is empty" })
    ]
    for (const error of errors) {
      const wire = JSON.parse(JSON.stringify(Schema.encodeSync(ToolError.GradedError)(error)))
      const back = Schema.decodeUnknownSync(ToolError.GradedError)(wire)
      expect(back).toBeInstanceOf(error.constructor)
      expect(back.message).toBe(error.message)
      expect(ToolError.isToolError(wire)).toBe(true)
    }
    expect(ToolError.isToolError({ _tag: "Other" })).toBe(false)
    expect(() => Schema.decodeUnknownSync(ToolError.GradedError)({ _tag: "@graded/core/ToolError/Refused", tool: "x" }))
      .toThrow(/gate/)
  })
})
