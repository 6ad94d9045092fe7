// The program optionalPeers.test.ts runs under withoutPeers.mjs, as if the app
// had installed neither @effect/sql-pg nor @graded/policy, on the SQLite file
// given. It prints one JSON line `[step, answer]` a step on stdout as it goes,
// where withoutPeers.mjs prints each attempt to load a missing package.
import { Cause, Effect, Exit, Layer, type Scope } from "effect"
import { Proposal, Registry, Tool, Toolkit } from "@graded/core"
import { Sql, SqlAudit } from "@graded/sql"
import { makeDesk } from "../../core/test/supportDesk.js"

const [filename] = process.argv.slice(2)

const say = (step: string, answer: unknown) => Effect.sync(() => console.log(JSON.stringify([step, answer])))

// What an effect ended with: "ok", or its error's (or defect's) message.
const outcome = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) =>
  Effect.map(Effect.exit(Effect.scoped(effect)), (exit) => {
    if (Exit.isSuccess(exit)) return "ok"
    const error = Cause.squash(exit.cause)
    return error instanceof Error ? error.message : String(error)
  })

const program = Effect.gen(function*() {
  // The embedded default, proposals and their audit included.
  const context = yield* Layer.build(Sql.sqlite({ filename: filename! }))
  const registry = Registry.make(Toolkit.make(Tool.proposal(makeDesk().SendReply)))
  const proposed = yield* registry.invoke("chat.sendMessage.propose", { text: "On its way." }, { autonomous: true })
    .pipe(Effect.provide(context))
  yield* say("proposed", proposed.ok)
  yield* say("pending", (yield* Proposal.list({ status: "pending" }).pipe(Effect.provide(context))).length)
  yield* say("audited", (yield* SqlAudit.entries().pipe(Effect.provide(context))).map((entry) => entry.type))
  yield* say("fallback store", [...context.mapUnsafe.keys()].includes("@graded/policy/FallbackStore"))
  yield* say("sqlite done", "ok")
  // What needs a missing package says which.
  yield* say("postgres", yield* outcome(Layer.build(Sql.postgres({ url: "postgres://graded@127.0.0.1:1/graded" }))))
  yield* say(
    "open postgres",
    yield* outcome(Layer.build(SqlAudit.open({ postgres: "postgres://graded@127.0.0.1:1/graded" })))
  )
  // The fallback store's module needs @graded/policy: importing it fails, naming the package.
  yield* say(
    "fallback",
    yield* Effect.promise(() =>
      import("@graded/sql/SqlFallbackStore").then(() => "loaded", (error: Error) => error.message.split("\n")[0])
    )
  )
})

Effect.runPromise(Effect.scoped(program)).then(
  () => console.log(JSON.stringify(["done", "ok"])),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
