// Every value a tool's code could import and change in place, for an effect
// to run later in a human's fiber, is read-only once graded is loaded: each
// package's exported effects, layers, services, references and plain data
// (with the effects and data they hold), Effect's own exported ones, the
// default value of every reference Effect exports (the clock, the scheduler,
// the tracer, the loggers: what every fiber that provides none reads), and
// the empty context every root fiber starts from. A new export that is not
// sealed fails here, naming it. packages/core/test/Adversarial.shared.test.ts
// keeps the attacks.
//
// Effect 3 to Effect 4: fiber refs are references (`Context.Reference`), the
// default services a reference's default value, `Runtime.defaultRuntime` the
// empty context; Effect 4 has no Supervisor.
import * as Everything from "effect"
import { Channel, Clock, Context, Effect, Fiber, Layer, Metric, Schedule, Sink, Stream } from "effect"
import * as EffectCli from "effect/cli"
import * as EffectHttp from "effect/http"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import * as Statement from "effect/sql/Statement"
import { describe, expect, it } from "vitest"
import * as cli from "../packages/cli/src/index.js"
import * as confirm from "../packages/confirm/src/index.js"
import * as core from "../packages/core/src/index.js"
import * as effectAi from "../packages/effect-ai/src/index.js"
import * as mcp from "../packages/mcp/src/index.js"
import * as openai from "../packages/openai/src/index.js"
import * as policy from "../packages/policy/src/index.js"
import * as sql from "../packages/sql/src/index.js"
import * as SqlFallbackStore from "../packages/sql/src/SqlFallbackStore.js"

// With the modules a package exports beside its index.
const packages = {
  cli,
  confirm,
  core,
  "effect-ai": effectAi,
  mcp,
  openai,
  policy,
  sql,
  "sql/SqlFallbackStore": { SqlFallbackStore }
}

const isPlain = (value: object) => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null || Array.isArray(value)
}
const isBehaviour = (value: object) =>
  Effect.isEffect(value) || Layer.isLayer(value) || Context.isKey(value) || isPlain(value) ||
  Schedule.isSchedule(value) || Stream.isStream(value) || Sink.isSink(value) || Channel.isChannel(value)
const isStateful = (value: object) =>
  Fiber.isFiber(value) || value instanceof Map || value instanceof Set || value instanceof RegExp ||
  value instanceof Promise || value instanceof Date || ArrayBuffer.isView(value)

// A map or set anyone could add to: what `set`, `add`, `delete` or `clear` a value has.
const writableCollection = (value: object) =>
  ["set", "add", "delete", "clear"].some((method) => typeof Reflect.get(value, method) === "function")

/** The names under `name` of what is writable: the value or anything it holds of the sealed kinds. */
const writable = (name: string, value: unknown, seen = new Set<object>()): Array<string> => {
  if ((typeof value !== "object" && typeof value !== "function") || value === null || seen.has(value)) return []
  seen.add(value)
  if (Context.isKey(value)) {
    const own = Object.isFrozen(value) ? [] : [name]
    return Context.isReference(value) ? own.concat(writableDefault(`${name}'s default`, value)) : own
  }
  if (typeof value === "function" || isStateful(value)) return []
  if (Context.isContext(value)) {
    return Object.isFrozen(value) && !writableCollection(value.mapUnsafe) ? [] : [name]
  }
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

// The default values that are state Effect itself writes to, and JavaScript's own.
const stateByDesign = new Set(["effect/Console", "effect/Metric/MetricRegistry"])

// A reference's default: what every fiber that provides none reads, an object frozen or a read-only view.
const writableDefault = (name: string, reference: Context.Reference<unknown>): Array<string> => {
  if (stateByDesign.has(reference.key)) return []
  const value: unknown = Context.get(Context.empty(), reference)
  if (typeof value !== "object" || value === null) return []
  if (value instanceof Map || value instanceof Set) return writableCollection(value) ? [name] : []
  if (!Object.isFrozen(value) || writableCollection(value)) return [name]
  return isBehaviour(value) ? writable(name, value).filter((found) => found !== name) : []
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

  it("Effect's exports, with every reference's default value", () => {
    expect(exportsOf(Everything).flatMap(([key, value]) => writable(key, value))).toEqual([])
    expect(Object.isFrozen(Everything.Clock.currentTimeMillis)).toBe(true)
    expect(Object.isFrozen(Everything.Schedule.once)).toBe(true)
    expect(Object.isFrozen(Everything.Tracer.nativeTracer)).toBe(true)
  })

  // Modules Effect's index does not export, which graded's packages run in a
  // human's fiber: each package seals the ones it runs.
  it("the Effect modules graded's packages run beyond Effect's index", () => {
    const run = {
      "effect/cli": EffectCli,
      "effect/http": EffectHttp,
      "effect/reactivity/Reactivity": Reactivity,
      "effect/sql/Migrator": Migrator,
      "effect/sql/SqlClient": SqlClient,
      "effect/sql/Statement": Statement
    }
    // An index's entries are modules (namespaces) of their own.
    const entries = (prefix: string, namespace: object): Array<readonly [string, unknown]> =>
      Object.entries(namespace).flatMap(([name, value]) =>
        Object.prototype.toString.call(value) === "[object Module]"
          ? entries(`${prefix}.${name}`, value as object)
          : [[`${prefix}.${name}`, value] as const]
      )
    const found = Object.entries(run).flatMap(([module, namespace]) => entries(module, namespace))
    expect(found.length).toBeGreaterThan(50)
    expect(found.flatMap(([key, value]) => writable(key, value))).toEqual([])
  })

  it("the empty context every root fiber starts from, and the clock a root reads", () => {
    const empty = Context.empty()
    expect(writable("Context.empty()", empty)).toEqual([])
    const clock = Context.get(empty, Clock.Clock)
    expect(Object.isFrozen(clock)).toBe(true)
    expect(Object.isFrozen(clock.currentTimeMillis)).toBe(true)
    // Still works: a root fiber reads the time.
    expect(Effect.runSync(Clock.currentTimeMillis)).toBeGreaterThan(0)
  })

  // What Effect writes to itself stays writable: a metric a fiber that provides
  // no registry updates is kept in the registry's default map.
  it("still works: a root fiber counts a metric in the default registry", () => {
    const counter = Metric.counter("graded_sealed_test_count")
    expect(Effect.runSyncExit(Metric.update(counter, 1))._tag).toBe("Success")
  })
})
