#!/usr/bin/env node
// The `graded` command. Installed, its bin is this file compiled (dist/main.js);
// in this repository, bin/graded.mjs runs it from its TypeScript source.
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Effect, Exit, Runtime } from "effect"
import { program } from "./internal/program.js"

// `graded audit file | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})

// Stopped by a signal (Ctrl-C, SIGTERM), as `graded mcp serve` is: the command
// was told to stop, not failed, so its exit code is the one it set, 0 unless
// it said otherwise (Effect 4's runtime would exit 130).
const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
    ? onExit(Number(process.exitCode ?? 0))
    : Runtime.defaultTeardown(exit, onExit)

program(process.argv).pipe(
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({ disableErrorReporting: false, teardown })
)
