// @effect/sql-pg and @graded/policy are optional peers of @graded/sql: an app
// on SQLite alone without a fallback installs neither. Run as such an app
// (withoutPeers.mjs fails every import of either, as node does for a package
// that is not there), Sql.sqlite comes up with the stores and the audit and
// asks for neither; what needs a missing package fails naming it. The program runs from source (tsx): a built one
// would hold both packages in its bundle.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { tempDir } from "./databases.js"

const execFileAsync = promisify(execFile)
const root = fileURLToPath(new URL("../../..", import.meta.url))
const here = fileURLToPath(new URL(".", import.meta.url))

describe("an app without @effect/sql-pg and @graded/policy", () => {
  it.live(
    "runs on Sql.sqlite, loads neither there, and is told which package PostgreSQL or the fallback store needs",
    () =>
      Effect.gen(function*() {
        const filename = path.join(yield* tempDir, "graded.db")
        const { stdout } = yield* Effect.promise(() =>
          execFileAsync(
            process.execPath,
            [
              "--import",
              "tsx",
              "--import",
              path.join(here, "withoutPeers.mjs"),
              path.join(here, "withoutPeersProcess.ts"),
              filename
            ],
            { cwd: root, timeout: 90_000 }
          )
        )
        const lines = stdout.trim().split("\n").map((line) => JSON.parse(line) as [string, unknown])
        const sqliteDone = lines.findIndex(([step]) => step === "sqlite done")
        expect(sqliteDone).toBeGreaterThan(0)
        // On SQLite: neither is looked for.
        expect(lines.slice(0, sqliteDone).filter(([step]) => step === "asked for")).toEqual([])
        const steps = Object.fromEntries(lines.filter(([step]) => step !== "asked for"))
        expect(steps).toEqual({
          proposed: true,
          pending: 1,
          audited: ["called", "proposed", "completed"],
          "fallback store": false,
          "sqlite done": "ok",
          postgres:
            "Sql.postgres needs @effect/sql-pg, and it is not installed: add it to the app (npm install @effect/sql-pg)",
          "open postgres":
            "Cannot read the audit in postgres://graded@127.0.0.1:1/graded: reading PostgreSQL needs @effect/sql-pg, and it is not installed",
          fallback: expect.stringContaining("Cannot find package '@graded/policy'"),
          done: "ok"
        })
      }).pipe(Effect.scoped),
    120_000
  )
})
