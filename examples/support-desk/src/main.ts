import { Effect } from "effect"
import { run } from "./demo.js"
import { fromEnv } from "./model.js"

const model = fromEnv(process.env)

Effect.runPromise(run({ log: (line) => console.log(line), model: model.layer, modelName: model.name })).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error("The demo failed:", error)
    process.exit(1)
  }
)
