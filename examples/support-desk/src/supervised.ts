// The demo's durable supervised run. The agent may call any desk tool: its
// reads run, and the reply it drafts to the customer (a send) becomes a
// proposal; the run stops, waiting for Alice, with its state in a SQLite file.
// Then the app restarts for real: this process lets go of the database and a
// new process (restarted.ts) opens the same file, where Alice decides (a
// scripted Alice, or people on the web confirm page) and `Runs.resume` takes
// the run to its end. Last, this process opens the file again and reads back
// what happened, and what reached the customer's chat.
import { Effect, Layer } from "effect"
import { type LanguageModel, Proposal, Runs, RunStore, ScriptedModel } from "@graded/core"
import { Sql } from "@graded/sql"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Desk from "./desk.js"
import { desk } from "./tools.js"

export const runId = "run-reply-to-mei"
export const prompt = "Reply to the customer in the current conversation about her invoice."
export const draft = "Hi Mei, the VAT number on your invoices comes from Billing > Settings > Tax ID."
/** What the scripted Alice sends instead of the draft. */
export const edited = `${draft} I have corrected it and reissued your invoice; sorry for the trouble.`

// What the model would do, scripted: read the conversation and the knowledge
// base, then draft the reply, which waits for Alice.
export const startScript: ReadonlyArray<ScriptedModel.Turn> = [
  ScriptedModel.calls(
    ScriptedModel.call("conversation.current", {}),
    ScriptedModel.call("kb.search", { query: "VAT number invoice" })
  ),
  ScriptedModel.calls(ScriptedModel.call("chat.sendMessage", { text: draft }))
]

/** After the restart, the model is told how its send went and answers accordingly. */
export const resumeScript: ReadonlyArray<ScriptedModel.Turn> = [
  (request: LanguageModel.Request) => {
    const last = request.messages.at(-1)
    const result = last?.role === "tool" ? last.content : ""
    return ScriptedModel.text(
      result.includes("\"ok\":true")
        ? "I replied to Mei: her VAT number is fixed and the invoice reissued. Alice edited my draft before it went out."
        : `My reply did not go out: ${result}`
    )
  }
]

/** Who decides once the app has restarted: a scripted Alice, or the people on the web page. */
export type Human =
  | { readonly _tag: "scripted" }
  | { readonly _tag: "web"; readonly users: Readonly<Record<string, string>>; readonly port: number }

/** What the restarted process is told, through its environment. */
export interface Restart {
  readonly database: string
  readonly chatFile: string
  readonly runId: string
  readonly human: Human
}

export const restartVariable = "SUPPORT_DESK_RESTART"

export interface Options {
  readonly log: (line: string) => void
  /** The model; the scripted one when absent. */
  readonly model?: Layer.Layer<LanguageModel.LanguageModel> | undefined
  readonly human: Human
}

const show = (value: unknown) => JSON.stringify(value)

const here = path.dirname(fileURLToPath(import.meta.url))

// A temp folder for the database and the chat, removed when the story ends.
const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "support-desk-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/**
 * Runs restarted.ts in a new process (tsx, the same Node), passes each line it
 * prints to `log`, and succeeds with its pid once it exits 0.
 */
const restartApp = (restart: Restart, log: (line: string) => void) =>
  Effect.callback<number, Error>((resume) => {
    const tsx = createRequire(import.meta.url).resolve("tsx/cli")
    const child = spawn(process.execPath, [tsx, path.join(here, "restarted.ts")], {
      // The child's stdin is a pipe from here: when this process ends, it ends too.
      stdio: ["pipe", "pipe", "inherit"],
      env: { ...process.env, [restartVariable]: JSON.stringify(restart) }
    })
    let rest = ""
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      const lines = (rest + chunk).split("\n")
      rest = lines.pop() ?? ""
      for (const line of lines) log(line)
    })
    child.on("error", (error) => resume(Effect.fail(error)))
    child.on("close", (code) => {
      if (rest !== "") log(rest)
      resume(
        code === 0
          ? Effect.succeed(child.pid ?? 0)
          : Effect.fail(new Error(`the restarted app exited with ${code}`))
      )
    })
    return Effect.sync(() => void child.kill())
  })

export const run = (options: Options) => {
  const { log } = options
  return Effect.gen(function*() {
    const dir = yield* tempDir
    const database = path.join(dir, "desk.db")
    const chatFile = path.join(dir, "chat.jsonl")
    // Everything this process holds of the app: the database, the desk, the model.
    const app = Layer.merge(Sql.sqlite({ filename: database }), Desk.layer(Desk.empty(), { chatFile }))

    log("5. A supervised run that outlives the app: Alice asks the agent to reply to Mei.")
    log("   The agent may call any desk tool; its reply to the customer (a send) must wait for Alice.")
    const started = yield* Runs.start({
      toolkit: desk,
      system: "You help support agents. Check the facts with the tools, then reply to the customer.",
      prompt,
      runId,
      context: { actor: "agent:alice" }
    }).pipe(
      Effect.provide(options.model ?? ScriptedModel.layer(startScript)),
      Effect.provide(app),
      Effect.scoped
    )
    if (started.status !== "waiting") {
      log(`   The run ${started.status} without drafting a reply; nothing waits for Alice.`)
      return { started, pid: undefined, run: undefined, proposals: [], chat: Desk.readChat(chatFile) }
    }
    for (const proposal of started.pending) {
      log(`   The run ${runId} waits for Alice: ${proposal.tool} ${show(proposal.payload)} (${proposal.id})`)
    }

    log(`   The app restarts: this process (pid ${process.pid}) has closed the database; a new one opens the file.`)
    const pid = yield* restartApp({ database, chatFile, runId, human: options.human }, log)

    // Back here, a third time on the file: what the database and the chat say.
    const { proposals, stored } = yield* Effect.gen(function*() {
      const stored = yield* RunStore.RunStore.use((runs) => runs.get(runId))
      return { stored, proposals: yield* Proposal.list({ runId }) }
    }).pipe(Effect.provide(app), Effect.scoped)
    const chat = Desk.readChat(chatFile)
    log(`   Read back from the database: the run is ${stored.status};`)
    for (const proposal of proposals) {
      const decision = proposal.decision
      log(
        `   ${proposal.id} ${proposal.tool} is ${proposal.status}` +
          (decision === undefined ? "" : `, decided by ${decision.by}${decision.edited ? " with an edit" : ""}`) +
          (proposal.deliveryKey === undefined ? "" : `, idempotency key ${proposal.deliveryKey}`)
      )
    }
    log(`   The customer's chat got ${chat.length} message(s) from the run:`)
    for (const message of chat) log(`     to ${message.to} (key ${message.idempotencyKey}): ${message.text}`)
    return { started, pid, run: stored, proposals, chat }
  }).pipe(Effect.scoped)
}
