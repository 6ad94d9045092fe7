// A support desk whose send goes to an "outside system": a file that each
// delivery appends one JSON line to, with the idempotency key it was given.
// The crash tests count its lines to see what went out, across processes.
// `hang` makes the delivery stop after its line is written (the outside
// effect happened, the process has not settled it), as a process that dies
// there would.
import { Effect, Schema } from "effect"
import { Agent, Tool, Toolkit } from "@graded/core"
import * as fs from "node:fs"

/**
 * Waits until the process is killed. Effect 4.1's `Effect.never` holds
 * nothing on the event loop, so node would end a process that waits on it
 * alone; this holds a timer.
 */
export const untilKilled: Effect.Effect<never> = Effect.callback<never>(() => {
  const timer = setInterval(() => {}, 2 ** 30)
  return Effect.sync(() => clearInterval(timer))
})

export interface Sent {
  readonly key: string
  readonly to: string
  readonly text: string
  readonly pid: number
}

export const makeOutsideDesk = (outside: string, options?: { readonly hang?: "after-effect" | undefined }) => {
  const KbSearch = Tool.read("kb.search", {
    title: "Search the knowledge base",
    description: "Find articles that answer a question.",
    input: Schema.Struct({ query: Schema.String }),
    output: Schema.Array(Schema.Struct({ id: Schema.String, title: Schema.String })),
    run: ({ query }) => Effect.succeed([{ id: "kb-1", title: `About ${query}` }])
  })
  const SendReply = Tool.send("chat.sendMessage", {
    title: "Send a chat message",
    description: "Send a message to the customer.",
    input: Schema.Struct({ text: Schema.String }),
    payload: Schema.Struct({ to: Schema.String, text: Schema.Trimmed.check(Schema.isNonEmpty()) }),
    output: Schema.Struct({ delivered: Schema.Boolean }),
    prepare: ({ text }) => Effect.succeed({ to: "customer:42", text }),
    deliver: (confirmed) =>
      Effect.andThen(
        Effect.sync(() => {
          const line: Sent = { key: confirmed.idempotencyKey, ...confirmed.payload, pid: process.pid }
          fs.appendFileSync(outside, `${JSON.stringify(line)}\n`)
        }),
        options?.hang === "after-effect" ? untilKilled : Effect.succeed({ delivered: true })
      )
  })
  return { support: Toolkit.make(KbSearch, SendReply) }
}

/** What the outside system received, in order. */
export const sent = (outside: string): ReadonlyArray<Sent> =>
  fs.existsSync(outside)
    ? fs.readFileSync(outside, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))
    : []

/** The desk's tools held by one sub-agent, agent.desk: a run's write/send sub-agent. */
export const nestedDesk = (desk: ReturnType<typeof makeOutsideDesk>) =>
  Toolkit.make(Agent.tool("agent.desk", {
    title: "Support desk",
    description: "Looks it up and tells the customer.",
    toolkit: desk.support,
    instructions: "Look it up, then tell the customer.",
    input: Schema.Struct({ issue: Schema.String })
  }))
