// A loopback provider for bench/streaming.ts: an HTTP server on 127.0.0.1, in
// a worker thread of its own (its work does not share the event loop it is
// measured from), answering POST /chat/completions with OpenAI's Chat
// Completions stream as Server-Sent Events: a role chunk, one chunk a text
// piece, the finish, the usage, `[DONE]`. The model's name picks the turn:
// `short` is 20 pieces, `long` 5,000. Each answer is made once and written
// in one go, so what is measured is the client's side.
import { Worker } from "node:worker_threads"

const server = `
const http = require("node:http")
const { parentPort } = require("node:worker_threads")
const chunk = (delta, finish) => "data: " + JSON.stringify({
  id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1, model: "bench",
  choices: [{ index: 0, delta, finish_reason: finish }]
}) + "\\n\\n"
const turn = (pieces) => chunk({ role: "assistant", content: "" }, null) +
  Array.from({ length: pieces }, (_, i) => chunk({ content: "w" + i + " " }, null)).join("") +
  chunk({}, "stop") +
  "data: " + JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1, model: "bench", choices: [],
    usage: { prompt_tokens: 10, completion_tokens: pieces, total_tokens: 10 + pieces } }) + "\\n\\n" +
  "data: [DONE]\\n\\n"
const turns = { short: Buffer.from(turn(20)), long: Buffer.from(turn(5000)) }
const app = http.createServer((request, response) => {
  const body = []
  request.on("data", (data) => body.push(data))
  request.on("end", () => {
    let model = "short"
    try { model = JSON.parse(Buffer.concat(body).toString()).model } catch {}
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    response.end(turns[model] ?? turns.short)
  })
})
app.keepAliveTimeout = 60000
app.listen(0, "127.0.0.1", () => parentPort.postMessage(app.address().port))
parentPort.on("message", () => app.close(() => process.exit(0)))
`

export const startLoopback = async (): Promise<{ readonly baseURL: string; readonly close: () => Promise<void> }> => {
  const worker = new Worker(server, { eval: true })
  const port = await new Promise<number>((resolve, reject) => {
    worker.once("message", resolve)
    worker.once("error", reject)
  })
  return {
    baseURL: `http://127.0.0.1:${port}`,
    close: async () => {
      worker.postMessage("close")
      await worker.terminate()
    }
  }
}
