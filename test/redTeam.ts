// The red-team report: each surface's suite (the model loop, the web confirm
// page, the terminal and CLI) records every attack it tried and what happened,
// and after the suite writes .artifacts/red-team/<surface>.md and prints one
// line, so a run shows per surface how many attacks were tried and held.
import { mkdirSync, writeFileSync } from "node:fs"
import path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll } from "vitest"

const artifacts = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../.artifacts/red-team")

export interface Report {
  /** Call when an attack starts; call the result with what happened once every check of it passed. */
  readonly attack: (name: string) => (outcome: string) => void
}

export const redTeam = (surface: string): Report => {
  const rows: Array<{ name: string; outcome: string | undefined }> = []
  afterAll(() => {
    const held = rows.filter((row) => row.outcome !== undefined).length
    const table = rows.map((row) =>
      `| ${row.name.replaceAll("|", "\\|")} | ${(row.outcome ?? "NOT HELD (its test failed)").replaceAll("|", "\\|")} |`
    )
    mkdirSync(artifacts, { recursive: true })
    const file = path.join(artifacts, `${surface.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}.md`)
    writeFileSync(
      file,
      [
        `# Red team: ${surface}`,
        "",
        `${held} of ${rows.length} attacks held.`,
        "",
        "| attack | what happened |",
        "|---|---|",
        ...table,
        ""
      ].join("\n")
    )
    console.log(
      `red team · ${surface}: ${rows.length} attacks tried, ${held} held (${path.relative(process.cwd(), file)})`
    )
  })
  return {
    attack: (name) => {
      const row: { name: string; outcome: string | undefined } = { name, outcome: undefined }
      rows.push(row)
      return (outcome) => {
        row.outcome = outcome
      }
    }
  }
}
