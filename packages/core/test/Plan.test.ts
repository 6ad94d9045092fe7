import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Audit, HumanConfirm, Invocation, type LanguageModel, Plan, ScriptedModel, Tool } from "@graded/core"
import { HumanTriggerTag } from "../src/internal/capability.js"
import { makeDesk } from "./supportDesk.js"

const alice = HumanConfirm.trigger({ by: "agent:alice", via: "shortcut" })

const makePlan = () => {
  const desk = makeDesk()
  const Undeclared = Tool.write("ticket.delete", {
    title: "Delete",
    description: "Deletes a ticket.",
    input: Schema.Struct({}),
    output: Schema.Boolean,
    run: () => Effect.sync(() => (desk.effects.submitted.push("DELETED"), true))
  })
  const QuickTicket = Plan.make("quick-ticket", {
    input: Schema.Struct({ query: Schema.String }),
    writes: [desk.SubmitTicket],
    steps: ({ query }, step) =>
      Effect.gen(function*() {
        const articles = yield* step.read("search", desk.KbSearch, { query })
        const subject = yield* step.generate("write the subject", `Subject for ${articles[0]?.title}`)
        yield* step.validate("check the subject", subject.length < 80, "the subject is too long")
        return yield* step.write("submit", desk.SubmitTicket, { subject })
      })
  })
  return { ...desk, Undeclared, QuickTicket }
}

const model = (...turns: ReadonlyArray<ScriptedModel.Turn>) => ScriptedModel.layer(turns)

describe("Plan.run", () => {
  it.effect("runs the steps in order; declared writes need no confirmation; each step is audited", () =>
    Effect.gen(function*() {
      const { effects, QuickTicket } = makePlan()
      const audit = Audit.memory()
      const shown: Array<LanguageModel.Request> = []
      const result = yield* Plan.run(QuickTicket, { query: "vat" }).pipe(
        Effect.provide(
          Layer.mergeAll(alice, audit.layer, model((r) => (shown.push(r), ScriptedModel.text("VAT wrong"))))
        )
      )
      expect(result).toEqual({ id: "T-1" })
      expect(effects.submitted).toEqual(["VAT wrong"])
      // The model was offered no tools: it only writes text.
      expect(shown[0]?.tools).toEqual([])
      const steps = audit.entries.filter((e) => e.type === "step" && e.status === "completed")
      expect(steps.map((e) => e.type === "step" && `${e.index} ${e.step} ${e.kind}`)).toEqual([
        "1 search read",
        "2 write the subject generate",
        "3 check the subject validate",
        "4 submit write"
      ])
      expect(audit.entries.find((e) => e.type === "delivered")).toMatchObject({
        tool: "ticket.submit",
        by: "agent:alice (plan quick-ticket)",
        actor: "agent:alice",
        autonomous: false
      })
    }))

  it.effect("a failed step is named, with its index", () =>
    Effect.gen(function*() {
      const { effects, QuickTicket } = makePlan()
      const error = yield* Effect.flip(
        Plan.run(QuickTicket, { query: "vat" }).pipe(
          Effect.provide(Layer.merge(alice, model(ScriptedModel.text("x".repeat(100)))))
        )
      )
      expect(error).toBeInstanceOf(Plan.StepFailed)
      expect(Plan.isPlanError(error)).toBe(true)
      expect(error.message).toBe("Plan quick-ticket failed at step 3 (check the subject): the subject is too long")
      expect(effects.submitted).toEqual([])
    }))

  it.effect("a model that writes nothing, or reaches for a tool, fails the generate step", () =>
    Effect.gen(function*() {
      const { QuickTicket } = makePlan()
      const error = yield* Effect.flip(
        Plan.run(QuickTicket, { query: "vat" }).pipe(
          Effect.provide(
            Layer.merge(alice, model(ScriptedModel.calls(ScriptedModel.call("ticket.submit", { subject: "x" }))))
          )
        )
      )
      expect(error).toMatchObject({ step: "write the subject", index: 2, reason: "the model wrote nothing" })
    }))

  it.effect("a write tool the plan did not declare is refused, whichever way it is reached", () =>
    Effect.gen(function*() {
      const { effects, KbSearch, Undeclared } = makePlan()
      const Sneaky = Plan.make("sneaky", {
        input: Schema.Struct({}),
        writes: [],
        steps: (_, step) =>
          Effect.gen(function*() {
            yield* step.read("search", KbSearch, { query: "x" })
            return yield* step.write("delete", Undeclared, {})
          })
      })
      const error = yield* Effect.flip(Plan.run(Sneaky, {}).pipe(Effect.provide(alice)))
      expect(error.message).toBe(
        "Plan sneaky failed at step 2 (delete): ticket.delete was refused by the plan gate: plan sneaky does not declare ticket.delete"
      )
      // Reached directly, not through a step, the plan's capability still refuses it.
      const direct = Plan.make("direct", {
        input: Schema.Struct({}),
        writes: [],
        steps: () =>
          Undeclared.invoke({}).pipe(
            Effect.mapError((e) => new Plan.StepFailed({ plan: "direct", step: "-", index: 0, reason: e.message }))
          )
      })
      const second = yield* Effect.flip(Plan.run(direct, {}).pipe(Effect.provide(alice)))
      expect(second.reason).toContain("does not declare ticket.delete")
      expect(effects.submitted).toEqual([])
    }))

  it.effect("a send step still needs a human's confirmation", () =>
    Effect.gen(function*() {
      const { effects, SendReply } = makePlan()
      const Notify = Plan.make("notify", {
        input: Schema.Struct({ text: Schema.String }),
        writes: [],
        steps: ({ text }, step) => step.send("send the reply", SendReply, { text })
      })
      yield* Plan.run(Notify, { text: "Fixed" }).pipe(
        Effect.provide(
          Layer.merge(alice, HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])))
        )
      )
      expect(effects.delivered).toEqual([{ to: "customer:42", text: "Fixed" }])
      const error = yield* Effect.flip(
        Plan.run(Notify, { text: "Again" }).pipe(
          Effect.provide(
            Layer.merge(alice, HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.reject("agent:alice", "no")])))
          )
        )
      )
      expect(error.message).toBe(
        "Plan notify failed at step 1 (send the reply): chat.sendMessage was rejected by agent:alice: no"
      )
      expect(effects.delivered).toEqual([{ to: "customer:42", text: "Fixed" }])
    }))

  it.effect("bad input fails before any step runs", () =>
    Effect.gen(function*() {
      const { effects, QuickTicket } = makePlan()
      const error = yield* Effect.flip(
        Plan.run(QuickTicket, { query: 7 }).pipe(Effect.provide(Layer.merge(alice, model())))
      )
      expect(error).toBeInstanceOf(Plan.NotStarted)
      expect(error.message).toMatch(/^Plan quick-ticket did not start: its input is invalid: .*query/s)
      expect(effects.searches).toEqual([])
    }))

  it.effect("cast past the compiler: a forged trigger or a model's fiber cannot start a plan", () =>
    Effect.gen(function*() {
      const { effects, QuickTicket } = makePlan()
      const forged = Layer.succeed(
        HumanTriggerTag,
        { by: "model", via: "forged" } as unknown as (typeof HumanTriggerTag)["Service"]
      )
      const first = yield* Effect.flip(
        Plan.run(QuickTicket, { query: "x" }).pipe(Effect.provide(Layer.merge(forged, model())))
      )
      expect(first.reason).toBe("the HumanTrigger was not granted by graded")
      const second = yield* Effect.flip(
        Plan.run(QuickTicket, { query: "x" }).pipe(
          Invocation.within({ autonomous: true }),
          Effect.provide(Layer.merge(alice, model()))
        )
      )
      expect(second.reason).toBe("a model cannot start a plan; a human must")
      expect(effects.searches).toEqual([])
    }))

  it.effect("a plan's failure that crossed a wire as JSON decodes back into its class", () =>
    Effect.gen(function*() {
      const { QuickTicket } = makePlan()
      const failures = [
        yield* Effect.flip(
          Plan.run(QuickTicket, { query: "vat" }).pipe(
            Effect.provide(Layer.merge(alice, model(ScriptedModel.text("x".repeat(100)))))
          )
        ),
        yield* Effect.flip(Plan.run(QuickTicket, { query: 7 }).pipe(Effect.provide(Layer.merge(alice, model()))))
      ]
      for (const failure of failures) {
        const wire = JSON.parse(JSON.stringify(yield* Schema.encodeEffect(Plan.PlanError)(failure)))
        const back = yield* Schema.decodeUnknownEffect(Plan.PlanError)(wire)
        expect(back).toBeInstanceOf(failure.constructor)
        expect(back.message).toBe(failure.message)
      }
      expect(failures.map((failure) => failure._tag)).toEqual([
        "@graded/core/Plan/StepFailed",
        "@graded/core/Plan/NotStarted"
      ])
    }))

  it.effect("Plan.isPlan: a plan made by Plan.make, not a copy of one", () =>
    Effect.sync(() => {
      const { QuickTicket } = makePlan()
      expect(Plan.isPlan(QuickTicket)).toBe(true)
      expect(Plan.isPlan({ ...QuickTicket })).toBe(false)
      expect(Plan.isPlan(null)).toBe(false)
    }))
})
