import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Audit, Registry, Tool, Toolkit, Trim } from "@graded/core"

// A page of a query API that returns 511 KB, as in the first article.
const bigPage = () =>
  Array.from({ length: 1200 }, (_, i) => ({
    id: `row-${i}`,
    subject: `Ticket ${i} ${"lorem ipsum ".repeat(30)}`,
    body: "x".repeat(60),
    internal: { raw: "y".repeat(20) }
  }))

const Row = Schema.Struct({ id: Schema.String, subject: Schema.String, body: Schema.String })

describe("trimming inside tools", () => {
  it.effect("a 511 KB result reaches the model as valid JSON within the limit, with a visible marker", () =>
    Effect.gen(function*() {
      const rows = bigPage()
      const raw = JSON.stringify(rows).length
      expect(raw).toBeGreaterThan(500_000)
      const Query = Tool.read("tickets.query", {
        title: "Query tickets",
        description: "One page of tickets.",
        input: Schema.Struct({}),
        output: Schema.Array(Row),
        run: () => Effect.succeed(rows)
      })
      const result = yield* Registry.make(Toolkit.make(Query)).invoke("tickets.query", {})
      const text = JSON.stringify(result)
      expect(text.length).toBeLessThanOrEqual(Trim.defaultMaxChars)
      const parsed = JSON.parse(text)
      expect(parsed.ok).toBe(true)
      expect(parsed.truncated).toMatch(/trimmed/)
      expect(parsed.data[0].id).toBe("row-0")
      expect(JSON.stringify(parsed.data)).toContain("more items cut")
      // Encoding through the output schema dropped the undeclared field.
      expect(text).not.toContain("internal")
    }))

  it.effect("maxItems cuts every list and says so; maxChars is the tool's own", () =>
    Effect.gen(function*() {
      // Not the shared desk's search: limits are part of a tool's definition, and this one returns 50 rows.
      const Search = Tool.read("kb.search", {
        title: "Search",
        description: "Articles.",
        input: Schema.Struct({}),
        output: Schema.Array(Schema.String),
        limits: { maxItems: 5, maxChars: 200 },
        run: () => Effect.succeed(Array.from({ length: 50 }, (_, i) => `article ${i}`))
      })
      const result = yield* Registry.make(Toolkit.make(Search)).invoke("kb.search", {})
      expect(result.data).toEqual([
        "article 0",
        "article 1",
        "article 2",
        "article 3",
        "article 4",
        "[45 more items cut]"
      ])
      expect(result.truncated).toBe("The result was trimmed: 45 array item(s) cut (at most 5 per list).")
      expect(JSON.stringify(result).length).toBeLessThanOrEqual(200)
    }))

  it.effect("a result at the limit is kept whole, one character over is trimmed; audit counts what the model sees", () =>
    Effect.gen(function*() {
      const echo = (maxChars: number) =>
        Tool.read("echo.text", {
          title: "Echo",
          description: "Returns the text.",
          input: Schema.Struct({ text: Schema.String }),
          output: Schema.String,
          limits: { maxChars },
          run: ({ text }) => Effect.succeed(text)
        })
      const text = "y".repeat(100)
      const exact = JSON.stringify({ ok: true, data: text }).length
      const audit = Audit.memory()
      const atLimit = yield* Registry.make(Toolkit.make(echo(exact))).invoke("echo.text", { text }).pipe(
        Effect.provide(audit.layer)
      )
      expect(atLimit).toEqual({ ok: true, data: text })
      const over = yield* Registry.make(Toolkit.make(echo(exact - 1))).invoke("echo.text", { text }).pipe(
        Effect.provide(audit.layer)
      )
      expect(over.truncated).toMatch(/character\(s\) of text cut/)
      expect(JSON.stringify(over).length).toBeLessThanOrEqual(exact - 1)
      const chars = audit.entries.flatMap((entry) => entry.type === "completed" ? [entry.chars] : [])
      expect(chars).toEqual([exact, JSON.stringify(over).length])
    }))

  it("a result small enough is left alone", () => {
    const trimmed = Trim.fit({ a: [1, 2, 3], b: "short" }, { render: (value) => JSON.stringify(value) })
    expect(trimmed).toEqual({ value: { a: [1, 2, 3], b: "short" }, truncated: undefined })
  })

  it("one long string is cut with a marker, the JSON staying valid", () => {
    const trimmed = Trim.fit({ text: "z".repeat(100_000) }, {
      maxChars: 500,
      render: (value, t) => JSON.stringify({ value, t })
    })
    const text = JSON.stringify({ value: trimmed.value, t: trimmed.truncated })
    expect(text.length).toBeLessThanOrEqual(500)
    expect((trimmed.value as { text: string }).text).toMatch(/more characters cut\]$/)
  })

  it("what cannot be cut down is replaced by a note, still valid JSON", () => {
    const wide = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`key${i}`, i]))
    const trimmed = Trim.fit(wide, { maxChars: 300, render: (value, t) => JSON.stringify({ value, t }) })
    expect(trimmed.value).toBeNull()
    expect(trimmed.truncated).toMatch(/too large to show/)
  })
})
