import { spawn } from "node:child_process"
import { describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"
import { draft, runId } from "../src/supervised.js"

describe("pnpm demo:web", () => {
  it(
    "prints each person's confirm page, sends once a person approves there (recorded as who signed in); then the supervised run waits, the restarted app shows its card, and an edit there finishes it",
    async () => {
      // Its own process group, so the restarted app it starts ends with it; built (`pnpm demo:web` is tsx src/web.ts).
      const child = spawn(process.execPath, [built("examples/support-desk/src/web.ts")], {
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        env: { ...process.env, OPENAI_API_KEY: "" }
      })
      let out = ""
      let err = ""
      child.stdout.on("data", (chunk) => (out += chunk))
      child.stderr.on("data", (chunk) => (err += chunk))
      const until = async (pattern: RegExp) => {
        for (let i = 0; i < 600 && !pattern.test(out); i++) await new Promise((r) => setTimeout(r, 50))
        const match = pattern.exec(out)
        if (match === null) throw new Error(`never printed ${pattern}:\n${out}\n${err}`)
        return match
      }
      try {
        const [, origin, token] = await until(/Confirm page for alice: (http:\/\/127\.0\.0\.1:\d+)\/#token=(\w+)/)
        await until(/Confirm page for bob: /)
        await until(/waits for your decision/)
        const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
        let cards: Array<{ id: string; csrf: string; payload: { text: string } }> = []
        for (let i = 0; i < 100 && cards.length === 0; i++) {
          cards =
            ((await (await fetch(`${origin}/api/requests`, { headers })).json()) as { requests: typeof cards }).requests
          if (cards.length === 0) await new Promise((r) => setTimeout(r, 50))
        }
        expect(out).not.toContain("Sent:")
        const response = await fetch(`${origin}/api/requests/${cards[0]!.id}/decision`, {
          method: "POST",
          headers: { ...headers, "x-graded-csrf": cards[0]!.csrf },
          // alice's token, claiming to be someone else: the audit believes the token.
          body: JSON.stringify({ by: "mallory", action: "approve" })
        })
        expect(response.status).toBe(200)
        await until(/Sent: /)
        expect(out).toContain("DELIVERED chat.sendMessage, confirmed by alice")

        // The supervised run: it waits, the app restarts as a new process that serves the page again.
        await until(new RegExp(`The run ${runId} waits for Alice: chat\\.sendMessage`))
        const [, pid, again] = await until(
          /\[restarted app, pid (\d+)\] Confirm page for alice: (http:\/\/127\.0\.0\.1:\d+)\/#token=/
        )
        expect(Number(pid)).not.toBe(child.pid)
        let proposals: Array<{ id: string; kind?: string; csrf: string; payload: unknown }> = []
        for (let i = 0; i < 100 && proposals.length === 0; i++) {
          const listed = (await (await fetch(`${again}/api/requests`, { headers })).json()) as {
            requests: typeof proposals
          }
          proposals = listed.requests.filter((card) => card.kind === "proposal")
          if (proposals.length === 0) await new Promise((r) => setTimeout(r, 50))
        }
        expect(proposals).toHaveLength(1)
        expect(proposals[0]!.payload).toEqual({ to: "c-42", text: draft })
        // Nothing goes out, and the run does not finish, until someone decides.
        await new Promise((r) => setTimeout(r, 1200))
        expect(out).not.toContain("The model's answer")
        const text = "Hi Mei, fixed and reissued. Sorry! (edited on the page)"
        const decided = await fetch(`${again}/api/proposals/${proposals[0]!.id}/decision`, {
          method: "POST",
          headers: { ...headers, "x-graded-csrf": proposals[0]!.csrf },
          body: JSON.stringify({ action: "edit", payload: { to: "c-42", text } })
        })
        expect(decided.status, await decided.text()).toBe(200)
        // Resumed within a poll or two: the answer, then what the database and the chat say.
        await until(/The customer's chat got \d+ message\(s\) from the run:\n.*\n/)
        expect(out).toMatch(/Runs\.resume: the run finished after 3 rounds\. The model's answer:/)
        expect(out).toContain("Read back from the database: the run is finished;")
        expect(out).toMatch(/p-1 chat\.sendMessage is delivered, decided by alice with an edit, idempotency key [\w-]+/)
        expect(out).toContain("The customer's chat got 1 message(s) from the run:")
        expect(out).toContain(`to c-42 (key `)
        expect(out).toContain(`): ${text}`)
      } catch (error) {
        // What the demo said on its way out, with the failure.
        throw new Error(`${String(error)}\n--- demo stdout ---\n${out}\n--- demo stderr ---\n${err}`)
      } finally {
        // The demo's process group, if it is still there.
        try {
          if (child.pid !== undefined) process.kill(-child.pid)
        } catch {
          // It ended on its own.
        }
      }
    },
    60_000
  )
})
