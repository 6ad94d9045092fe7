#!/usr/bin/env node
// The `graded` command. Installed, its bin is this file compiled (dist/main.js);
// in this repository, bin/graded.mjs runs it from its TypeScript source.
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect } from "effect"
import { program } from "./internal/program.js"

// `graded audit file | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  throw error
})

program(process.argv).pipe(
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({ disableErrorReporting: false })
)
