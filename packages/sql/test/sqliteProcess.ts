// One process of sqlite.test.ts's many-process test, on the SQLite file given:
// it proposes <count> sends as a model would, then claims every pending
// proposal it finds (its own and the others'), and prints the ids it won, as
// JSON. Every proposal is pending when its own process looks, so each is
// claimed by someone.
import { Effect, Result } from "effect"
import { Proposal, ProposalStore, Registry, Tool, Toolkit } from "@graded/core"
import { Sql } from "@graded/sql"
import { makeDesk } from "../../core/test/supportDesk.js"

const [filename, count] = process.argv.slice(2)

const propose = Effect.gen(function*() {
  const registry = Registry.make(Toolkit.make(Tool.proposal(makeDesk().SendReply)))
  for (let i = 0; i < Number(count); i++) {
    const result = yield* registry.invoke("chat.sendMessage.propose", { text: `m${process.pid}-${i}` }, {
      autonomous: true
    })
    if (!result.ok) return yield* Effect.die(new Error(result.error ?? "not proposed"))
  }
})

const claim = Effect.gen(function*() {
  const store = yield* ProposalStore.ProposalStore
  const pending = yield* Proposal.list({ status: "pending" })
  const won = yield* Effect.forEach(
    pending,
    (proposal) => Effect.result(store.claim(proposal.id, `process:${process.pid}`)),
    {
      concurrency: 4
    }
  )
  return won.filter(Result.isSuccess).map((outcome) => outcome.success.id)
})

const program = Effect.andThen(propose, claim)

Effect.runPromise(program.pipe(Effect.provide(Sql.sqlite({ filename: filename! })))).then(
  (won) => console.log(JSON.stringify(won)),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
