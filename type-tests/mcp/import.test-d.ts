import { Effect } from "effect"
import { expectError, expectType } from "tsd"
import { Agent, type Tool, Toolkit } from "@graded/core"
import { McpImport } from "@graded/mcp"

declare const client: Parameters<typeof McpImport.toolkit>[0]

const program = Effect.gen(function*() {
  const imported = yield* McpImport.toolkit(client, { search: "read", delete_repo: "write" }, { namespace: "gh" })
  type Imported = (typeof imported)["tools"][number]

  // Grades as the importer mapped them; any other tool of the server is a send.
  expectType<"read">({} as Tool.Grade<Extract<Imported, { readonly name: "gh.search" }>>)
  expectType<"write">({} as Tool.Grade<Extract<Imported, { readonly name: "gh.delete_repo" }>>)
  expectType<"send">({} as Tool.Grade<Exclude<Imported, { readonly name: "gh.search" | "gh.delete_repo" }>>)

  // Rejected: an autonomous loop over the imported write tool.

  // error: Agent.run takes read tools only: gh.delete_repo (write) needs WriteCapability
  expectError(Agent.run({ toolkit: imported, prompt: "Clean up." }))

  // Rejected: the unmapped tools are sends, whatever the server claims.

  // error: Agent.run takes read tools only: gh.${string} (send) needs SendCapability
  expectError(Agent.run({ toolkit: imported, prompt: "Clean up." }))

  // Accepted: its read tools alone.
  return yield* Agent.run({ toolkit: Toolkit.readOnly(imported), prompt: "Find it." })
})
void program
