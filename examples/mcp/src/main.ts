// pnpm demo:mcp: the support desk served over MCP, seen from a client. The
// demo starts server.ts as a child process and talks to it with the official
// SDK's Client over stdio, as a desktop MCP client would: it lists the tools,
// calls a read (it runs), a write and a send (each recorded as a proposal;
// nothing runs). Then Alice, in this process, decides them on the same SQLite
// file: the ticket is filed, the message is rejected and never sent. Last, the
// audit both processes wrote. No API key needed; the first client has no
// elicitation, so the server records proposals; a second client shows forms,
// and its person approves an edited ticket right there.
import { Effect } from "effect"
import { Audit, HumanConfirm, Invocation, Proposal } from "@graded/core"
import * as Desk from "@graded/example-support-desk/desk"
import { desk } from "@graded/example-support-desk/tools"
import { SqlAudit } from "@graded/sql"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { chatFile, databaseVariable, layer } from "./store.js"

const log = (line: string) => console.log(line)
const show = (value: unknown) => JSON.stringify(value)

// Alice's confirm card, scripted: shown the exact payload, she decides.
const card = (decision: HumanConfirm.Decision) => (view: HumanConfirm.View) => {
  log(`   Alice's confirm card: ${view.title} (${view.grade}) ${show(view.payload)}`)
  return decision
}
const alice = HumanConfirm.scripted([
  card(HumanConfirm.approve("agent:alice")),
  card(HumanConfirm.reject("agent:alice", "I will call her instead"))
])

// A temp folder for the database and the chat; the server is told through its environment.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "support-desk-mcp-"))
const database = path.join(dir, "graded.db")

// The server as a desktop MCP client starts it: a command and its arguments.
const spawnServer = () =>
  new StdioClientTransport({
    command: process.execPath,
    args: ["--import", import.meta.resolve("tsx"), fileURLToPath(new URL("./server.ts", import.meta.url))],
    env: { ...getDefaultEnvironment(), [databaseVariable]: database },
    stderr: "inherit"
  })

const main = async () => {
  // 1. The client starts the server.
  const transport = spawnServer()
  // No capabilities: this client cannot ask a human (no elicitation), so writes and sends become proposals.
  const client = new Client({ name: "demo-client", version: "1.0.0" })
  await client.connect(transport)
  log(`1. An MCP client started the support desk's server (pid ${transport.pid}) and lists its tools:`)
  for (const tool of (await client.listTools()).tools) {
    const { title: _, ...hints } = tool.annotations ?? {}
    log(`   ${tool.name.padEnd(22)} ${String(tool._meta?.["graded/grade"]).padEnd(6)} ${show(hints)}`)
  }

  log("2. The client calls a read: it runs.")
  const read = await client.callTool({ name: "kb__search", arguments: { query: "VAT number" } })
  const articles = JSON.parse((read.content as Array<{ text: string }>)[0]?.text ?? "{}").data as Array<
    { title: string }
  >
  log(`   kb__search ran: ${articles.map((article) => article.title).join("; ")}`)

  log("3. The client calls a write and a send: each is answered \"requires confirmation\"; nothing ran.")
  const calls = [
    { name: "ticket__submit", arguments: { subject: "VAT number wrong again", body: "Invoice of March." } },
    { name: "chat__sendMessage", arguments: { text: "Hi Mei, I have fixed your VAT number." } }
  ]
  for (const call of calls) {
    const answer = (await client.callTool(call)).structuredContent as { proposal: string; status: string }
    log(`   ${call.name}: requires confirmation, proposal ${answer.proposal} (${answer.status})`)
  }

  // 4. Alice decides, in this process, on the same file, while the server is still up.
  const outbox = Desk.empty()
  await Effect.runPromise(
    Effect.gen(function*() {
      log("4. Alice, a person, decides what waits in the store:")
      const [ticket, message] = yield* Proposal.list({ status: "pending" })
      if (ticket === undefined || message === undefined) return yield* Effect.die(new Error("nothing waits"))
      const approved = yield* Proposal.approve(desk, ticket.id)
      log(`   ${ticket.id} ${approved.proposal.status}: ticket ${show(approved.output)} filed`)
      const refused = yield* Effect.flip(Proposal.approve(desk, message.id))
      const rejected = yield* Proposal.get(message.id)
      log(`   ${message.id} ${rejected.status}: ${refused.message}`)
    }).pipe(
      Invocation.within({ actor: "agent:alice" }),
      Effect.provide(HumanConfirm.layer(alice)),
      Effect.provide(layer(database, outbox)),
      Effect.scoped
    )
  )
  await client.close()

  // 5. A client that shows forms (it declares elicitation): the person answers there, before anything runs.
  log("5. A second client shows forms: a write asks its person, who edits the subject and approves.")
  const withForms = new Client({ name: "desk-app", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } })
  withForms.setRequestHandler(ElicitRequestSchema, (request) => {
    const params = request.params as { message: string; requestedSchema?: { properties: object } }
    log(
      `   the form: ${params.message.split("\n")[0]}; fields ${
        Object.keys(params.requestedSchema?.properties ?? {}).join(", ")
      }`
    )
    return { action: "accept", content: { "graded/decision": "approve", subject: "Refund for March (invoice 2291)" } }
  })
  await withForms.connect(spawnServer())
  const filed = await withForms.callTool({
    name: "ticket__submit",
    arguments: { subject: "Refund for March", body: "Charged twice." }
  })
  log(`   ticket__submit ran after the form: ${(filed.content as Array<{ text: string }>)[0]?.text}`)
  await withForms.close()

  log("6. What reached the desk's systems from Alice's process:")
  log(`   tickets filed: ${show(outbox.tickets)}`)
  log(`   messages to the customer: ${show(Desk.readChat(chatFile(database)))}`)
  log("7. The audit, as every process wrote it:")
  const entries = await Effect.runPromise(SqlAudit.entries().pipe(Effect.provide(layer(database)), Effect.scoped))
  for (const entry of entries) log(`   [${entry.actor}] ${Audit.describe(entry)}`)
}

main().then(
  () => {
    fs.rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  },
  (error: unknown) => {
    fs.rmSync(dir, { recursive: true, force: true })
    console.error("The demo failed:", error)
    process.exit(1)
  }
)
