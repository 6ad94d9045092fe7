// One process of sqlite.test.ts's read-only test, on the SQLite file given
// (run as a user chmod binds: not root). It writes, makes the file read-only,
// writes again, makes it writable, writes again; then makes it unreadable and
// begins a transaction, then readable and begins another; and prints what
// each step answered as it goes, one JSON line `[step, answer]` a step: "ok"
// (or what it read) or the error's message.
import { Effect, Result } from "effect"
import { Sql } from "@graded/sql"
import * as fs from "node:fs"
import { currentStoreClient } from "./storeClient.js"

const [filename] = process.argv.slice(2)

const program = Effect.gen(function*() {
  const sql = yield* currentStoreClient
  const write = (at: string) =>
    sql`INSERT INTO graded_audit (at, type, autonomous, entry) VALUES (${at}, 'answered', 0, '{}')`
  const outcome = <A>(effect: Effect.Effect<A, { readonly message: string }>) =>
    Effect.map(
      // Generous: a step that answers nothing within it is a client that hangs.
      Effect.result(
        Effect.timeoutOrElse(effect, { duration: "10 seconds", orElse: () => Effect.fail({ message: "hung" }) })
      ),
      (answer) =>
        Result.isFailure(answer) ? answer.failure.message : typeof answer.success === "string" ? answer.success : "ok"
    )
  // A statement that fails closes the client's connection, and the next one
  // opens another: opened while the file is read-only (or unreadable), as a
  // long-lived process's connection is after any failure.
  const reconnect = Effect.ignore(sql`SELECT no_such_column FROM graded_audit`)
  const step = <A>(name: string, effect: Effect.Effect<A, { readonly message: string }>) =>
    Effect.flatMap(outcome(effect), (answer) => Effect.sync(() => console.log(JSON.stringify([name, answer]))))
  yield* step("before", write("1"))
  fs.chmodSync(filename!, 0o444)
  yield* reconnect
  yield* step("readOnly", write("2"))
  yield* step("stillReadOnly", write("2"))
  fs.chmodSync(filename!, 0o644)
  yield* step("writable", write("3"))
  fs.chmodSync(filename!, 0o000)
  yield* reconnect
  yield* step("unopenable", sql.withTransaction(write("4")))
  fs.chmodSync(filename!, 0o644)
  yield* step("reopened", sql.withTransaction(write("5")))
  yield* step(
    "rows",
    Effect.map(
      sql<{ at: string }>`SELECT at FROM graded_audit ORDER BY seq`,
      (rows) => rows.map((row) => row.at).join(",")
    )
  )
})

Effect.runPromise(program.pipe(Effect.provide(Sql.sqlite({ filename: filename! })))).then(
  () => console.log(JSON.stringify(["done", "ok"])),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
