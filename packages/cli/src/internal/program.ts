// The command as bin/graded.mjs runs it: `Cli.run`, and a command line that
// cannot be parsed is the person's mistake, not a crash. @effect/cli has
// already said what is wrong; an unknown or missing command also gets the
// list of commands. Exit code 2, as for any usage error. Shared by main.ts
// and the tests that run the command in their own process.
import { ValidationError } from "@effect/cli"
import { Console, Effect } from "effect"
import { run, type RunOptions, usage } from "../Cli.js"
import { exitWith } from "./process.js"

const usageError = (error: ValidationError.ValidationError) =>
  Effect.zipRight(
    ValidationError.isCommandMismatch(error) || ValidationError.isMissingSubcommand(error)
      ? Console.error(`\n${usage()}`)
      : Console.error("`graded --help` lists the commands and their options."),
    exitWith(2)
  )

export const program = (argv: ReadonlyArray<string>, options?: RunOptions) =>
  run(argv, options).pipe(Effect.catchIf(ValidationError.isValidationError, usageError))
