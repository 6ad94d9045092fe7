// `graded` run in the test's own process, for the tests where a process of
// its own adds nothing: the same program bin/graded.mjs runs
// (internal/program.ts: `Cli.run`, a command line that does not parse is exit
// code 2), and what it printed on standard output and error and its exit code,
// as a child process's. A module named with -m is found from `cwd`; the lines
// of `input` answer the cards, as lines piped into standard input do, and its
// end rejects the open question, as a closed pipe does. Starting the command
// through tsx costs seconds of CPU; this, none.
// The command as a user starts it keeps its own tests: smoke.test.ts, and the
// files that need a process (terminals, crashes, races, servers).
import { NodeServices } from "@effect/platform-node"
import { Cause, Console, Effect, Exit, Layer, Terminal } from "effect"
import { Invocation } from "@graded/core"
import { Console as NodeConsole } from "node:console"
import { Writable } from "node:stream"
import { onTestFinished } from "vitest"
import { program } from "../src/internal/program.js"
import { ConfirmTerminal, ExitCode, WorkingDirectory } from "../src/internal/process.js"

export interface Options {
  /** Where the command runs: a module named with -m is found from here. */
  readonly cwd: string
  /** What a script would pipe into standard input: the answers to the cards, a line each. */
  readonly input?: string | undefined
  /** The person at the keyboard (`Cli.run`'s `by`); by default, cli:<the operating-system user>. */
  readonly by?: string | undefined
  /** The invocation the command runs inside: an app's, as when it runs `Cli.run` from a tool's code. */
  readonly within?: Partial<Invocation.Context> | undefined
}

export interface Ran {
  readonly out: string
  readonly err: string
  readonly code: number
}

// A stream that keeps what is written to it.
const captured = () => {
  let text = ""
  const stream = new Writable({
    write: (chunk, _encoding, done) => {
      text += String(chunk)
      done()
    }
  })
  return { stream, text: () => text }
}

// A terminal whose input is a pipe carrying `input`: one line per question,
// then end of input; what it displays goes to standard output, in order with
// what the command logs.
const pipedTerminal = (input: string, out: Writable): Terminal.Terminal => {
  const lines = input.split(/\r?\n/)
  if (lines.at(-1) === "") lines.pop()
  return Terminal.make({
    columns: Effect.succeed(0),
    rows: Effect.succeed(0),
    size: Effect.die("a pipe has no size"),
    readInput: Effect.die("a pipe has no keys to read"),
    readLine: Effect.suspend(() => {
      const line = lines.shift()
      return line === undefined ? Effect.fail(new Terminal.QuitError({})) : Effect.succeed(line)
    }),
    display: (text) => Effect.sync(() => void out.write(text))
  })
}

/** Runs `graded ...args` here, as `node bin/graded.mjs ...args` would run in `cwd`. */
export const graded = async (args: ReadonlyArray<string>, options: Options): Promise<Ran> => {
  const out = captured()
  const err = captured()
  const node = new NodeConsole({ stdout: out.stream, stderr: err.stream, colorMode: false })
  let code = 0
  const exit = await Effect.runPromiseExit(
    program(["node", "graded", ...args], { by: options.by }).pipe(
      Invocation.within(options.within ?? {}),
      Effect.provideService(WorkingDirectory, () => options.cwd),
      Effect.provideService(
        ConfirmTerminal,
        Layer.succeed(Terminal.Terminal, pipedTerminal(options.input ?? "", out.stream))
      ),
      Effect.provideService(ExitCode, (set) => void (code = set)),
      // Effect's Console is a node Console: this one writes to the captured streams,
      // formatted as console.log formats what the command prints on a pipe.
      Effect.provideService(Console.Console, node),
      Effect.provide(NodeServices.layer)
    )
  )
  // What NodeRuntime.runMain does with a failure the command did not handle: report it, exit code 1.
  if (Exit.isFailure(exit)) {
    node.error(Cause.pretty(exit.cause))
    code = 1
  }
  return { out: out.text(), err: err.text(), code }
}

/**
 * Sets environment variables a fixture module reads as each command runs
 * (which SQLite file, where deliveries are noted), until the running test
 * ends: the tests of a file run one at a time, and each names its own files.
 */
export const useEnv = (env: Record<string, string>): void => {
  const before = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]))
  Object.assign(process.env, env)
  onTestFinished(() => {
    for (const [key, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[key]
      else process.env[key] = value
    }
  })
}
