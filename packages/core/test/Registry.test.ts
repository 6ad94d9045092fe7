import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema, SchemaTransformation } from "effect"
import { Audit, HumanConfirm, Registry, Tool, Toolkit } from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const isToolResult = Schema.is(Registry.ToolResult)

const gated = () => {
  const desk = makeDesk()
  const Crm = Tool.read("crm.history", {
    title: "CRM history",
    description: "Past orders.",
    features: ["crm"],
    input: Schema.Struct({}),
    output: Schema.String,
    run: () => Effect.succeed("3 orders")
  })
  const TicketOnly = Tool.read("ticket.fields", {
    title: "Ticket fields",
    description: "Reads the ticket form.",
    pages: ["ticket"],
    input: Schema.Struct({}),
    output: Schema.String,
    run: () => Effect.succeed("subject, body")
  })
  const toolkit = Toolkit.make(...desk.support.tools, Crm, TicketOnly)
  return { ...desk, toolkit, registry: Registry.make(toolkit, { pages: ["ticket", "order", "settings"] }) }
}

describe("Registry.invoke", () => {
  it.effect("runs a read tool and returns its encoded result", () =>
    Effect.gen(function*() {
      const { registry } = gated()
      const result = yield* registry.invoke("kb.search", { query: "invoice" })
      expect(result).toEqual({ ok: true, data: [{ id: "kb-1", title: "About invoice" }] })
    }))

  it.effect("gate 1: an unknown name is refused, naming it", () =>
    Effect.gen(function*() {
      const { registry } = gated()
      const human = HumanConfirm.layer(HumanConfirm.scripted([]))
      for (const name of ["kb.serch", "kb__search", "", "ticket.submit.now"]) {
        const result = yield* registry.invoke(name, {}).pipe(Effect.provide(human))
        expect(result).toMatchObject({ ok: false, code: "unknown-tool", gate: "unknown" })
        expect(result.error).toContain(`no tool named ${name}`)
      }
    }))

  it.effect("gate 2: an unlicensed feature is refused, naming the feature", () =>
    Effect.gen(function*() {
      const { registry } = gated()
      const refused = yield* registry.invoke("crm.history", {}, { features: ["kb"] })
      expect(refused).toMatchObject({ ok: false, code: "feature", gate: "feature" })
      expect(refused.error).toContain("crm")
      expect(yield* registry.invoke("crm.history", {}, { features: ["crm"] })).toMatchObject({ ok: true })
    }))

  it.effect("gate 2: a known page outside the tool's pages is refused; an unknown page passes", () =>
    Effect.gen(function*() {
      const { registry } = gated()
      expect(yield* registry.invoke("ticket.fields", {}, { page: "order" })).toMatchObject({ ok: false, gate: "page" })
      expect(yield* registry.invoke("ticket.fields", {}, { page: "ticket" })).toMatchObject({ ok: true })
      // An iframe where the page cannot be detected, or a page the app does not know.
      expect(yield* registry.invoke("ticket.fields", {}, {})).toMatchObject({ ok: true })
      expect(yield* registry.invoke("ticket.fields", {}, { page: "iframe-unknown" })).toMatchObject({ ok: true })
    }))

  it.effect("gate 3: an autonomous write is refused with requiresConfirm and never runs", () =>
    Effect.gen(function*() {
      const { effects, registry } = gated()
      const result = yield* registry.invoke("ticket.submit", { subject: "Refund" }, { autonomous: true }).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("should-not-be-asked")])))
      )
      expect(result).toMatchObject({
        ok: false,
        code: "requires-confirm",
        gate: "autonomous",
        requiresConfirm: true,
        confirmPayload: { subject: "Refund" }
      })
      expect(effects.submitted).toEqual([])
    }))

  it.effect("gate 3: an autonomous send returns the prepared payload and never delivers", () =>
    Effect.gen(function*() {
      const { effects, registry } = gated()
      const ui = HumanConfirm.scripted([HumanConfirm.approve("should-not-be-asked")])
      const result = yield* registry.invoke("chat.sendMessage", { text: "Hi" }, { autonomous: true }).pipe(
        Effect.provide(HumanConfirm.layer(ui))
      )
      expect(result).toMatchObject({
        ok: false,
        requiresConfirm: true,
        confirmPayload: { to: "customer:42", text: "Hi" }
      })
      expect(effects.prepared).toBe(1)
      expect(effects.delivered).toEqual([])
      expect(ui.seen).toEqual([])
    }))

  it.effect("a human-context send goes through HumanConfirm and delivers once", () =>
    Effect.gen(function*() {
      const { effects, registry } = gated()
      const result = yield* registry.invoke("chat.sendMessage", { text: "Hi" }, { actor: "agent:alice" }).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])))
      )
      expect(result).toEqual({ ok: true, data: { delivered: true } })
      expect(effects.delivered).toEqual([{ to: "customer:42", text: "Hi" }])
    }))

  it.effect("a human rejection is a structured result naming who and why", () =>
    Effect.gen(function*() {
      const { effects, registry } = gated()
      const result = yield* registry.invoke("chat.sendMessage", { text: "Hi" }).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.reject("agent:bob", "wrong tone")])))
      )
      expect(result).toMatchObject({ ok: false, code: "rejected" })
      expect(result.error).toContain("agent:bob")
      expect(result.error).toContain("wrong tone")
      expect(effects.delivered).toEqual([])
    }))

  it.effect("gate 4: input is decoded; excess properties and wrong types are named", () =>
    Effect.gen(function*() {
      const { effects, registry } = gated()
      const extra = yield* registry.invoke("kb.search", { query: "x", password: "hunter2" })
      expect(extra).toMatchObject({ ok: false, code: "invalid-input" })
      expect(extra.error).toContain("password")
      const wrong = yield* registry.invoke("kb.search", { query: 42 })
      expect(wrong.error).toContain("query")
      const notAnObject = yield* registry.invoke("kb.search", "query")
      expect(notAnObject).toMatchObject({ ok: false, code: "invalid-input" })
      // null for an optional field is what a strict-mode model sends: it means absent.
      expect(yield* registry.invoke("kb.search", { query: "x", limit: null })).toMatchObject({ ok: true })
      expect(effects.searches).toEqual(["x"])
    }))

  it.effect("an unexpected key is named with the same text at every depth: top level, nested struct, struct in a list", () =>
    Effect.gen(function*() {
      const Customer = Tool.read("crm.customer", {
        title: "Customer",
        description: "Finds a customer.",
        input: Schema.Struct({
          name: Schema.String,
          address: Schema.Struct({ city: Schema.String, zip: Schema.optional(Schema.String) }),
          tags: Schema.Array(Schema.Struct({ label: Schema.String }))
        }),
        output: Schema.String,
        run: ({ name }) => Effect.succeed(name)
      })
      const registry = Registry.make(Toolkit.make(Customer))
      const errorOf = (input: unknown) => Effect.map(registry.invoke("crm.customer", input), (result) => result.error)
      // Effect 4's issues, one a line with the path under it (was Effect 3's tree under the schema's type).
      const head = "Invalid input for crm.customer: "
      expect(yield* errorOf({ name: "a", address: { city: "b" }, tags: [], password: "x" })).toBe(
        head + `Unexpected key; expected one of "name", "address", "tags"\n  at ["password"]`
      )
      expect(yield* errorOf({ name: "a", address: { city: "b", street: "c" }, tags: [] })).toBe(
        head + `Unexpected key; expected one of "city", "zip"\n  at ["address"]["street"]`
      )
      expect(
        yield* errorOf({ name: "a", address: { city: "b" }, tags: [{ label: "l" }, { label: "m", colour: "red" }] })
      ).toBe(head + `Unexpected key; expected one of "label"\n  at ["tags"][1]["colour"]`)
      // Every error at once, at every depth.
      expect(
        yield* errorOf({
          name: 1,
          address: { city: "b", street: "c" },
          tags: [{ label: "m", colour: "red" }],
          extra: true
        })
      ).toBe(
        head + `Unexpected key; expected one of "name", "address", "tags"\n  at ["extra"]\n` +
          `Expected string, got 1\n  at ["name"]\n` +
          `Unexpected key; expected one of "city", "zip"\n  at ["address"]["street"]\n` +
          `Unexpected key; expected one of "label"\n  at ["tags"][0]["colour"]`
      )
      expect(yield* registry.invoke("crm.customer", { name: "a", address: { city: "b", zip: null }, tags: [] }))
        .toEqual({ ok: true, data: "a" })
    }))

  it.effect("a tool's tags and side effects are on its called and completed entries, with or without a policy", () =>
    Effect.gen(function*() {
      const Lookup = Tool.read("crm.lookup", {
        title: "Lookup",
        description: "Looks a customer up.",
        tags: ["pii"],
        sideEffects: ["reads the CRM"],
        input: Schema.Struct({ id: Schema.String }),
        output: Schema.String,
        run: ({ id }) => Effect.succeed(id)
      })
      const audit = Audit.memory()
      yield* Registry.make(Toolkit.make(Lookup)).invoke("crm.lookup", { id: "c-1" }).pipe(Effect.provide(audit.layer))
      expect(audit.entries.map((entry) => [entry.type, entry.tags, entry.sideEffects])).toEqual([
        ["called", ["pii"], ["reads the CRM"]],
        ["completed", ["pii"], ["reads the CRM"]]
      ])
    }))

  it.effect("a bad input is reported whole: every wrong field is named, not just the first", () =>
    Effect.gen(function*() {
      const { registry } = gated()
      const result = yield* registry.invoke("kb.search", { query: 42, limit: "ten", password: "hunter2" })
      expect(result).toMatchObject({ ok: false, code: "invalid-input" })
      expect(result.error).toContain(`["password"]`)
      expect(result.error).toContain("got 42")
      expect(result.error).toContain(`got "ten"`)
    }))

  it.effect("an output schema that needs an effect to encode still encodes, and a bad output is refused", () =>
    Effect.gen(function*() {
      // Encoding upper-cases the text, asynchronously, inside a struct.
      const Shout = Schema.String.pipe(Schema.decodeTo(
        Schema.String,
        SchemaTransformation.transformEffect({
          decode: (text) => Effect.succeed(text.toLowerCase()),
          encode: (text) => Effect.promise(async () => text.toUpperCase())
        })
      ))
      const Echo = Tool.read("echo.shout", {
        title: "Shout",
        description: "Echoes the text.",
        input: Schema.Struct({ text: Schema.String }),
        output: Schema.Struct({ said: Shout, length: Schema.Number.check(Schema.isGreaterThanOrEqualTo(0)) }),
        run: ({ text }) => Effect.succeed({ said: text, length: text === "bad" ? -1 : text.length })
      })
      const registry = Registry.make(Toolkit.make(Echo))
      expect(yield* registry.invoke("echo.shout", { text: "hi" })).toEqual({
        ok: true,
        data: { said: "HI", length: 2 }
      })
      expect(yield* registry.invoke("echo.shout", { text: "bad" })).toEqual({
        ok: false,
        code: "failed",
        error: "echo.shout produced a result it may not return."
      })
    }))

  it.effect("null means absent for an optional field nested in a list, even when every top-level field is required", () =>
    Effect.gen(function*() {
      const Tag = Tool.write("tickets.tag", {
        title: "Tag tickets",
        description: "Tags tickets.",
        input: Schema.Struct({
          tags: Schema.Array(Schema.Struct({ ticket: Schema.String, note: Schema.optional(Schema.String) }))
        }),
        output: Schema.Number,
        run: ({ tags }) => Effect.succeed(tags.filter((tag) => tag.note === undefined).length)
      })
      const registry = Registry.make(Toolkit.make(Tag))
      const result = yield* registry.invoke("tickets.tag", {
        tags: [{ ticket: "T-1", note: null }, { ticket: "T-2", note: "vip" }]
      })
        .pipe(Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:ann")]))))
      expect(result).toEqual({ ok: true, data: 1 })
    }))

  it.effect("gate 5: a defect becomes a fixed message; its cause goes to audit only", () =>
    Effect.gen(function*() {
      const Boom = Tool.read("kb.boom", {
        title: "Boom",
        description: "Throws.",
        input: Schema.Struct({}),
        output: Schema.String,
        run: () => {
          throw new Error("secret connection string")
        }
      })
      const Big = Tool.read("kb.big", {
        title: "Big",
        description: "Returns what JSON cannot hold.",
        input: Schema.Struct({}),
        output: Schema.Unknown,
        run: () => Effect.succeed({ n: 10n })
      })
      const audit = Audit.memory()
      const registry = Registry.make(Toolkit.make(Boom, Big))
      const boom = yield* registry.invoke("kb.boom", {}).pipe(Effect.provide(audit.layer))
      expect(boom).toEqual({ ok: false, code: "failed", error: "kb.boom failed unexpectedly." })
      const big = yield* registry.invoke("kb.big", {}).pipe(Effect.provide(audit.layer))
      expect(big).toEqual({ ok: false, code: "failed", error: "kb.big failed unexpectedly." })
      const failed = audit.entries.filter((entry) => entry.type === "failed")
      expect(failed).toHaveLength(2)
      expect(failed[0]?.type === "failed" && failed[0].cause).toContain("secret connection string")
    }))

  it.effect("input with a throwing getter cannot escape", () =>
    Effect.gen(function*() {
      const { registry } = gated()
      const hostile = Object.defineProperty({}, "query", {
        enumerable: true,
        get() {
          throw new Error("gotcha")
        }
      })
      const result = yield* registry.invoke("kb.search", hostile)
      expect(isToolResult(result)).toBe(true)
      expect(result.ok).toBe(false)
    }))

  it.effect("audits calls and refusals with the invocation context", () =>
    Effect.gen(function*() {
      const { registry } = gated()
      const audit = Audit.memory()
      yield* registry.invoke("ticket.submit", { subject: "x" }, { autonomous: true, actor: "bot", traceId: "t1" }).pipe(
        Effect.provide(Layer.merge(audit.layer, HumanConfirm.layer(HumanConfirm.scripted([]))))
      )
      expect(audit.entries).toMatchObject([
        { type: "refused", tool: "ticket.submit", gate: "autonomous", actor: "bot", traceId: "t1", autonomous: true }
      ])
    }))
})

describe("Registry.list and functionSchemas", () => {
  it("lists every tool with whether it is offered and why not", () => {
    const { registry } = gated()
    const listing = registry.list({ autonomous: true, page: "order", features: [] })
    expect(listing.map((entry) => [entry.name, entry.offered, entry.gate])).toEqual([
      ["kb.search", true, undefined],
      ["ticket.submit", false, "autonomous"],
      ["chat.sendMessage", false, "autonomous"],
      ["crm.history", false, "feature"],
      ["ticket.fields", false, "page"]
    ])
    expect(listing[1]?.reason).toBe("ticket.submit (write) needs WriteCapability")
  })

  it("an autonomous context never sees a write or send tool", () => {
    const { registry } = gated()
    const names = registry.functionSchemas({ autonomous: true, features: ["crm"] }).map((schema) => schema.name)
    expect(names).toEqual(["kb__search", "crm__history", "ticket__fields"])
    const human = registry.functionSchemas({ features: ["crm"] }).map((schema) => schema.name)
    expect(human).toContain("chat__sendMessage")
  })

  it("produces definitions valid for strict mode, with constraints moved into descriptions", () => {
    const Shapes = Tool.read("shapes.all", {
      title: "Shapes",
      description: "Every kind of field.",
      input: Schema.Struct({
        q: Schema.String.check(Schema.isMinLength(2), Schema.isMaxLength(10)).annotate({ description: "the query" }),
        n: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 5 }))),
        kind: Schema.Literals(["a", "b"]),
        when: Schema.optional(Schema.Literals(["now", "later"])),
        items: Schema.Array(
          Schema.Struct({ id: Schema.String.check(Schema.isUUID()), note: Schema.optional(Schema.String) })
        ),
        either: Schema.Union([Schema.Struct({ a: Schema.String }), Schema.Struct({ b: Schema.Number })]),
        nested: Schema.Struct({ deep: Schema.Struct({ flag: Schema.Boolean }) }),
        nothing: Schema.NullOr(Schema.String)
      }),
      output: Schema.String,
      run: () => Effect.succeed("ok")
    })
    const [definition] = Registry.make(Toolkit.make(Shapes)).functionSchemas()
    expect(definition?.strict).toBe(true)
    expect(Registry.strictViolations(definition?.parameters)).toEqual([])
    const properties = definition?.parameters.properties as Record<string, Record<string, unknown>>
    expect(properties.q?.description).toBe("the query (at least 2 characters, at most 10 characters)")
    expect(properties.n?.type).toEqual(["integer", "null"])
    expect(properties.when?.enum).toEqual(["now", "later", null])
    expect(definition?.parameters.required).toEqual(Object.keys(properties))
  })

  it("marks a schema strict mode cannot express as strict: false, saying why", () => {
    const Free = Tool.read("free.form", {
      title: "Free",
      description: "A record.",
      input: Schema.Struct({ tags: Schema.Record(Schema.String, Schema.String) }),
      output: Schema.String,
      run: () => Effect.succeed("ok")
    })
    const [definition] = Registry.make(Toolkit.make(Free)).functionSchemas()
    expect(definition?.strict).toBe(false)
    expect(Registry.strictViolations(definition?.parameters)).toContain("$.tags: additionalProperties must be false")
  })

  it("every definition of the support desk is strict-valid and uses wire names", () => {
    const { support } = makeDesk()
    for (const definition of Registry.make(support).functionSchemas()) {
      expect(definition.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/)
      expect(definition.strict).toBe(true)
      expect(Registry.strictViolations(definition.parameters)).toEqual([])
    }
  })
})

describe("Registry and HumanConfirm together", () => {
  it.effect("an edited send is validated again and delivers the edit", () =>
    Effect.gen(function*() {
      const { effects, registry } = gated()
      const layer = Layer.merge(
        HumanConfirm.layer(
          HumanConfirm.scripted([HumanConfirm.approve("agent:alice", { to: "customer:42", text: "Edited" })])
        ),
        Audit.memory().layer
      )
      const result = yield* registry.invoke("chat.sendMessage", { text: "Hi" }).pipe(Effect.provide(layer))
      expect(result.ok).toBe(true)
      expect(effects.delivered).toEqual([{ to: "customer:42", text: "Edited" }])
    }))
})
