import { Effect } from "effect"
import { run } from "./demo.js"

Effect.runPromise(run({ log: (line) => console.log(line) })).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error("The demo failed:", error)
    process.exit(1)
  }
)
