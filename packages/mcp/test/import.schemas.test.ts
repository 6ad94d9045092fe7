// McpImport with a foreign server whose listing is built to break the importer:
// schemas AJV cannot compile, schemas nested thousands deep, a cursor that never
// ends, schemas that name themselves ($id) to stand for another's. Each gives a
// structured outcome: the tool skipped, or ImportFailed naming the tool or the
// limit; never a defect, a hang, or arguments checked against the wrong schema.
import { afterEach, describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool as SdkTool } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Deferred, Effect, Exit, Fiber, Option, PubSub } from "effect"
import { Registry, Toolkit } from "@graded/core"
import { McpImport } from "@graded/mcp"
import * as v8 from "node:v8"
import * as vm from "node:vm"

const open: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of open.splice(0)) await close()
})

interface Foreign {
  /** What the server lists now; a test may change it. */
  listing: Array<SdkTool>
  /** The cursor of the page after the one asked for; none, the last page. */
  nextCursor: (cursor: string | undefined) => string | undefined
  /** Waited on before each page is answered. */
  beforePage: (page: number) => Promise<void>
  readonly received: Array<{ readonly name: string; readonly args: unknown }>
  listCalls: number
  readonly server: Server
  readonly client: Client
}

const foreign = async (listing: Array<SdkTool>): Promise<Foreign> => {
  const server = new Server({ name: "hostile", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } })
  const state: Foreign = {
    listing,
    nextCursor: () => undefined,
    // A real server answers over I/O: timers run between pages.
    beforePage: () => new Promise((resolve) => setImmediate(resolve)),
    received: [],
    listCalls: 0,
    server,
    client: new Client({ name: "graded-test", version: "0.1.0" })
  }
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    await state.beforePage(++state.listCalls)
    const next = state.nextCursor(request.params?.cursor)
    return { tools: state.listing, ...(next !== undefined ? { nextCursor: next } : {}) }
  })
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    state.received.push({ name: request.params.name, args: request.params.arguments })
    return { content: [{ type: "text", text: "ok" }] }
  })
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
  await server.connect(serverTransport)
  await state.client.connect(clientTransport)
  open.push(() => state.client.close())
  return state
}

const search: SdkTool = {
  name: "search",
  description: "Search.",
  inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] }
}

/** An object schema nesting `depth` objects, each under the property `a`. */
const nested = (depth: number): SdkTool["inputSchema"] => {
  let node: Record<string, unknown> = { type: "string" }
  for (let i = 0; i < depth; i++) node = { type: "object", properties: { a: node } }
  return { type: "object", properties: { a: node } }
}

const uncompilable: ReadonlyArray<readonly [string, SdkTool["inputSchema"], string]> = [
  ["a type AJV does not know", { type: "object", properties: { a: { type: "nope" } } }, "nope"],
  ["a $ref to a remote URL", {
    type: "object",
    properties: { a: { $ref: "https://evil.example/schema.json" } }
  }, "evil.example"],
  ["a pattern that is not a regular expression", {
    type: "object",
    properties: { a: { type: "string", pattern: "(" } }
  }, "regular expression"],
  ["an $id AJV cannot serialize (a URN without its namespace id)", { type: "object", $id: "urn:x" }, "URN"],
  ["objects nested 5,000 deep", nested(5_000), "deeper than 100 levels"]
]

/** The ImportFailed an exit failed with; a defect, or a success, fails the test. */
const importFailed = <A, E>(exit: Exit.Exit<A, E>): McpImport.ImportFailed => {
  const failure = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : Option.none()
  const shown = Exit.isFailure(exit) ? Cause.pretty(exit.cause).slice(0, 400) : "a success"
  if (Option.isNone(failure) || !(failure.value instanceof McpImport.ImportFailed)) {
    throw new Error(`expected ImportFailed, got ${shown}`)
  }
  return failure.value
}

describe("McpImport: a listing whose schemas cannot be compiled", () => {
  for (const [what, inputSchema, why] of uncompilable) {
    it.effect(`a tool nobody graded with ${what}: skipped with the reason, the others imported`, () =>
      Effect.gen(function*() {
        const f = yield* Effect.promise(() => foreign([search, { name: "evil", inputSchema }]))
        const toolkit = yield* McpImport.toolkit(f.client, { search: "read" }, { namespace: "h" })
        expect(toolkit.get("h.evil")).toBeUndefined()
        expect(McpImport.skipped(toolkit)).toEqual([{ serverName: "evil", reason: expect.stringContaining(why) }])
        expect(McpImport.skipped(toolkit)[0]?.reason).toMatch(/^its input schema cannot be compiled: /)
        expect(McpImport.claims(toolkit).map((claim) => claim.serverName)).toEqual(["search"])
        expect(yield* Toolkit.readOnly(toolkit).get("h.search")!.invoke({ query: "q" })).toBe("ok")
      }))

    it.effect(`a graded tool with ${what}: ImportFailed naming the tool and why`, () =>
      Effect.gen(function*() {
        const f = yield* Effect.promise(() => foreign([search, { name: "evil", inputSchema }]))
        const exit = yield* Effect.exit(McpImport.toolkit(f.client, { search: "read", evil: "read" }))
        const error = importFailed(exit)
        expect(error.reason).toMatch(/^evil: its input schema cannot be compiled: /)
        expect(error.reason).toContain(why)
      }))
  }

  it.effect("a schema nested 100 levels deep is still imported", () =>
    Effect.gen(function*() {
      // The root object and its `properties` are two levels, and each nested object two more.
      const f = yield* Effect.promise(() => foreign([{ name: "deep", inputSchema: nested(48) }]))
      const toolkit = yield* McpImport.toolkit(f.client, { deep: "read" }, { namespace: "h" })
      expect(McpImport.skipped(toolkit)).toEqual([])
      expect(toolkit.get("h.deep")).toBeDefined()
    }))
})

describe("McpImport: a listing that never ends", () => {
  it.effect("a nextCursor that never ends: ImportFailed after 100 pages", () =>
    Effect.gen(function*() {
      const f = yield* Effect.promise(() => foreign([search]))
      let page = 0
      f.nextCursor = () => `page-${++page}`
      const error = importFailed(yield* Effect.exit(McpImport.toolkit(f.client, { search: "read" })))
      expect(error.reason).toBe("the server's listing runs past 100 pages (the limit)")
      expect(f.listCalls).toBe(100)
    }))

  it.effect("a cursor the listing already gave: ImportFailed at once", () =>
    Effect.gen(function*() {
      const f = yield* Effect.promise(() => foreign([search]))
      f.nextCursor = (cursor) => cursor === undefined ? "a" : cursor === "a" ? "b" : "a"
      const error = importFailed(yield* Effect.exit(McpImport.toolkit(f.client, { search: "read" })))
      expect(error.reason).toBe("the server's listing repeats a cursor after page 3")
      expect(f.listCalls).toBe(3)
    }))

  it.effect("more than 10,000 tools: ImportFailed naming the limit", () =>
    Effect.gen(function*() {
      const many = Array.from(
        { length: 2_001 },
        (_, i): SdkTool => ({ name: `t${i}`, inputSchema: { type: "object" } })
      )
      const f = yield* Effect.promise(() => foreign(many))
      let page = 0
      f.nextCursor = () => ++page < 5 ? `page-${page}` : undefined
      const error = importFailed(yield* Effect.exit(McpImport.toolkit(f.client, { t0: "read" })))
      expect(error.reason).toBe("the server lists more than 10000 tools (the limit)")
      expect(f.listCalls).toBe(5)
    }))

  it.live("an import interrupted while it pages asks for no page after", () =>
    Effect.gen(function*() {
      const f = yield* Effect.promise(() => foreign([search]))
      const third = yield* Deferred.make<void>()
      let release = (): void => undefined
      const held = new Promise<void>((resolve) => release = resolve)
      let page = 0
      f.nextCursor = () => `page-${++page}`
      f.beforePage = (n) => {
        if (n !== 3) return new Promise((resolve) => setImmediate(resolve))
        Deferred.doneUnsafe(third, Exit.void)
        return held
      }
      const importing = yield* Effect.forkChild(McpImport.toolkit(f.client, { search: "read" }))
      yield* Deferred.await(third)
      yield* Fiber.interrupt(importing)
      release()
      // Round trips to the server: a loop still paging would ask for page 4 meanwhile.
      for (let i = 0; i < 20; i++) yield* Effect.promise(() => f.client.ping())
      expect(f.listCalls).toBe(3)
    }))
})

describe("McpImport: a foreign pattern runs in linear time", () => {
  const catastrophic: SdkTool = {
    name: "lookup",
    inputSchema: {
      type: "object",
      properties: { code: { type: "string", pattern: "^(a+)+$" } },
      // A key is matched against this; 30 x's match nothing, so it is one too many.
      patternProperties: { "^(x+x+)+y$": { type: "number" } },
      additionalProperties: false,
      required: ["code"]
    }
  }

  it.effect("a pattern that backtracks catastrophically checks 30 a's and a '!' at once: invalid input, nothing sent", () =>
    Effect.gen(function*() {
      const f = yield* Effect.promise(() => foreign([catastrophic]))
      const registry = Registry.make(Toolkit.readOnly(yield* McpImport.toolkit(f.client, { lookup: "read" })))
      const started = performance.now()
      const refused = yield* registry.invoke("mcp.lookup", { code: "a".repeat(30) + "!" })
      const keyRefused = yield* registry.invoke("mcp.lookup", { code: "aaa", ["x".repeat(30)]: 1 })
      const elapsed = performance.now() - started
      expect(refused).toMatchObject({ ok: false, code: "invalid-input" })
      expect(keyRefused).toMatchObject({ ok: false, code: "invalid-input" })
      // A backtracking engine needs half a minute for these (still seconds on a
      // machine several times faster), a linear one milliseconds: the bound tells
      // them apart on a machine busy enough to stretch the milliseconds twentyfold.
      expect(elapsed).toBeLessThan(5_000)
      expect(yield* registry.invoke("mcp.lookup", { code: "aaa" })).toMatchObject({ ok: true })
      expect(f.received.map((call) => call.args)).toEqual([{ code: "aaa" }])
    }))

  it.effect("a pattern that needs backtracking (a lookahead, a back-reference): the tool is refused, naming the pattern", () =>
    Effect.gen(function*() {
      const f = yield* Effect.promise(() =>
        foreign([search, {
          name: "evil",
          inputSchema: { type: "object", properties: { a: { type: "string", pattern: "^(?=a)(a)\\1$" } } }
        }])
      )
      const toolkit = yield* McpImport.toolkit(f.client, { search: "read" }, { namespace: "h" })
      expect(toolkit.get("h.evil")).toBeUndefined()
      expect(McpImport.skipped(toolkit)[0]?.reason).toContain(
        `the pattern "^(?=a)(a)\\\\1$" is not a regular expression graded runs in linear time`
      )
    }))
})

describe("McpImport: a schema that names itself ($id) is checked as itself", () => {
  const strict = (id: string): SdkTool["inputSchema"] => ({
    type: "object",
    $id: id,
    properties: { n: { type: "integer", maximum: 10 } },
    required: ["n"],
    additionalProperties: false
  })

  it.effect("two servers whose input schemas share an $id: the second server's tool is checked against its own", () =>
    Effect.gen(function*() {
      const id = "https://schemas.example/shared-args.json"
      const hostile = yield* Effect.promise(() =>
        foreign([{ name: "anything", inputSchema: { type: "object", $id: id } }])
      )
      yield* McpImport.toolkit(hostile.client, { anything: "read" }, { namespace: "evil" })
      const trusted = yield* Effect.promise(() => foreign([{ name: "lookup", inputSchema: strict(id) }]))
      const toolkit = Toolkit.readOnly(
        yield* McpImport.toolkit(trusted.client, { lookup: "read" }, { namespace: "good" })
      )
      const result = yield* Registry.make(toolkit).invoke("good.lookup", { n: 1_000_000, extra: "x" })
      expect(result).toMatchObject({ ok: false, code: "invalid-input" })
      expect(trusted.received).toEqual([])
    }))

  it.effect("two tools of one server sharing an $id: each is checked against its own schema", () =>
    Effect.gen(function*() {
      const id = "https://schemas.example/args.json"
      const f = yield* Effect.promise(() =>
        foreign([{ name: "anything", inputSchema: { type: "object", $id: id } }, {
          name: "lookup",
          inputSchema: strict(id)
        }])
      )
      const toolkit = Toolkit.readOnly(yield* McpImport.toolkit(f.client, { anything: "read", lookup: "read" }))
      const result = yield* Registry.make(toolkit).invoke("mcp.lookup", { n: 1_000_000 })
      expect(result).toMatchObject({ ok: false, code: "invalid-input" })
      expect(f.received).toEqual([])
    }))
})

describe("McpImport.live: a hostile listing", () => {
  it.live("a tool reshaped under the same $id: arguments its new schema refuses are not sent", () =>
    Effect.gen(function*() {
      const id = "https://schemas.example/reshaped.json"
      const f = yield* Effect.promise(() =>
        foreign([{ name: "lookup", inputSchema: { type: "object", $id: id, properties: { n: { type: "number" } } } }])
      )
      const live = yield* McpImport.live(f.client, { lookup: "read" }, { namespace: "r" })
      const before = Toolkit.readOnly(yield* live.toolkit)
      f.listing = [{
        name: "lookup",
        inputSchema: { type: "object", $id: id, properties: { n: { type: "number", maximum: 10 } } }
      }]
      expect(yield* live.refresh).toEqual({ added: [], removed: [], changed: ["r.lookup"] })
      const after = Toolkit.readOnly(yield* live.toolkit)
      // The new toolkit refuses them as it decodes; the one imported before, at its server's latest listing.
      expect(yield* Registry.make(after).invoke("r.lookup", { n: 1_000 })).toMatchObject({
        ok: false,
        code: "invalid-input"
      })
      const stale = yield* Effect.flip(before.get("r.lookup")!.invoke({ n: 1_000 }))
      expect(stale).toMatchObject({ _tag: "@graded/mcp/McpImport/Changed", change: "input" })
      expect(f.received).toEqual([])
    }))

  it.live("a graded tool whose refreshed schema cannot be compiled: refresh fails naming it, and calls stop", () =>
    Effect.gen(function*() {
      const f = yield* Effect.promise(() => foreign([search]))
      const live = yield* McpImport.live(f.client, { search: "read" }, { namespace: "h" })
      const tool = Toolkit.readOnly(yield* live.toolkit).get("h.search")!
      yield* tool.invoke({ query: "first" })
      f.listing = [{
        ...search,
        inputSchema: { type: "object", properties: { query: { type: "string", pattern: "(" } } }
      }]
      const error = importFailed(yield* Effect.exit(live.refresh))
      expect(error.reason).toMatch(/^search: its input schema cannot be compiled: /)
      const refused = yield* Effect.flip(tool.invoke({ query: "second" }))
      expect(refused).toMatchObject({ _tag: "@graded/mcp/McpImport/Changed", change: "unlisted" })
      expect(f.received.map(({ args }) => args)).toEqual([{ query: "first" }])
    }))

  it.live("an ungraded tool whose schema stops compiling is left out of the next toolkit, reported removed", () =>
    Effect.gen(function*() {
      const f = yield* Effect.promise(() => foreign([search, { name: "extra", inputSchema: { type: "object" } }]))
      const live = yield* McpImport.live(f.client, { search: "read" }, { namespace: "h" })
      expect((yield* live.toolkit).get("h.extra")?.grade).toBe("send")
      f.listing = [search, { name: "extra", inputSchema: { type: "object", properties: { a: { type: "nope" } } } }]
      expect(yield* live.refresh).toEqual({ added: [], removed: ["h.extra"], changed: [] })
      const toolkit = yield* live.toolkit
      expect(toolkit.get("h.extra")).toBeUndefined()
      expect(McpImport.skipped(toolkit)).toEqual([
        { serverName: "extra", reason: expect.stringMatching(/^its input schema cannot be compiled: /) }
      ])
    }))

  it.live("the notification loop survives a listing that cannot be compiled, and follows the next one", () =>
    Effect.gen(function*() {
      const f = yield* Effect.promise(() => foreign([search]))
      const live = yield* McpImport.live(f.client, { search: "read" }, { namespace: "h" })
      const changes = yield* live.changes
      f.listing = [search, { name: "evil", inputSchema: { type: "object", properties: { a: { type: "nope" } } } }]
      yield* Effect.promise(() => f.server.sendToolListChanged())
      expect(yield* PubSub.take(changes)).toEqual({ added: [], removed: [], changed: [] })
      expect(McpImport.skipped(yield* live.toolkit).map(({ serverName }) => serverName)).toEqual(["evil"])
      f.listing = [search, { name: "added", inputSchema: { type: "object" } }]
      yield* Effect.promise(() => f.server.sendToolListChanged())
      expect(yield* PubSub.take(changes)).toEqual({ added: ["h.added"], removed: [], changed: [] })
    }))

  it.live("a graded tool nested 5,000 deep in a refreshed listing: the notification loop reports it and goes on", () =>
    Effect.gen(function*() {
      const f = yield* Effect.promise(() => foreign([search]))
      const live = yield* McpImport.live(f.client, { search: "read" }, { namespace: "h" })
      const changes = yield* live.changes
      f.listing = [{ ...search, inputSchema: nested(5_000) }]
      yield* Effect.promise(() => f.server.sendToolListChanged())
      const failed = yield* PubSub.take(changes)
      expect(failed.failed).toMatch(/^search: its input schema cannot be compiled: the schema nests deeper than 100/)
      f.listing = [search]
      yield* Effect.promise(() => f.server.sendToolListChanged())
      expect(yield* PubSub.take(changes)).toEqual({ added: [], removed: [], changed: [] })
      expect(yield* Toolkit.readOnly(yield* live.toolkit).get("h.search")!.invoke({ query: "q" })).toBe("ok")
    }))

  it.live(
    "a server flooding list_changed: what 1,000 refreshes compiled is let go once the scope closes",
    () =>
      Effect.gen(function*() {
        v8.setFlagsFromString("--expose-gc")
        const collect: unknown = vm.runInNewContext("gc")
        const gc = () => {
          if (typeof collect === "function") collect()
        }
        const wide: SdkTool = {
          name: "wide",
          inputSchema: {
            type: "object",
            properties: Object.fromEntries(
              Array.from({ length: 20 }, (_, i) => [`f${i}`, { type: "string", description: "x".repeat(200) }])
            )
          }
        }
        const f = yield* Effect.promise(() => foreign([wide]))
        gc()
        const before = process.memoryUsage().heapUsed
        yield* Effect.scoped(Effect.gen(function*() {
          const live = yield* McpImport.live(f.client, { wide: "read" }, { namespace: "w" })
          for (let i = 0; i < 1_000; i++) {
            // Each listing is new JSON from the wire, as a real server's is.
            f.listing = [structuredClone(wide)]
            yield* live.refresh
          }
        }))
        gc()
        const retained = (process.memoryUsage().heapUsed - before) / 1e6
        expect(retained, `${retained.toFixed(1)} MB still held after the live import's scope closed`).toBeLessThan(15)
      }), // A thousand compilations, seconds of CPU that a loaded machine stretches: the bound only catches a hang.
    300_000
  )
})
