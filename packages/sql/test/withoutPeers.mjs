// Loaded with `node --import` by optionalPeers.test.ts: the process runs as in
// an app that installed neither @effect/sql-pg nor @graded/policy (both
// optional peers of @graded/sql). Every attempt to load one fails as node
// fails it for a package that is not there, and is written to stdout, between
// the program's own lines.
import { registerHooks } from "node:module"
import process from "node:process"

const missing = /^(@effect\/sql-pg|@graded\/policy)(\/|$)/

registerHooks({
  resolve(specifier, context, next) {
    if (!missing.test(specifier)) return next(specifier, context)
    process.stdout.write(`${JSON.stringify(["asked for", specifier])}\n`)
    const error = new Error(`Cannot find package '${specifier}' imported from ${context.parentURL}`)
    error.code = "ERR_MODULE_NOT_FOUND"
    throw error
  }
})
