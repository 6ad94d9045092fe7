// One copy of every Effect package in the workspace. Two versions of one
// (effect 4.1.4 for one package next to 4.1.5 for the rest), or one version
// installed twice against different peers, load two module instances whose
// service keys and type ids do not match each other's. Effect 4.1 holds what
// were @effect/platform, /cli, /sql, /experimental, /ai, /rpc, /cluster and
// /workflow: one of those left in the lock would bring an Effect 3 beside it.
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

const isEffect = (name: string) => name === "effect" || name.startsWith("@effect/")

// "  '@effect/sql-pg@4.0.5(effect@4.1.5)':" -> ["@effect/sql-pg", "4.0.5", the whole key]
const entry = (line: string): [string, string, string] | undefined => {
  const key = /^ {2}'?([^' ][^']*?)'?:\s*(\{\})?$/.exec(line)?.[1]
  if (key === undefined) return undefined
  const bare = key.replace(/\(.*$/, "")
  const at = bare.lastIndexOf("@")
  return at > 0 ? [bare.slice(0, at), bare.slice(at + 1), key] : undefined
}

/** The Effect 3 packages whose modules Effect 4.1 ships inside `effect`. */
const folded = [
  "@effect/platform",
  "@effect/cli",
  "@effect/sql",
  "@effect/experimental",
  "@effect/ai",
  "@effect/rpc",
  "@effect/cluster",
  "@effect/workflow"
]

/** Every Effect package the lock file names, by name. */
const names = (lockfile: string): ReadonlySet<string> =>
  new Set(
    lockfile.split("\n").flatMap((line) => {
      const found = entry(line)
      return found !== undefined && isEffect(found[0]) ? [found[0]] : []
    })
  )

/** Every Effect package the lock file holds in more than one version or more than one install, with what it holds. */
const duplicates = (lockfile: string): Record<string, ReadonlyArray<string>> => {
  const versions = new Map<string, Set<string>>()
  const installs = new Map<string, Set<string>>()
  // pnpm writes one YAML document for its own install and one for the workspace.
  for (const document of lockfile.split(/^---$/m)) {
    let section = ""
    for (const line of document.split("\n")) {
      if (/^\S/.test(line)) section = line.replace(/:.*$/, "")
      const found = entry(line)
      if (found === undefined || !isEffect(found[0])) continue
      const [name, version, key] = found
      if (section === "packages") versions.set(name, (versions.get(name) ?? new Set()).add(version))
      if (section === "snapshots") {
        installs.set(`${name}@${version}`, (installs.get(`${name}@${version}`) ?? new Set()).add(key))
      }
    }
  }
  const found: Record<string, ReadonlyArray<string>> = {}
  for (const [name, held] of versions) if (held.size > 1) found[name] = [...held]
  for (const [name, held] of installs) if (held.size > 1) found[name] = [...held]
  return found
}

describe("pnpm-lock.yaml", () => {
  const lockfile = readFileSync(new URL("../pnpm-lock.yaml", import.meta.url), "utf8")

  it("holds each effect and @effect/* package once: one version, installed once", () => {
    expect(lockfile).toMatch(/^ {2}effect@4\.1\.\d+:/m)
    expect(duplicates(lockfile)).toEqual({})
  })

  it("holds none of the packages Effect 4.1 has inside effect", () => {
    expect(names(lockfile).has("@effect/sql-pg")).toBe(true)
    expect(folded.filter((name) => names(lockfile).has(name))).toEqual([])
  })

  it("the check finds two versions, and one version installed against two peers", () => {
    const fixture = `---
lockfileVersion: '9.0'

packages:

  effect@4.1.4:
    resolution: {integrity: sha512-a}

  effect@4.1.5:
    resolution: {integrity: sha512-b}

  '@effect/sql-pg@4.0.5':
    resolution: {integrity: sha512-c}

  left-pad@1.0.0:
    resolution: {integrity: sha512-d}

  left-pad@1.3.0:
    resolution: {integrity: sha512-e}

snapshots:

  effect@4.1.4: {}

  effect@4.1.5: {}

  '@effect/sql-pg@4.0.5(effect@4.1.4)':
    dependencies:
      effect: 4.1.4

  '@effect/sql-pg@4.0.5(effect@4.1.5)':
    dependencies:
      effect: 4.1.5

  left-pad@1.0.0: {}
`
    expect(duplicates(fixture)).toEqual({
      "effect": ["4.1.4", "4.1.5"],
      "@effect/sql-pg@4.0.5": ["@effect/sql-pg@4.0.5(effect@4.1.4)", "@effect/sql-pg@4.0.5(effect@4.1.5)"]
    })
    expect([...names(fixture)]).toEqual(["effect", "@effect/sql-pg"])
  })
})
