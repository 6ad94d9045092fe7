import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Agent, Toolkit } from "@graded/core"
import { OpenAiModel } from "@graded/openai"
import { makeDesk } from "../../core/test/supportDesk.js"
import * as Replay from "./ReplayServer.js"

const model = (baseURL: string) =>
  OpenAiModel.layer({ apiKey: "test-key", baseURL, model: "test-model", retryBase: "5 millis", maxRetries: 0 })

const deep = (n: number) => "[".repeat(n) + "]".repeat(n)

// A server that answers what no model would: the loop goes on, telling the
// model what was wrong, and never dies of it.
describe("OpenAiModel: a hostile server's tool calls", () => {
  it.live("arguments as a JSON object nested 300,000 deep: the call is refused as malformed; the run goes on", () =>
    Effect.gen(function*() {
      const { support } = makeDesk()
      const server = yield* Replay.make([
        {
          text:
            `{"id":"x","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"kb__search","arguments":${
              deep(300_000)
            }}}]}}]}`,
          headers: { "content-type": "application/json" }
        },
        Replay.chatReply({ content: "done" })
      ])
      const result = yield* Agent.run({ toolkit: Toolkit.readOnly(support), prompt: "?" }).pipe(
        Effect.provide(model(server.baseURL))
      )
      expect(result.answer).toBe("done")
      expect(result.calls).toMatchObject([{ tool: "kb.search", ok: false }])
    }))
})
