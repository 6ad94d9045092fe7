// One copy of every Effect package in the workspace. Two versions of one
// (@effect/experimental 0.61.0 for the bench next to 0.61.1 for @effect/sql),
// or one version installed twice against different peers, load two module
// instances whose tags and type ids do not match each other's.
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

const isEffect = (name: string) => name === "effect" || name.startsWith("@effect/")

// "  '@effect/ai@0.37.0(@effect/experimental@0.61.1(...))(effect@3.22.4)':" -> ["@effect/ai", "0.37.0", the whole key]
const entry = (line: string): [string, string, string] | undefined => {
  const key = /^ {2}'?([^' ][^']*?)'?:\s*(\{\})?$/.exec(line)?.[1]
  if (key === undefined) return undefined
  const bare = key.replace(/\(.*$/, "")
  const at = bare.lastIndexOf("@")
  return at > 0 ? [bare.slice(0, at), bare.slice(at + 1), key] : undefined
}

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
  it("holds each effect and @effect/* package once: one version, installed once", () => {
    const lockfile = readFileSync(new URL("../pnpm-lock.yaml", import.meta.url), "utf8")
    expect(lockfile).toMatch(/^ {2}effect@3\.22\.\d+:/m)
    expect(duplicates(lockfile)).toEqual({})
  })

  it("the check finds two versions, and one version installed against two peers", () => {
    const lockfile = `---
lockfileVersion: '9.0'

packages:

  '@effect/experimental@0.61.0':
    resolution: {integrity: sha512-a}

  '@effect/experimental@0.61.1':
    resolution: {integrity: sha512-b}

  '@effect/sql@0.52.1':
    resolution: {integrity: sha512-c}

  left-pad@1.0.0:
    resolution: {integrity: sha512-d}

  left-pad@1.3.0:
    resolution: {integrity: sha512-e}

snapshots:

  '@effect/experimental@0.61.0(effect@3.22.4)':
    dependencies:
      effect: 3.22.4

  '@effect/sql@0.52.1(@effect/experimental@0.61.0(effect@3.22.4))':
    dependencies:
      effect: 3.22.4

  '@effect/sql@0.52.1(@effect/experimental@0.61.1(effect@3.22.4))':
    dependencies:
      effect: 3.22.4

  left-pad@1.0.0: {}
`
    expect(duplicates(lockfile)).toEqual({
      "@effect/experimental": ["0.61.0", "0.61.1"],
      "@effect/sql@0.52.1": [
        "@effect/sql@0.52.1(@effect/experimental@0.61.0(effect@3.22.4))",
        "@effect/sql@0.52.1(@effect/experimental@0.61.1(effect@3.22.4))"
      ]
    })
  })
})
