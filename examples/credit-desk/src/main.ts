// pnpm demo:credit: the credit desk's story, with the scripted model unless
// OPENAI_API_KEY is set (see model.ts).
import { Effect } from "effect"
import { fromEnv } from "./model.js"
import { run } from "./story.js"

const model = fromEnv(process.env)

Effect.runPromise(run({ log: (line) => console.log(line), model: model.layer, modelName: model.name })).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error("The demo failed:", error)
    process.exit(1)
  }
)
