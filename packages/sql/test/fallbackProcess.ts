// One process of sqlite.test.ts's fallback quota race, on the SQLite file
// given: it asks for <count> fallback runs in one trace whose quota is
// <limit>, all at once, and prints how many it was granted, as JSON.
import { Effect } from "effect"
import { Fallback } from "@graded/policy"
import { Sql } from "@graded/sql"
import * as SqlFallbackStore from "@graded/sql/SqlFallbackStore"

const [filename, count, limit] = process.argv.slice(2)

const program = Effect.gen(function*() {
  const store = yield* Fallback.Store
  const taken = yield* Effect.forEach(
    Array.from({ length: Number(count) }, (_, i) => i),
    (i) =>
      store.take({
        traceId: "t-shared",
        tenant: "acme",
        day: "2026-11-30",
        tool: "kb.search",
        input: { process: process.pid, i },
        context: { autonomous: true }
      }, { perTrace: Number(limit), perTenantPerDay: 1_000 }),
    { concurrency: 4 }
  )
  return taken.filter((t) => t.granted).length
})

Effect.runPromise(program.pipe(Effect.provide(SqlFallbackStore.beside(Sql.sqlite({ filename: filename! }))))).then(
  (granted) => console.log(JSON.stringify(granted)),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
