// graded's packages as a user installing them runs them: compiled.
//
// - `node gradedBuild.mjs` builds @graded/core and @graded/mcp
//   (packages/<name>/dist, from nothing: old output and build info removed);
// - `node --import ./gradedBuild.mjs …` resolves `@graded/<name>` and
//   `@graded/<name>/<module>` to those builds in that process instead of the
//   TypeScript sources the workspace's package.json files point to (the rest,
//   the benchmark's own scripts included, loads as it would without it).
import { execFileSync } from "node:child_process"
import { rmSync } from "node:fs"
import { register } from "node:module"
import * as path from "node:path"
import { argv, stdout } from "node:process"
import { fileURLToPath, pathToFileURL } from "node:url"
import { isMainThread } from "node:worker_threads"

const here = path.dirname(fileURLToPath(import.meta.url))
const packages = path.join(here, "../packages")
const built = ["core", "mcp"]

/** The module hook: `@graded/<name>[/<module>]` to `packages/<name>/dist/<module or index>.js`. */
export const resolve = (specifier, context, next) => {
  const match = /^@graded\/([^/]+)(?:\/(.+))?$/.exec(specifier)
  if (match === null || !built.includes(match[1])) return next(specifier, context)
  const [, name, module] = match
  return { url: pathToFileURL(path.join(packages, name, "dist", `${module ?? "index"}.js`)).href, shortCircuit: true }
}

if (argv[1] === fileURLToPath(import.meta.url)) {
  stdout.write(`Building @graded/${built.join(", @graded/")} (packages/*/dist)...\n`)
  for (const name of built) {
    rmSync(path.join(packages, name, "dist"), { recursive: true, force: true })
    rmSync(path.join(packages, name, "tsconfig.build.tsbuildinfo"), { force: true })
  }
  execFileSync("node", [
    path.join(here, "node_modules/typescript/bin/tsc"),
    "-b",
    path.join(packages, "mcp/tsconfig.build.json")
  ], { stdio: "inherit" })
} else if (isMainThread) {
  register(import.meta.url)
}
