// What a command takes from the process it runs in: the directory a module
// named on the command line is found from, the terminal a person answers the
// cards at, and where its exit code goes. The defaults are the process's own,
// which is what `graded` and an app that runs `Cli.run` get; a test that runs
// the command in its own process gives its own, and no global is touched.
import { Context, Effect, type Layer, type Terminal } from "effect"
import { TerminalConfirm } from "@graded/confirm"
import { Invocation } from "@graded/core"

export class WorkingDirectory extends Context.Reference<() => string>("@graded/cli/WorkingDirectory", {
  // Read at each command, not once: an app may change directory between two.
  defaultValue: () => () => process.cwd()
}) {}

export class ConfirmTerminal extends Context.Reference<Layer.Layer<Terminal.Terminal>>("@graded/cli/ConfirmTerminal", {
  defaultValue: () => TerminalConfirm.stdio
}) {}

export class ExitCode extends Context.Reference<(code: number) => void>("@graded/cli/ExitCode", {
  defaultValue: () => (code: number): void => void (process.exitCode = code)
}) {}

export const exitWith = (code: number): Effect.Effect<void> =>
  Effect.flatMap(ExitCode, (set) => Effect.sync(() => set(code)))

// Sealed where they are made (Invocation.seal), as Person is.
Invocation.seal(WorkingDirectory)
Invocation.seal(ConfirmTerminal)
Invocation.seal(ExitCode)
