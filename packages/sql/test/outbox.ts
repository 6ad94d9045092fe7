// The "outside system" of postgresProcesses.test.ts: a send tool whose
// deliver writes the message, with the delivery's idempotency key and the
// process that delivered it, into a table of its own in the same database.
// The table has no unique key on purpose: a message delivered twice shows as
// two rows, which the test counts.
import * as SqlClient from "effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { Tool, Toolkit } from "@graded/core"

export const createOutbox = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql`CREATE TABLE IF NOT EXISTS outbox (key TEXT NOT NULL, text TEXT NOT NULL, pid INTEGER NOT NULL)`
)

export const Send = Tool.send("outbox.send", {
  title: "Send a message",
  description: "Sends a message through the outside system.",
  input: Schema.Struct({ text: Schema.String }),
  payload: Schema.Struct({ text: Schema.String }),
  output: Schema.Struct({ sent: Schema.Boolean }),
  prepare: ({ text }) => Effect.succeed({ text }),
  deliver: (confirmed) =>
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`INSERT INTO outbox (key, text, pid)
        VALUES (${confirmed.idempotencyKey}, ${confirmed.payload.text}, ${process.pid})`.pipe(
        Effect.orDie,
        Effect.as({ sent: true })
      ))
})

export const outbox = Toolkit.make(Send)
