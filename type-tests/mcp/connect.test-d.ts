import { Effect } from "effect"
import { expectError, expectType } from "tsd"
import { Agent, type Tool, Toolkit } from "@graded/core"
import { McpImport } from "@graded/mcp"

const program = Effect.scoped(Effect.gen(function*() {
  const client = yield* McpImport.stdio({ command: "node", args: ["server.js"], env: { TOKEN: "t" }, timeout: 5_000 })
  const live = yield* McpImport.live(client, { search: "read", delete_repo: "write" }, { namespace: "gh" })
  const imported = yield* live.toolkit
  type Imported = (typeof imported)["tools"][number]

  // A live import has the grades of `grades`, whatever the server lists later; any other tool is a send.
  expectType<"read">({} as Tool.Grade<Extract<Imported, { readonly name: "gh.search" }>>)
  expectType<"write">({} as Tool.Grade<Extract<Imported, { readonly name: "gh.delete_repo" }>>)
  expectType<"send">({} as Tool.Grade<Exclude<Imported, { readonly name: "gh.search" | "gh.delete_repo" }>>)
  expectType<McpImport.Refresh>(yield* live.refresh)

  // Rejected: an autonomous loop over the refreshed toolkit, which may hold sends added at run time.

  // error: Agent.run takes read tools only: gh.delete_repo (write) needs WriteCapability
  expectError(Agent.run({ toolkit: imported, prompt: "Clean up." }))

  // Rejected: a connection option that is not one.

  // error: 'header' does not exist in type 'HttpOptions'
  expectError(McpImport.http("http://127.0.0.1:3000/mcp", { header: { authorization: "x" } }))

  // Accepted: its read tools alone.
  return yield* Agent.run({ toolkit: Toolkit.readOnly(imported), prompt: "Find it." })
}))
void program
