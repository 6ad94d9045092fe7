// The command as bin/graded.mjs runs it: `Cli.run`, and a command line that
// cannot be parsed is the person's mistake, not a crash. effect/cli has
// already said what is wrong (Cli.ts's presenter); an unknown or missing
// command also gets the list of commands. Exit code 2, as for any usage
// error. Shared by main.ts and the tests that run the command in their own process.
import { Console, Effect } from "effect"
import { CliError } from "effect/cli"
import { run, type RunOptions, usage } from "../Cli.js"
import { exitWith } from "./process.js"

const usageError = (error: CliError.CliError) =>
  Effect.andThen(
    error._tag !== "ShowHelp" || error.errors.length === 0 ||
      error.errors.some((wrong) => wrong._tag === "UnknownSubcommand")
      ? Console.error(`\n${usage()}`)
      : Console.error("`graded --help` lists the commands and their options."),
    exitWith(2)
  )

export const program = (argv: ReadonlyArray<string>, options?: RunOptions) =>
  run(argv, options).pipe(Effect.catchIf(CliError.isCliError, usageError))
