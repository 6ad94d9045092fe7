// A package's package.json as a user installs it, for `npm pack` and
// `pnpm pack` alike (each package's prepack and postpack run this).
// Inside the workspace a package exports its TypeScript sources and names
// its siblings with pnpm's `workspace:` protocol; npm knows neither. So before
// packing, `publish` writes the published form (publishConfig applied: the
// exports point at dist/; `workspace:` ranges replaced by the siblings'
// versions; no devDependencies) and keeps the workspace form beside it, and
// `restore` puts that back after. A pack killed between the two leaves
// package.json.workspace behind: `publish` refuses to run over it, and
// `restore` puts it back.
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import process from "node:process"
import path from "node:path"

const file = "package.json"
const kept = "package.json.workspace"
const mode = process.argv[2]

const siblings = () => {
  const packages = path.resolve("..")
  const versions = new Map()
  for (const dir of readdirSync(packages)) {
    const manifest = path.join(packages, dir, file)
    if (!existsSync(manifest)) continue
    const { name, version } = JSON.parse(readFileSync(manifest, "utf8"))
    versions.set(name, version)
  }
  return versions
}

const published = (range, name, versions) => {
  if (!range.startsWith("workspace:")) return range
  const version = versions.get(name)
  if (version === undefined) throw new Error(`${name}: not a package of this workspace (${range})`)
  const wanted = range.slice("workspace:".length)
  return wanted === "*" ? version : wanted === "^" || wanted === "~" ? `${wanted}${version}` : wanted
}

if (mode === "publish") {
  if (existsSync(kept)) {
    throw new Error(`${kept} exists: a pack was interrupted; run \`node ../../scripts/manifest.mjs restore\` first`)
  }
  const text = readFileSync(file, "utf8")
  const manifest = JSON.parse(text)
  const versions = siblings()
  const { publishConfig = {}, devDependencies: _, ...rest } = manifest
  const out = { ...rest, ...publishConfig }
  for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) {
    if (out[field] === undefined) continue
    out[field] = Object.fromEntries(
      Object.entries(out[field]).map(([name, range]) => [name, published(range, name, versions)])
    )
  }
  writeFileSync(kept, text)
  writeFileSync(file, JSON.stringify(out, null, 2) + "\n")
} else if (mode === "restore") {
  if (existsSync(kept)) renameSync(kept, file)
} else {
  throw new Error("usage: node scripts/manifest.mjs publish|restore (in a package's folder)")
}
