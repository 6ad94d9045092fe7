// Every value a tool's code could import and change in place, for an effect
// to run later in a human's fiber, is read-only once graded is loaded: each
// package's exported effects, layers, tags and plain data (with the effects
// and data they hold), Effect's own exported ones, Effect's default services
// and the default runtime's refs. A new export that is not sealed fails here,
// naming it. packages/core/test/Adversarial.shared.test.ts keeps the attacks.
import * as Everything from "effect"
import { Context, DefaultServices, Effect, FiberRef, FiberRefs, Layer, Runtime } from "effect"
import { describe, expect, it } from "vitest"
import * as cli from "../packages/cli/src/index.js"
import * as confirm from "../packages/confirm/src/index.js"
import * as core from "../packages/core/src/index.js"
import * as mcp from "../packages/mcp/src/index.js"
import * as openai from "../packages/openai/src/index.js"
import * as policy from "../packages/policy/src/index.js"
import * as sql from "../packages/sql/src/index.js"

const packages = { cli, confirm, core, mcp, openai, policy, sql }

const isPlain = (value: object) => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null || Array.isArray(value)
}
const kinds = [
  Everything.Schedule.ScheduleTypeId,
  Everything.Supervisor.SupervisorTypeId,
  Everything.Stream.StreamTypeId,
  Everything.Sink.SinkTypeId,
  Everything.Channel.ChannelTypeId
]
const isBehaviour = (value: object) =>
  Effect.isEffect(value) || Layer.isLayer(value) || Context.isTag(value) || isPlain(value) ||
  kinds.some((kind) => kind in value)
const isStateful = (value: object) =>
  "unsafeAddObserver" in value || value instanceof Map || value instanceof Set || value instanceof RegExp ||
  value instanceof Promise || value instanceof Date || ArrayBuffer.isView(value)

/** The names under `name` of what is writable: the value or anything it holds of the sealed kinds. */
const writable = (name: string, value: unknown, seen = new Set<object>()): Array<string> => {
  if (typeof value !== "object" || value === null || seen.has(value)) return []
  seen.add(value)
  if (isStateful(value)) return []
  if (Context.isContext(value)) {
    return Object.isFrozen(value) && typeof Reflect.get(value.unsafeMap, "set") !== "function" ? [] : [name]
  }
  if (FiberRef.FiberRefTypeId in value) return Object.isFrozen(value) ? [] : [name]
  if (!isBehaviour(value)) return []
  const own = Object.isFrozen(value) ? [] : [name]
  return own.concat(
    Reflect.ownKeys(value).flatMap((key) => {
      const descriptor = Object.getOwnPropertyDescriptor(value, key)
      return descriptor !== undefined && "value" in descriptor
        ? writable(`${name}.${String(key)}`, descriptor.value, seen)
        : []
    })
  )
}

const exportsOf = (namespace: object) =>
  Object.entries(namespace).flatMap(([module, exported]) =>
    typeof exported === "object" && exported !== null
      ? Object.entries(exported).map(([name, value]) => [`${module}.${name}`, value] as const)
      : []
  )

describe("values every fiber shares are sealed once graded is loaded", () => {
  for (const [name, namespace] of Object.entries(packages)) {
    it(`@graded/${name}'s exports`, () => {
      const found = exportsOf(namespace)
      expect(found.length).toBeGreaterThan(0)
      expect(found.flatMap(([key, value]) => writable(key, value))).toEqual([])
    })
  }

  // What an app keeps in a module of its own: a tool's code could import it.
  it("the layers graded's constructors return, and the UI HumanConfirm.scripted makes", () => {
    const { Audit, Guard, HumanConfirm, Registry, ScriptedModel, Toolkit } = core
    const registry = Registry.make(Toolkit.make())
    const made = {
      "HumanConfirm.layer": HumanConfirm.layer(HumanConfirm.scripted([])),
      "HumanConfirm.trigger": HumanConfirm.trigger({ by: "agent:alice", via: "test" }),
      "Audit.layer": Audit.layer(() => Effect.void),
      "Audit.layerSync": Audit.layerSync(() => undefined),
      "Audit.memory().layer": Audit.memory().layer,
      "Audit.jsonl": Audit.jsonl("audit.jsonl"),
      "Guard.layer": Guard.layer({
        name: "none",
        screen: () => Effect.succeed({ left: new Map() }),
        admit: () => Effect.succeed(undefined)
      }),
      "ScriptedModel.layer": ScriptedModel.layer([]),
      "Capability.make(...).layer": core.Capability.make("SealedTestConsent").layer("agent:alice"),
      "TerminalConfirm.layer": confirm.TerminalConfirm.layer(),
      "WebConfirm.layer": confirm.WebConfirm.layer({ singleUser: true }),
      "OpenAiModel.layer": openai.OpenAiModel.layer({ model: "m", apiKey: "k", baseURL: "http://127.0.0.1:9/v1" }),
      "Sql.sqlite": sql.Sql.sqlite({ filename: ":memory:" }),
      "Sql.postgres": sql.Sql.postgres({ url: "postgres://127.0.0.1:9/none" }),
      "SqlAudit.open": sql.SqlAudit.open({ sqlite: ":memory:" }),
      "McpServe.layerStdio": mcp.McpServe.layerStdio(registry),
      "McpServe.layerHttp": mcp.McpServe.layerHttp(registry)
    }
    expect(Object.entries(made).flatMap(([key, value]) => writable(key, value))).toEqual([])
    for (const [key, value] of Object.entries(made)) expect([key, Object.isFrozen(value)]).toEqual([key, true])
    // Its `seen` is state: graded adds each view it shows.
    expect(Object.isFrozen(HumanConfirm.scripted([]))).toBe(true)
  })

  it("Effect's exports", () => {
    expect(exportsOf(Everything).flatMap(([key, value]) => writable(key, value))).toEqual([])
    expect(Object.isFrozen(Everything.Clock.currentTimeMillis)).toBe(true)
    expect(Object.isFrozen(Everything.Schedule.once)).toBe(true)
    expect(Object.isFrozen(Everything.Supervisor.none)).toBe(true)
  })

  it("Effect's default services, the clock in them, and the default runtime's refs", () => {
    const live = FiberRefs.getOrDefault(Runtime.defaultRuntime.fiberRefs, DefaultServices.currentServices)
    expect(writable("defaultServices", live)).toEqual([])
    const clock = Context.get(live, Everything.Clock.Clock)
    expect(Object.isFrozen(clock)).toBe(true)
    expect(Object.isFrozen(clock.currentTimeMillis)).toBe(true)
    expect(Object.isFrozen(Runtime.defaultRuntime)).toBe(true)
    expect(typeof Reflect.get(Runtime.defaultRuntime.fiberRefs.locals, "set")).not.toBe("function")
    // Still works: a root fiber reads the time.
    expect(Effect.runSync(Everything.Clock.currentTimeMillis)).toBeGreaterThan(0)
  })
})
