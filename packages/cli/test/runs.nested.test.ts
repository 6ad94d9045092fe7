// `graded runs` and `cancel` on a run whose sub-agent holds the send: the
// parent lists what its nested run waits on, with the path, and a cancel of
// the parent rejects it (runs-nested.config.ts).
import { Effect } from "effect"
import { Proposal, Runs } from "@graded/core"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { delivered, layer, toolkit } from "./fixtures/runs-nested.config.js"
import { graded as cli } from "./inProcess.js"

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "fixtures")

const graded = async (args: ReadonlyArray<string>, by = "cli:alice") => {
  const ran = await cli(["-m", "runs-nested.config.ts", ...args], { cwd: fixtures, by })
  return { ...ran, out: ran.out.replace(/\n$/, ""), err: ran.err.replace(/\n$/, "") }
}

describe("graded runs with a nested run", { timeout: 60_000 }, () => {
  it("the parent waits on its sub-agent's card, shown with its path; cancelling the parent rejects it", async () => {
    const started = await Effect.runPromise(
      Runs.start({ toolkit, prompt: "Your refund is on its way", runId: "run-n1" }).pipe(Effect.provide(layer))
    )
    expect(started.status).toBe("waiting")
    const proposal = started.status === "waiting" ? started.pending[0]!.id : ""
    const listed = await graded(["runs", "--status", "waiting"])
    expect(listed.out).toContain(`run-n1  waiting`)
    expect(listed.out).toContain(`  waits on ${proposal}  agent.desk → chat.sendMessage (send)  pending`)
    const json = (await graded(["runs", "--json", "--status", "waiting"])).out.trim().split("\n").map((line) =>
      JSON.parse(line)
    )
    expect(json).toContainEqual(expect.objectContaining({
      id: "run-n1",
      open: [{ id: proposal, tool: "chat.sendMessage", grade: "send", status: "pending", path: ["agent.desk"] }]
    }))
    // The child's run resumed on its own: refused, naming the parent.
    const direct = await graded(["resume", "run-n1:1:call_1"])
    expect(direct.code).not.toBe(0)
    expect(direct.err).toContain("resume run-n1")
    const cancelled = await graded(["cancel", "run-n1", "--reason", "withdrawn"], "cli:bob")
    expect(cancelled.code).toBe(0)
    expect(cancelled.out).toContain(`rejected: ${proposal}`)
    const record = await Effect.runPromise(Proposal.get(proposal).pipe(Effect.provide(layer)))
    expect(record).toMatchObject({ status: "rejected", decision: { by: "cli:bob" } })
    expect(delivered).toEqual([])
  })
})
