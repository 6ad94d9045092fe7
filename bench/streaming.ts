// Streaming, side by side in one run: what graded's streaming loop
// (Agent.runStream) adds over the model's own stream, read bare.
// - Time to first token: from asking to the first text piece in hand. Bare:
//   the model's stream run to its first part. graded: Agent.runStream run to
//   its first `text-delta` event (the tools offered and audited first, the
//   model's stream in a fiber of its own as service code, each part judged
//   and told). The run is interrupted there, as a page closed would.
// - Per piece: a turn of 20,000 text pieces run to its end, bare (each part
//   handled, as a consumer reads it) and through the loop; the difference over
//   the pieces.
// The model is in memory (no network): what is left is graded's own cost. The
// samples alternate, bare then graded, and the figures are medians.
// Over a real loopback provider (bench/loopbackOpenAi.ts: an HTTP server in a
// worker thread speaking OpenAI's Chat Completions SSE): @graded/openai's
// streaming adapter under Agent.runStream against the bare `openai` client's
// stream, one client for both (one connection pool), each turn read to its
// end. Time to first token: from asking to the first text piece in hand, on a
// turn of 20 pieces; per chunk: a turn of 5,000 chunks, the difference over
// the chunks.
//
// `pnpm --dir bench bench:stream` runs this and rewrites its section of
// docs/PERFORMANCE.md (the rest of the page is left as it is).
import { Agent, Audit, LanguageModel, Tool, Toolkit } from "@graded/core"
import { OpenAiModel } from "@graded/openai"
import { Effect, Layer, Schema, Stream } from "effect"
import OpenAI from "openai"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { loadedFrom } from "./loaded.js"
import { startLoopback } from "./loopbackOpenAi.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!
const load = () => os.loadavg().map((x) => x.toFixed(1)).join(", ")
const gc = (globalThis as { gc?: (options?: { readonly type: "minor" | "major" }) => void }).gc

// Three read tools, as a support desk offers them.
const read = {
  title: "Read",
  description: "Reads.",
  input: Schema.Struct({ query: Schema.String }),
  output: Schema.String,
  run: ({ query }: { readonly query: string }) => Effect.succeed(query)
}
const toolkit = Toolkit.make(
  Tool.read("kb.search", read),
  Tool.read("customer.lookup", read),
  Tool.read("orders.list", read)
)

const partsOf = (pieces: number): ReadonlyArray<LanguageModel.StreamPart> => [
  ...Array.from({ length: pieces }, (_, i): LanguageModel.StreamPart => ({ type: "text-delta", delta: `w${i} ` })),
  { type: "finish", usage: { inputTokens: 10, outputTokens: pieces } }
]

const modelOf = (parts: ReadonlyArray<LanguageModel.StreamPart>): LanguageModel.LanguageModel.Service => ({
  generate: () => Effect.die(new Error("the bench streams")),
  stream: () => Stream.fromIterable(parts)
})

const request: LanguageModel.Request = { messages: [{ role: "user", content: "Hi" }], tools: [] }

const time = async (run: () => Promise<unknown>) => {
  gc?.({ type: "minor" })
  const started = performance.now()
  await run()
  return performance.now() - started
}

const measure = async (options: { readonly samples: number; readonly pieces: number }) => {
  const short = partsOf(20)
  const long = partsOf(options.pieces)
  const shortLayer = Layer.merge(Layer.succeed(LanguageModel.LanguageModel, modelOf(short)), Audit.memory().layer)
  const longLayer = Layer.merge(Layer.succeed(LanguageModel.LanguageModel, modelOf(long)), Audit.memory().layer)
  const bareFirst = () => Effect.runPromise(Stream.runHead(modelOf(short).stream!(request)))
  const gradedFirst = () =>
    Effect.runPromise(
      Agent.runStream({ toolkit, prompt: "Hi" }).pipe(
        Stream.filter((event) => event.type === "text-delta"),
        Stream.runHead,
        Effect.provide(shortLayer)
      )
    )
  // Read bare as a consumer reads it: each part handled.
  const bareAll = () => Effect.runPromise(Stream.runForEach(modelOf(long).stream!(request), () => Effect.void))
  const gradedAll = () =>
    Effect.runPromise(Agent.runStream({ toolkit, prompt: "Hi" }).pipe(Stream.runDrain, Effect.provide(longLayer)))
  // Warm-up: the same work, not counted.
  for (let i = 0; i < 200; i++) {
    await bareFirst()
    await gradedFirst()
  }
  await bareAll()
  await gradedAll()
  const first = { bare: [] as Array<number>, graded: [] as Array<number> }
  for (let i = 0; i < options.samples; i++) {
    first.bare.push(await time(bareFirst))
    first.graded.push(await time(gradedFirst))
  }
  const all = { bare: [] as Array<number>, graded: [] as Array<number> }
  for (let i = 0; i < Math.max(5, Math.round(options.samples / 100)); i++) {
    all.bare.push(await time(bareAll))
    all.graded.push(await time(gradedAll))
  }
  return {
    first: { bare: median(first.bare), graded: median(first.graded) },
    all: { bare: median(all.bare), graded: median(all.graded) },
    samples: options.samples,
    runs: all.bare.length,
    pieces: options.pieces
  }
}

// Over the loopback provider: each turn read to its end, the first text piece's time kept.
const measureLoopback = async (options: { readonly samples: number; readonly chunks: number }) => {
  const server = await startLoopback()
  try {
    const client = new OpenAI({ apiKey: "bench", baseURL: server.baseURL, maxRetries: 0 })
    const layer = Layer.merge(OpenAiModel.layer({ client, model: "short" }), Audit.memory().layer)
    const longLayer = Layer.merge(OpenAiModel.layer({ client, model: "long" }), Audit.memory().layer)
    const bare = async (model: string) => {
      const started = performance.now()
      let first = Number.NaN
      const stream = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: "Hi" }],
        stream: true,
        stream_options: { include_usage: true }
      })
      for await (const chunk of stream) {
        if (Number.isNaN(first) && (chunk.choices[0]?.delta.content ?? "") !== "") first = performance.now() - started
      }
      return { first, all: performance.now() - started }
    }
    const graded = async (turn: Layer.Layer<LanguageModel.LanguageModel | Audit.Audit>) => {
      const started = performance.now()
      let first = Number.NaN
      await Effect.runPromise(
        Agent.runStream({ toolkit, prompt: "Hi" }).pipe(
          Stream.runForEach((event) =>
            Effect.sync(() => {
              if (Number.isNaN(first) && event.type === "text-delta") first = performance.now() - started
            })
          ),
          Effect.provide(turn)
        )
      )
      return { first, all: performance.now() - started }
    }
    for (let i = 0; i < 200; i++) {
      await bare("short")
      await graded(layer)
    }
    const first = { bare: [] as Array<number>, graded: [] as Array<number> }
    for (let i = 0; i < options.samples; i++) {
      gc?.({ type: "minor" })
      first.bare.push((await bare("short")).first)
      gc?.({ type: "minor" })
      first.graded.push((await graded(layer)).first)
    }
    const all = { bare: [] as Array<number>, graded: [] as Array<number> }
    await bare("long")
    await graded(longLayer)
    for (let i = 0; i < Math.max(5, Math.round(options.samples / 50)); i++) {
      gc?.({ type: "minor" })
      all.bare.push((await bare("long")).all)
      gc?.({ type: "minor" })
      all.graded.push((await graded(longLayer)).all)
    }
    return {
      first: { bare: median(first.bare), graded: median(first.graded) },
      all: { bare: median(all.bare), graded: median(all.graded) },
      samples: options.samples,
      runs: all.bare.length,
      chunks: options.chunks
    }
  } finally {
    await server.close()
  }
}

const loadBefore = load()
const result = await measure({ samples: Number(process.env.BENCH_STREAM_SAMPLES ?? 2000), pieces: 20_000 })
const loopback = await measureLoopback({
  samples: Number(process.env.BENCH_STREAM_LOOPBACK_SAMPLES ?? 500),
  chunks: 5_000
})
const loadAfter = load()
const loopbackAdded = loopback.first.graded - loopback.first.bare
const loopbackPerChunk = (loopback.all.graded - loopback.all.bare) / loopback.chunks * 1000
const added = result.first.graded - result.first.bare
const perPiece = (result.all.graded - result.all.bare) / result.pieces * 1000
const ms = (value: number) => `${value.toFixed(3)} ms`
const section = `## Streaming

Written by \`pnpm --dir bench bench:stream\` (bench/streaming.ts), ${
  new Date().toISOString().slice(0, 10)
}. What \`Agent.runStream\` adds over the model's own stream, read bare, side by side in one run: the model in memory (no
network), three read tools offered, an in-memory audit; samples alternate bare and graded; medians. ${loadedFrom()}.
Machine: ${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, Node ${process.version}; load average (1, 5, 15
min) ${loadBefore} before, ${loadAfter} after.

| what | bare stream | through \`Agent.runStream\` | added by graded | target |
|---|---|---|---|---|
| time to first token (${result.samples.toLocaleString("en")} samples) | ${ms(result.first.bare)} | ${
  ms(result.first.graded)
} | ${ms(added)} | ≤ 1 ms: ${added <= 1 ? "met" : "**missed**"} |
| a turn of ${result.pieces.toLocaleString("en")} text pieces (${result.runs} runs) | ${ms(result.all.bare)} | ${
  ms(result.all.graded)
} | ${perPiece.toFixed(2)} µs a piece | |

Over a real loopback provider, in the same run: an HTTP server on 127.0.0.1 in a worker thread speaking OpenAI's Chat
Completions stream (Server-Sent Events: a role chunk, one chunk a text piece, the finish, the usage, \`[DONE]\`);
\`@graded/openai\`'s streaming adapter under \`Agent.runStream\` against the bare \`openai\` client's stream
(\`stream: true\`, read with \`for await\`), one client for both; each turn read to its end; samples alternate; medians.
graded's request also carries the three tools' schemas.

| what | bare \`openai\` stream | \`@graded/openai\` under \`Agent.runStream\` | added by graded | target |
|---|---|---|---|---|
| time to first token, a turn of 20 pieces (${loopback.samples.toLocaleString("en")} samples) | ${
  ms(loopback.first.bare)
} | ${ms(loopback.first.graded)} | ${ms(loopbackAdded)} | ≤ 1 ms: ${loopbackAdded <= 1 ? "met" : "**missed**"} |
| a turn of ${loopback.chunks.toLocaleString("en")} chunks (${loopback.runs} runs) | ${ms(loopback.all.bare)} | ${
  ms(loopback.all.graded)
} | ${loopbackPerChunk.toFixed(2)} µs a chunk | |

The first token through graded comes after what a turn always does first (the offer listed and audited, the run's
context set up) and after the model's stream is started in a fiber of its own, where its code runs as service code;
each piece then passes one queue and is judged as data before it is told. Over the wire, \`@graded/openai\` watches
for a server that stops sending with one timer for the whole stream, re-armed as each event is asked for; a timer
raced against every event (\`Stream.timeoutOrElse\`, as before) cost about 70 µs a chunk here on its own.
`

console.log(section)
const page = path.join(here, "../docs/PERFORMANCE.md")
const current = fs.readFileSync(page, "utf8")
const heading = "## Streaming\n"
const at = current.indexOf(heading)
const next = at === -1 ? -1 : current.indexOf("\n## ", at + heading.length)
const updated = at === -1
  ? `${current.trimEnd()}\n\n${section}`
  : `${current.slice(0, at)}${section}${next === -1 ? "" : current.slice(next + 1)}`
fs.writeFileSync(page, updated)
console.log("wrote its section of docs/PERFORMANCE.md")
