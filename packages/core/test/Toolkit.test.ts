import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Tool, Toolkit } from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const ping = (name: string) =>
  Tool.read(name, {
    title: "Ping",
    description: "Answers pong.",
    input: Schema.Struct({}),
    output: Schema.String,
    run: () => Effect.succeed("pong")
  })

describe("Toolkit", () => {
  it("keeps tools in order and finds them by name", () => {
    const { KbSearch, SendReply, support } = makeDesk()
    expect(support.tools.map((tool) => tool.name)).toEqual(["kb.search", "ticket.submit", "chat.sendMessage"])
    expect(support.get("kb.search")).toBe(KbSearch)
    expect(support.get("chat.sendMessage")).toBe(SendReply)
    expect(support.get("kb__search")).toBeUndefined()
    expect(Toolkit.isToolkit(support)).toBe(true)
  })

  it("readOnly keeps the read tools only", () => {
    const { support } = makeDesk()
    expect(Toolkit.readOnly(support).tools.map((tool) => tool.name)).toEqual(["kb.search"])
    expect(Toolkit.readOnly(Toolkit.make()).tools).toEqual([])
  })

  it("refuses two tools of one name at construction, naming it", () => {
    const names: Array<string> = ["net.ping", "net.ping"]
    const tools = names.map(ping)
    expect(() => Toolkit.make(...tools)).toThrow(`Tool name 'net.ping' is used by more than one tool in this toolkit`)
  })

  it("refuses a tool whose name was cast past the checks", () => {
    const tool = { ...ping("net.ping"), name: "a__b" }
    const make = Toolkit.make as (...tools: ReadonlyArray<Tool.Any>) => Toolkit.Any
    // A copy made to carry the bad name is not a tool Tool.read made.
    expect(() => make(tool)).toThrow(`Tool 'a__b' was not made by Tool.read, Tool.write or Tool.send`)
  })
})
