import { describe, expect, it } from "@effect/vitest"
import { Printable } from "@graded/core"

describe("Printable.display", () => {
  it("cuts a long text at the field limit and says how much it left out", () => {
    const shown = Printable.display({ to: "customer:4", text: "x".repeat(50) }, { field: 10 })
    const text = shown.fields.find((field) => field.key === "text")!
    expect(text).toMatchObject({ path: ["text"], kind: "string", text: "x".repeat(10), length: 50, cut: 40 })
    expect(shown.fields.find((field) => field.key === "to")).toMatchObject({ text: "customer:4", cut: 0 })
    expect(shown.cut).toBe(true)
    expect(shown.shown).toBeLessThan(shown.total)
    expect(Printable.display({ text: "short" }, { field: 10 }).cut).toBe(false)
  })

  it("stops at the total and lists where: nothing past it is in the model", () => {
    const shown = Printable.display({ text: "a".repeat(20), cc: ["leak@attacker.example"] }, { total: 10 })
    expect(shown.fields.map((field) => field.kind)).toEqual(["object", "string", "rest"])
    expect(JSON.stringify(shown)).not.toContain("leak")
    expect(shown).toMatchObject({ cut: true, shown: 10 })
  })

  it("lists the characters that hide or reorder text, and controls, shown or cut, each field its own", () => {
    const shown = Printable.display({ name: "invoice\u202Efdp.exe", note: `ok\u001B[2K${"y".repeat(20)}\u200B` }, {
      field: 8
    })
    expect(shown.hidden).toEqual(["\\u202E", "\\u001B", "\\u200B"])
    const [, name, note] = shown.fields
    expect(name).toMatchObject({ text: "invoice\\u202E", hidden: ["\\u202E"] })
    // The zero-width space is in the part left out, and still listed.
    expect(note).toMatchObject({ text: "ok\\u001B[2Kyy", hidden: ["\\u001B", "\\u200B"], cut: 19 })
    expect(Printable.display({ plain: "accents é, emoji 🙂\ttab" }).hidden).toEqual([])
  })

  it("escapes by Printable's rules, a backslash doubled, line breaks kept in a multi-line text", () => {
    const [, literal, lines] = Printable.display({ literal: "a\\u202E", lines: "one\r\ntwo\u2028" }).fields
    expect(literal).toMatchObject({ text: "a\\\\u202E", hidden: [], multiline: false })
    expect(lines).toMatchObject({ text: "one\ntwo\\u2028", multiline: true })
    const [, key] = Printable.display({ "to\n\"x\"": 1 }).fields
    expect(key).toMatchObject({ key: "to\\n\"x\"", text: "1", kind: "number" })
  })

  it("gives nested objects and arrays their paths, containers before their members", () => {
    const shown = Printable.display({ a: [1, { b: null }], e: {} })
    expect(shown.fields.map(({ kind, path, text }) => ({ path, kind, text }))).toEqual([
      { path: [], kind: "object", text: "" },
      { path: ["a"], kind: "array", text: "" },
      { path: ["a", 0], kind: "number", text: "1" },
      { path: ["a", 1], kind: "object", text: "" },
      { path: ["a", 1, "b"], kind: "null", text: "null" },
      { path: ["e"], kind: "object", text: "{}" }
    ])
    const circular: Record<string, unknown> = {}
    circular.self = circular
    expect(Printable.display(circular).fields.map((field) => field.kind)).toEqual(["object", "circular"])
  })

  it("is frozen and serialisable", () => {
    const shown = Printable.display({ a: ["x\u202E"] })
    expect(Object.isFrozen(shown)).toBe(true)
    expect(Object.isFrozen(shown.fields)).toBe(true)
    expect(Object.isFrozen(shown.hidden)).toBe(true)
    for (const field of shown.fields) {
      expect(Object.isFrozen(field)).toBe(true)
      expect(Object.isFrozen(field.path)).toBe(true)
      expect(Object.isFrozen(field.hidden)).toBe(true)
    }
    expect(JSON.parse(JSON.stringify(shown))).toEqual(JSON.parse(JSON.stringify({ ...shown })))
    expect(JSON.parse(JSON.stringify(shown)).fields[2]).toMatchObject({ path: ["a", 0], text: "x\\u202E" })
  })
})

// Columns as a terminal gives them: a CJK character or an emoji two, a tab up to eight.
const columns = (row: string) =>
  [...row].reduce((sum, c) => sum + (c === "\t" ? 8 : c.codePointAt(0)! < 0x1100 ? 1 : 2), 0)

describe("Printable.rows and lines at a width", () => {
  it("cuts every line into rows no wider than the terminal, each after the first behind its indentation and ↳", () => {
    const text = `REFUSED x: ${"y".repeat(100)}\n  detail ${"漢字🙂\t".repeat(20)}`
    for (const width of [20, 80, 120]) {
      const rows = Printable.rows(text, width)
      for (const row of rows) expect(columns(row)).toBeLessThanOrEqual(width)
      expect(rows[0]!.startsWith("REFUSED x: ")).toBe(true)
      const detail = rows.findIndex((row) => row.startsWith("  detail "))
      expect(rows.filter((_, i) => i !== 0 && i !== detail).every((row) => /^ {2,4}↳ /.test(row))).toBe(true)
      // Nothing is lost: the rows joined back are the text.
      expect(rows.join("\n").replace(/\n +↳ /g, "")).toBe(text)
    }
  })

  it("escapes what it cuts, and leaves a line whole without a width", () => {
    expect(Printable.rows("a\u202Eb\u001B[2K", 80)).toEqual(["a\\u202Eb\\u001B[2K"])
    const shown = Printable.display({ text: "word ".repeat(40) })
    expect(Printable.lines(shown)).toHaveLength(1)
    const rows = Printable.lines(shown, { width: 40 })
    expect(rows.length).toBeGreaterThan(1)
    expect(rows.slice(1).every((row) => row.startsWith("  ↳ ") && columns(row) <= 40)).toBe(true)
  })
})
