// The programs the tests start as child processes (a process killed with -9,
// an MCP server on stdio, a second process racing the first), built once per
// run into JavaScript: through tsx every start compiles and resolves graded's
// TypeScript again, about 6 CPU-seconds; built, it starts in under one.
//
// vitest's globalSetup (in the main process, before any worker starts) bundles
// every entry below in one esbuild pass, so the entries share one copy of each
// module (a CLI and the config module it loads agree on what a Toolkit is).
// Native modules and the packages that load them stay outside the bundle,
// imported by their absolute path, as node would find them from the source.
// `import.meta.url` keeps naming the source file, so a program still finds the
// fixtures beside it. Tests get a program's path with `built(entry)`.
//
// Each run builds into a folder of its own, named to the workers through the
// environment they inherit: two runs in one checkout (two terminals, or
// `pnpm test` beside a single file's run) no longer remove each other's
// programs. A run removes its folder at teardown, and a killed run's folder
// at the next run's start.
//
// The command as a user runs it (bin/graded.mjs through tsx) keeps its own
// smoke tests; these programs are what the tests need a process for.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const runs = path.join(root, "node_modules", ".cache", "graded-test-programs")
// The run's folder reaches the workers as an environment variable, set before
// they start: importing vitest's `inject` here would load vitest's runtime into
// the globalSetup.
const variable = "GRADED_TEST_PROGRAMS"

/** Every program a test starts, as paths from the repository's root. */
export const entries: ReadonlyArray<string> = [
  "examples/credit-desk/src/main.ts",
  "examples/mcp/src/main.ts",
  "examples/quickstart/src/main.ts",
  "examples/support-desk/src/chat.ts",
  "examples/support-desk/src/main.ts",
  "examples/support-desk/src/web.ts",
  "packages/cli/src/main.ts",
  // The modules the built CLI loads (plain node cannot import TypeScript), and a program of cards.
  "examples/support-desk/src/graded.config.ts",
  "packages/cli/test/fixtures/cards.ts",
  "packages/cli/test/fixtures/hostile.config.ts",
  "packages/cli/test/fixtures/mcp.config.ts",
  "packages/cli/test/fixtures/mcp-policy.config.ts",
  "packages/cli/test/fixtures/proposals.config.ts",
  "packages/mcp/test/fixtures/exitEarly.ts",
  "packages/mcp/test/fixtures/foreignStdio.ts",
  "packages/mcp/test/fixtures/serveLayerStdio.ts",
  "packages/mcp/test/fixtures/serveStdio.ts",
  "packages/sql/test/crashProcess.ts",
  "packages/sql/test/fallbackProcess.ts",
  "packages/sql/test/killRandomProcess.ts",
  "packages/sql/test/postgresProcess.ts",
  "packages/sql/test/sqliteProcess.ts",
  "packages/sql/test/sqliteReadonlyProcess.ts"
]

// Kept outside the bundle: native addons (and what requires them by a computed path). SQLite is Node's own
// (node:sqlite, outside as every node: module is).
const outside = /^(@lydell\/node-pty|@electric-sql\/)/

interface PluginBuild {
  readonly onResolve: (
    options: { readonly filter: RegExp },
    callback: (args: { path: string; kind: string; resolveDir: string; pluginData?: unknown }) => Promise<unknown>
  ) => void
  readonly onLoad: (
    options: { readonly filter: RegExp },
    callback: (args: { path: string }) => { contents: string; loader: string } | undefined
  ) => void
  readonly resolve: (
    path: string,
    options: { kind: string; resolveDir: string; pluginData?: unknown }
  ) => Promise<{ path: string; errors: ReadonlyArray<unknown> }>
}
interface Esbuild {
  readonly build: (options: Record<string, unknown>) => Promise<unknown>
}

const plugin = {
  name: "graded-test-programs",
  setup: (build: PluginBuild) => {
    build.onResolve({ filter: outside }, async (args) => {
      if (args.pluginData === "outside") return undefined
      const found = await build.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        pluginData: "outside"
      })
      return found.errors.length > 0 ? { errors: found.errors } : { path: found.path, external: true }
    })
    build.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined
      const url = JSON.stringify(pathToFileURL(args.path).href)
      const contents = readFileSync(args.path, "utf8").replaceAll("import.meta.url", url)
      return { contents, loader: "ts" }
    })
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** vitest's globalSetup: builds every entry into this run's folder; its teardown removes the folder. */
export default async function setup(): Promise<() => void> {
  mkdirSync(runs, { recursive: true })
  // Folders of runs whose process is gone (killed before their teardown), and the one fixed folder of before.
  for (const name of readdirSync(runs)) {
    const pid = /^run-(\d+)-/.exec(name)?.[1]
    if (pid === undefined || !alive(Number(pid))) rmSync(path.join(runs, name), { recursive: true, force: true })
  }
  const out = path.join(runs, `run-${process.pid}-${Date.now().toString(36)}`)
  mkdirSync(out, { recursive: true })
  process.env[variable] = out
  // esbuild comes with tsx, which the repository already depends on.
  const esbuild = createRequire(createRequire(import.meta.url).resolve("tsx/package.json"))("esbuild") as Esbuild
  await esbuild.build({
    entryPoints: entries.map((entry) => path.join(root, entry)),
    outbase: root,
    outdir: out,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    target: "node22",
    logLevel: "error",
    // A CommonJS package bundled into ESM may still call require.
    banner: {
      js:
        "import { createRequire as __gradedRequire } from \"node:module\"; const require = __gradedRequire(import.meta.url);"
    },
    plugins: [plugin]
  })
  return () => rmSync(out, { recursive: true, force: true })
}

/** The built program for `entry` (a path from the repository's root, as listed in `entries`). */
export const built = (entry: string): string => {
  if (!entries.includes(entry)) throw new Error(`${entry} is not among the programs test/built.ts builds`)
  const out = process.env[variable]
  if (out === undefined) {
    throw new Error(`${variable} is not set: test/built.ts builds the programs as the system project's globalSetup`)
  }
  const program = path.join(out, entry.replace(/\.[cm]?ts$/, ".mjs"))
  if (!existsSync(program)) {
    throw new Error(`${program} is missing: test/built.ts builds it as the system project's globalSetup`)
  }
  return program
}
