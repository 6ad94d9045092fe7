// Where the served desk keeps what outlives a process: the proposals a client
// leaves (and the audit) in a SQLite file, and the customer's chat in a file
// beside it. The server, `graded pending`/`graded decide` (graded.config.ts)
// and the demo's human open the same file, each in its own process.
import { Layer } from "effect"
import * as Desk from "@graded/example-support-desk/desk"
import { Sql } from "@graded/sql"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The environment variable naming the database file. */
export const databaseVariable = "SUPPORT_DESK_DB"

/** `$SUPPORT_DESK_DB`, or graded.db in this package's folder, wherever the process was started. */
export const database = (env: NodeJS.ProcessEnv = process.env): string =>
  env[databaseVariable] ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "graded.db")

/** The customer's chat: one JSON line per message that went out, beside the database. */
export const chatFile = (database: string): string => path.join(path.dirname(database), "chat.jsonl")

/** The durable parts (proposals, audit) on the file, and the desk's systems, for one process. */
export const layer = (database: string, outbox: Desk.Outbox = Desk.empty()) =>
  Layer.merge(Sql.sqlite({ filename: database }), Desk.layer(outbox, { chatFile: chatFile(database) }))
