// One send tool that counts what it really delivered.
import { Effect, Schema } from "effect"
import { Tool } from "@graded/core"

export const makeSend = () => {
  const delivered: Array<{ to: string; text: string }> = []
  const SendReply = Tool.send("chat.sendMessage", {
    title: "Send a chat message",
    description: "Send a message to the customer.",
    input: Schema.Struct({ text: Schema.String }),
    payload: Schema.Struct({ to: Schema.String, text: Schema.NonEmptyTrimmedString }),
    output: Schema.Struct({ sent: Schema.Boolean }),
    prepare: ({ text }) => Effect.succeed({ to: "c-42", text }),
    deliver: (confirmed) => Effect.sync(() => (delivered.push(confirmed.payload), { sent: true }))
  })
  return { SendReply, delivered }
}
