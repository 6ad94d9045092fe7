import { Effect } from "effect"
import { run } from "./demo.js"
import { fromEnv } from "./model.js"
import * as Supervised from "./supervised.js"

const model = fromEnv(process.env)
const log = (line: string) => console.log(line)

Effect.runPromise(
  run({ log, model: model.layer, modelName: model.name }).pipe(
    Effect.andThen(Effect.sync(() => log(""))),
    Effect.andThen(Supervised.run({ log, model: model.layer, human: { _tag: "scripted" } }))
  )
).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error("The demo failed:", error)
    process.exit(1)
  }
)
