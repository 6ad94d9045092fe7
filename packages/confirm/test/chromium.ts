// Which Chromium the browser tests drive, decided once per run (vitest's
// globalSetup, in the main process, before any worker starts):
//
// 1. CHROMIUM_PATH, when set: that browser and no other, and it must work.
// 2. A system chromium that answers `--version` (Debian's, at /usr/bin/chromium,
//    or the first `chromium` on PATH): the first choice where it exists.
// 3. The Chromium that @sparticuz/chromium ships inside its npm package, so a
//    machine with only Node and npm runs the tests too. Where a system chromium
//    was found, the tests run in this one as well, so both paths stay tested.
//
// The packaged browser is unpacked (about 2-5 s, 200 MB) into a folder of the
// temp dir named by its version and user, and only by renaming a complete
// unpacking into place: a folder that exists is whole, whoever made it, and a
// run killed half way leaves only a staging folder that nobody reuses (and a
// later run removes once it is an hour old).
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import type { TestProject } from "vitest/node"

export interface Browser {
  /** Says which browser this is, for test names: where it came from, and its version. */
  readonly name: string
  readonly kind: "given" | "system" | "packaged"
  readonly executablePath: string
  /** Extra environment for the browser process. */
  readonly env: Readonly<Record<string, string>>
}

declare module "vitest" {
  export interface ProvidedContext {
    browsers: ReadonlyArray<Browser>
  }
}

const run = promisify(execFile)
const require = createRequire(import.meta.url)

const version = async (executable: string): Promise<string | undefined> => {
  try {
    const { stdout } = await run(executable, ["--version"], { timeout: 30_000 })
    return /Chrom(e|ium)/.test(stdout) ? stdout.trim() : undefined
  } catch {
    return undefined
  }
}

const onPath = (name: string): ReadonlyArray<string> =>
  (process.env.PATH ?? "").split(path.delimiter).filter(Boolean).map((dir) => path.join(dir, name))

const system = async (): Promise<Browser | undefined> => {
  for (const candidate of new Set(["/usr/bin/chromium", ...onPath("chromium")])) {
    if (!existsSync(candidate)) continue
    const found = await version(candidate)
    if (found !== undefined) {
      return { name: `${found} at ${candidate}`, kind: "system", executablePath: candidate, env: {} }
    }
  }
  return undefined
}

/** The packaged Chromium is a Linux x64 build. */
export const packagedRuns = process.platform === "linux" && process.arch === "x64"

// A staging folder untouched for an hour belongs to a run that was killed while unpacking.
const removeAbandoned = (home: string) => {
  const prefix = `${path.basename(home)}.staging-`
  for (const name of readdirSync(path.dirname(home))) {
    const full = path.join(path.dirname(home), name)
    if (name.startsWith(prefix) && Date.now() - statSync(full).mtimeMs > 3_600_000) {
      rmSync(full, { recursive: true, force: true })
    }
  }
}

const packaged = async (): Promise<Browser> => {
  const entry = require.resolve("@sparticuz/chromium")
  const { version: release } = require(path.resolve(path.dirname(entry), "../../package.json")) as { version: string }
  const uid = process.getuid?.() ?? "user"
  const home = path.join(os.tmpdir(), `graded-chromium-${release}-${uid}`)
  if (!existsSync(path.join(home, "chromium"))) {
    removeAbandoned(home)
    const staging = mkdtempSync(`${home}.staging-`)
    try {
      // The package unpacks into os.tmpdir(); a child process with its own
      // TMPDIR keeps that out of the shared temp dir and out of this process.
      await run(process.execPath, ["-e", "require(process.argv[1]).executablePath().then(() => {})", entry], {
        env: { ...process.env, TMPDIR: staging },
        timeout: 300_000
      })
      // Its fonts.conf names /tmp/fonts; this one names where the fonts are
      // here, after the system's configuration when there is one.
      writeFileSync(
        path.join(staging, "fonts.conf"),
        `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n` +
          `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n` +
          `  <dir>${path.join(home, "fonts")}</dir>\n  <cachedir>${
            path.join(home, "fonts-cache")
          }</cachedir>\n</fontconfig>\n`
      )
      renameSync(staging, home)
    } catch (error) {
      rmSync(staging, { recursive: true, force: true })
      // Another run renamed its complete unpacking into place first: use that one.
      if (!existsSync(path.join(home, "chromium"))) throw error
    }
  }
  return {
    name: `the Chromium in @sparticuz/chromium ${release}`,
    kind: "packaged",
    executablePath: path.join(home, "chromium"),
    env: { FONTCONFIG_FILE: path.join(home, "fonts.conf") }
  }
}

/** The browsers to test in, first choice first (see the header). */
export const resolve = async (): Promise<ReadonlyArray<Browser>> => {
  const given = process.env.CHROMIUM_PATH
  if (given !== undefined && given !== "") {
    const found = await version(given)
    if (found === undefined) {
      throw new Error(`CHROMIUM_PATH=${given} does not run as a Chromium (\`${given} --version\` failed)`)
    }
    return [{ name: `${found} at CHROMIUM_PATH`, kind: "given", executablePath: given, env: {} }]
  }
  const installed = await system()
  if (!packagedRuns) {
    if (installed === undefined) {
      throw new Error(
        `No chromium found, and the one @sparticuz/chromium ships runs on Linux x64 only: set CHROMIUM_PATH`
      )
    }
    return [installed]
  }
  const unpacked = await packaged()
  return installed === undefined ? [unpacked] : [installed, unpacked]
}

/** vitest's globalSetup: resolves the browsers once and hands them to the test files. */
export const setup = async (project: TestProject) => {
  project.provide("browsers", await resolve())
}
