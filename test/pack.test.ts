// The packages as a user gets them: each package built and packed (with npm
// and with pnpm: their tarballs differ in how they are made), installed from
// the tarballs into a fresh folder outside the workspace, with effect 4.1 and
// the other dependencies from the npm registry, by npm and by pnpm; then the
// quickstart compiled there with `skipLibCheck: false` (our declaration files
// and Effect's must compile in a user's strict project) and run, and the
// installed `graded` command started. Nothing of the workspace is reachable
// from the folder: no `workspace:` range, no TypeScript source export.
import { execFileSync } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const packages = readdirSync(path.join(root, "packages")).sort()
const work = mkdtempSync(path.join(tmpdir(), "graded-pack-"))
const minutes = 60_000

// pnpm as `pnpm test` runs it (npm_execpath), else the version the README names.
const pnpm = (args: ReadonlyArray<string>, cwd: string): string => {
  const execPath = process.env["npm_execpath"]
  if (execPath === undefined || !/pnpm/.test(execPath)) return run("npx", ["-y", "pnpm@12.4.2", ...args], cwd)
  // A JavaScript entry runs under this Node; pnpm's own launcher (a script or a binary) runs as it is.
  return /\.[cm]?js$/.test(execPath) ? run(process.execPath, [execPath, ...args], cwd) : run(execPath, args, cwd)
}

const run = (command: string, args: ReadonlyArray<string>, cwd: string): string => {
  try {
    return execFileSync(command, args, {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      // Outside the workspace: no pnpm workspace settings leak in.
      env: { ...process.env, npm_config_workspace: "", PNPM_HOME: process.env["PNPM_HOME"] ?? "" }
    })
  } catch (error) {
    // What the command printed says why it failed (a compile error, a missing module).
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string }
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd}:\n${stdout}\n${stderr}`)
  }
}

const quickstart = readFileSync(path.join(root, "examples/quickstart/src/main.ts"), "utf8")
const effectVersion: string = JSON.parse(readFileSync(path.join(root, "packages/core/package.json"), "utf8"))
  .peerDependencies.effect

// Packed from a copy of each built package (the packer's prepack rewrites
// package.json while it packs: never in the checkout others work in).
const copied = (): string => {
  const copy = path.join(work, "source")
  cpSync(path.join(root, "scripts"), path.join(copy, "scripts"), { recursive: true })
  for (const name of packages) {
    const from = path.join(root, "packages", name)
    for (const entry of readdirSync(from)) {
      if (entry === "node_modules" || entry === "test" || entry.endsWith(".tsbuildinfo")) continue
      cpSync(path.join(from, entry), path.join(copy, "packages", name, entry), { recursive: true })
    }
  }
  return copy
}

const tarballs = (packer: "npm" | "pnpm", source: string): Record<string, string> => {
  const dir = path.join(work, `tarballs-${packer}`)
  mkdirSync(dir, { recursive: true })
  for (const name of packages) {
    const cwd = path.join(source, "packages", name)
    if (packer === "npm") run("npm", ["pack", "--silent", "--pack-destination", dir], cwd)
    else pnpm(["pack", "--pack-destination", dir], cwd)
  }
  const files = readdirSync(dir).filter((file) => file.endsWith(".tgz"))
  expect(files).toHaveLength(packages.length)
  return Object.fromEntries(files.map((file) => {
    const name = file.replace(/^graded-/, "").replace(/-\d+\.\d+\.\d+\.tgz$/, "")
    return [`@graded/${name}`, `file:${path.join(dir, file)}`]
  }))
}

// A user's strict project.
const strict = {
  target: "ES2022",
  module: "NodeNext",
  moduleResolution: "NodeNext",
  strict: true,
  exactOptionalPropertyTypes: true,
  skipLibCheck: false,
  types: ["node"],
  outDir: "dist"
}

// One folder per packer and installer: each install starts with no lockfile (CI
// sets CI=true, under which pnpm refuses to update a lockfile another install left).
const app = (packer: "npm" | "pnpm", installer: "npm" | "pnpm", graded: Record<string, string>): string => {
  const dir = path.join(work, `app-${packer}-${installer}`)
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    path.join(dir, "package.json"),
    JSON.stringify(
      {
        name: "an-effect-app",
        private: true,
        type: "module",
        dependencies: {
          ...graded,
          effect: effectVersion,
          "@effect/platform-node": "^4.1.0",
          openai: "^6.30.0"
        },
        devDependencies: { "@types/node": "^24.0.0", typescript: "6.0.3" },
        // A sibling graded package named by a tarball's own dependencies is the tarball too
        // (pnpm reads its overrides from pnpm-workspace.yaml, below).
        ...(installer === "npm" ? { overrides: graded } : {})
      },
      null,
      2
    )
  )
  writeFileSync(
    path.join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: strict,
      include: ["main.ts", "everything.ts"]
    })
  )
  writeFileSync(path.join(dir, "main.ts"), quickstart)
  // Every package's declarations, compiled with the quickstart.
  writeFileSync(
    path.join(dir, "everything.ts"),
    Object.keys(graded).map((name) =>
      // @graded/effect-ai as effectAi: a package's name as an identifier.
      `export * as ${
        name.slice("@graded/".length).replace(/-(\w)/g, (_, c: string) => c.toUpperCase())
      } from "${name}"\n`
    ).join("")
  )
  if (installer === "npm") run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], dir)
  else {
    writeFileSync(
      path.join(dir, "pnpm-workspace.yaml"),
      ["overrides:", ...Object.entries(graded).map(([name, spec]) => `  "${name}": "${spec}"`), ""].join("\n")
    )
    pnpm(["install", "--no-frozen-lockfile"], dir)
  }
  return dir
}

describe.each(["npm", "pnpm"] as const)("packed with %s", (packer) => {
  let graded: Record<string, string> = {}

  beforeAll(() => {
    pnpm(["-r", "--filter", "./packages/*", "build"], root)
    graded = tarballs(packer, copied())
  }, 10 * minutes)

  it("names no workspace: range and exports no TypeScript source", () => {
    for (const [name, spec] of Object.entries(graded)) {
      const listing = run("tar", ["-xzOf", spec.slice("file:".length), "package/package.json"], work)
      expect(listing, name).not.toMatch(/workspace:/)
      const manifest = JSON.parse(listing)
      expect(JSON.stringify(manifest.exports), name).not.toMatch(/\.\/src\//)
      expect(manifest.engines?.node, name).toBe(">=22.19")
      expect(manifest.peerDependencies?.effect, name).toMatch(/^\^4\./)
    }
  })

  // What @graded/sql's README installs, and nothing else: not @graded/policy,
  // an optional peer no type of the index names.
  it("an app of @graded/core and @graded/sql alone compiles with skipLibCheck: false", () => {
    const dir = path.join(work, `app-${packer}-sql`)
    mkdirSync(dir, { recursive: true })
    const listed = ["@graded/core", "@graded/sql"]
    writeFileSync(
      path.join(dir, "package.json"),
      JSON.stringify({
        name: "a-durable-app",
        private: true,
        type: "module",
        dependencies: { ...Object.fromEntries(listed.map((name) => [name, graded[name]])), effect: effectVersion },
        devDependencies: { "@types/node": "^24.0.0", typescript: "6.0.3" },
        overrides: graded
      })
    )
    writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: strict, include: ["main.ts"] }))
    writeFileSync(
      path.join(dir, "main.ts"),
      [
        `import { Effect } from "effect"`,
        `import { Proposal } from "@graded/core"`,
        `import { Sql } from "@graded/sql"`,
        `await Effect.runPromise(Proposal.list().pipe(Effect.provide(Sql.sqlite({ filename: ":memory:" }))))`,
        `console.log("listed")`,
        ""
      ].join("\n")
    )
    run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], dir)
    run(process.execPath, [path.join(dir, "node_modules/typescript/bin/tsc"), "-p", "."], dir)
    expect(run(process.execPath, [path.join(dir, "dist/main.js")], dir)).toContain("listed")
  }, 5 * minutes)

  describe.each(["npm", "pnpm"] as const)("installed with %s", (installer) => {
    let dir = ""
    beforeAll(() => {
      dir = app(packer, installer, graded)
    }, 10 * minutes)

    it("compiles the quickstart with skipLibCheck: false and runs it", () => {
      run(process.execPath, [path.join(dir, "node_modules/typescript/bin/tsc"), "-p", "."], dir)
      const output = run(process.execPath, [path.join(dir, "dist/main.js")], dir)
      expect(output).toContain("See 'Changing the VAT number'. { sent: true }")
      expect(output).toContain("sending Billing > Settings > Tax ID.")
    }, 5 * minutes)

    it("runs the graded command from its compiled JavaScript", () => {
      const bin = path.join(dir, "node_modules/.bin/graded")
      const help = run(bin, ["--help"], dir)
      expect(help).toMatch(/graded/)
    }, 5 * minutes)
  })
})

// Four installed apps' node_modules: on a loaded machine removing them took
// over the default minute (.ci/run beside other work), with every test passed.
afterAll(() => rm(work, { recursive: true, force: true }), 300_000)
