import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createServer } from "node:http"
import { run } from "../src/demo.js"
import { fromEnv } from "../src/model.js"

describe("the demo's model", () => {
  it("is the scripted model without OPENAI_API_KEY", () => {
    expect(fromEnv({})).toEqual({ layer: undefined, name: "scripted (no API key needed)" })
  })

  it.live("is OpenAI over the configured base URL when OPENAI_API_KEY is set, and says so", () =>
    Effect.gen(function*() {
      // A compatible server that answers every turn with a final answer.
      const bodies: Array<any> = []
      const server = createServer((request, response) => {
        let text = ""
        request.on("data", (chunk) => (text += chunk))
        request.on("end", () => {
          bodies.push(JSON.parse(text))
          response.setHeader("content-type", "application/json")
          response.end(JSON.stringify({
            id: "x",
            object: "chat.completion",
            created: 0,
            model: "local",
            choices: [{
              index: 0,
              finish_reason: "stop",
              message: { role: "assistant", content: "No earlier reports." }
            }]
          }))
        })
      })
      yield* Effect.callback<void>((resume) => void server.listen(0, "127.0.0.1", () => resume(Effect.void)))
      const port = (server.address() as { port: number }).port
      const choice = fromEnv({
        OPENAI_API_KEY: "k",
        OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
        OPENAI_MODEL: "local"
      })
      expect(choice.name).toBe(`local over the Chat Completions API at http://127.0.0.1:${port}/v1`)
      const lines: Array<string> = []
      const { result } = yield* run({ log: (line) => lines.push(line), model: choice.layer, modelName: choice.name })
        .pipe(
          Effect.ensuring(Effect.sync(() => server.close()))
        )
      expect(lines[0]).toBe(`Model: ${choice.name}`)
      expect(result.answer).toBe("No earlier reports.")
      expect(bodies[0].model).toBe("local")
      expect(bodies[0].tools.map((t: any) => t.function.name)).toEqual([
        "kb__search",
        "conversation__current",
        "customer__lookup"
      ])
    }))
})
