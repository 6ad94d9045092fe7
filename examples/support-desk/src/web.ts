// The demo with a person in the loop: the agent answers with read tools, then
// the reply waits on the web confirm page until you approve, edit or reject
// it. Run `pnpm demo:web` and open the URL it prints for you (PORT picks the
// port). Each person on the support team gets a token of their own, so the
// audit records who decided by the token they signed in with, whatever name
// a request claims.
//
// Then a supervised run (supervised.ts): the agent drafts a reply, the run
// waits in a SQLite file, the app restarts as a new process, which serves the
// page again (open the link it prints: with PORT set, the same one) with the
// drafted reply as a card; once you decide it there, the run is resumed and
// prints the model's answer.
import { Effect, Layer } from "effect"
import { Agent, Audit, Invocation, ScriptedModel, Toolkit } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { script } from "./demo.js"
import * as Desk from "./desk.js"
import { fromEnv } from "./model.js"
import * as Supervised from "./supervised.js"
import { desk, SendMessage } from "./tools.js"
import { randomBytes } from "node:crypto"

const outbox = Desk.empty()
const model = fromEnv(process.env)

// One token per person: in an app, your sign-in (`authenticate`) takes this place.
const team = ["alice", "bob"]
const tokens = new Map(team.map((person) => [person, randomBytes(24).toString("hex")]))
const users = Object.fromEntries([...tokens].map(([person, token]) => [token, person]))

const program = Effect.gen(function*() {
  const server = yield* WebConfirm.WebConfirm
  console.log(`Model: ${model.name}`)
  for (const [person, token] of tokens) console.log(`Confirm page for ${person}: ${server.link(token)}`)
  const result = yield* Agent.run({
    toolkit: Toolkit.readOnly(desk),
    prompt: "Has this customer reported a similar problem before?",
    context: { actor: "agent:alice" }
  }).pipe(Effect.provide(model.layer ?? ScriptedModel.layer(script)))
  console.log(`The agent: ${result.answer}`)
  console.log("Sending a reply to the customer: it waits for your decision on the confirm page...")
  const sent = yield* SendMessage.invoke({
    text: "Hi Mei, sorry about this: the VAT number comes from Billing > Settings > Tax ID. I have corrected it."
  }).pipe(Invocation.within({ actor: "agent:alice" }), Effect.result)
  if (sent._tag === "Success") console.log(`Sent: ${JSON.stringify(outbox.messages.at(-1))}`)
  else console.log(`Not sent: ${sent.failure.message}`)
})

const audit = Audit.layer((entry) =>
  Effect.sync(() => console.log(`  [${entry.autonomous ? "agent" : "human"}] ${Audit.describe(entry)}`))
)

const port = Number(process.env.PORT ?? 0)

Effect.runPromise(
  program.pipe(
    Effect.provide(Layer.mergeAll(WebConfirm.layer({ users, port }), Desk.layer(outbox), audit)),
    // The first page has closed; the restarted app serves its own.
    Effect.andThen(Effect.sync(() => console.log(""))),
    Effect.andThen(
      Supervised.run({ log: (line) => console.log(line), model: model.layer, human: { _tag: "web", users, port } })
    )
  )
).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error("The demo failed:", error)
    process.exit(1)
  }
)
