// The support desk served over MCP on stdin/stdout, for a client that spawns
// it (the demo, a desktop MCP client). Its reads run; a write or a send a
// client asks for runs nothing: it is recorded as a proposal in the SQLite
// file (store.ts), where a human decides it (`pnpm graded decide`).
// Nothing else may print to stdout: it is the protocol's channel.
import { Effect } from "effect"
import { Registry } from "@graded/core"
import { desk } from "@graded/example-support-desk/tools"
import { McpServe } from "@graded/mcp"
import { database, layer } from "./store.js"

const serve = McpServe.stdio(Registry.make(desk), {
  name: "support-desk",
  version: "0.1.0",
  context: { actor: "mcp:client", role: "support" }
})

// A database that cannot be opened is said in one line on stderr, which a client shows in its log.
Effect.runPromise(
  serve.pipe(
    Effect.provide(layer(database())),
    Effect.as(0),
    Effect.catch((error) => Effect.sync(() => (console.error(`support-desk: ${error.message}`), 1)))
  )
).then((code) => process.exit(code))
