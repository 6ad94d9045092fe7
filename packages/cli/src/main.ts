import { ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { run, usage } from "./Cli.js"

// `graded audit file | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})

// A command line that cannot be parsed is the person's mistake, not a crash:
// @effect/cli has already said what is wrong; an unknown or missing command
// also gets the list of commands. Exit code 2, as for any usage error.
const usageError = (error: ValidationError.ValidationError) =>
  Effect.zipRight(
    ValidationError.isCommandMismatch(error) || ValidationError.isMissingSubcommand(error)
      ? Console.error(`\n${usage()}`)
      : Console.error("`graded --help` lists the commands and their options."),
    Effect.sync(() => void (process.exitCode = 2))
  )

run(process.argv).pipe(
  Effect.catchIf(ValidationError.isValidationError, usageError),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: false })
)
