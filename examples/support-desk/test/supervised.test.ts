// `pnpm demo`'s last part, src/main.ts in a process of its own (built; `pnpm
// demo` itself, through tsx, is test/docs.test.ts's): a supervised run waits for Alice in a SQLite file, the
// app restarts as a second process, Alice edits and approves the reply there,
// and the run finishes. The story is read from what the demo prints: which
// process printed what, what the customer's chat holds, and what the database
// says once the second process has gone.
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"
import { draft, edited, runId } from "../src/supervised.js"

const demo = () =>
  new Promise<{ code: number | null; out: string }>((resolve) => {
    // No OPENAI_API_KEY: the scripted model, whatever the machine has set.
    const env = { ...process.env, OPENAI_API_KEY: "" }
    execFile(
      process.execPath,
      [built("examples/support-desk/src/main.ts")],
      { env, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, out: stdout + stderr })
    )
  })

describe("pnpm demo, the supervised run", () => {
  it(
    "waits for Alice, survives a restart into a new process, delivers her edit once with its key, and finishes",
    async () => {
      const { code, out } = await demo()
      expect(code, out).toBe(0)
      const lines = out.split("\n")
      const at = (pattern: RegExp) => {
        const index = lines.findIndex((line) => pattern.test(line))
        expect(index, `no line matches ${pattern}:\n${out}`).toBeGreaterThanOrEqual(0)
        return { index, match: pattern.exec(lines[index]!)! }
      }

      // The first four parts are still there.
      at(/^Messages that reached the customer: 1$/)

      // The run waits with the model's draft, before anything restarts.
      const waiting = at(
        new RegExp(`^ {3}The run ${runId} waits for Alice: chat\\.sendMessage (\\{.*\\}) \\((p-\\d+)\\)$`)
      )
      expect(JSON.parse(waiting.match[1]!)).toEqual({ to: "c-42", text: draft })
      const proposal = waiting.match[2]!

      // A real restart: another process, on the same file, which the demo removes afterwards.
      const restart = at(/The app restarts: this process \(pid (\d+)\) has closed the database/)
      const opened = at(/^ {3}\[restarted app, pid (\d+)\] Opened (.+): the run /)
      expect(opened.match[1]).not.toBe(restart.match[1])
      expect(existsSync(path.dirname(opened.match[2]!))).toBe(false)
      const second = `[restarted app, pid ${opened.match[1]}]`

      // In the second process: Alice sees the draft, edits it, approves; it is delivered once, with a key.
      const card = at(/Alice's confirm card: Send a chat message \(send\) (\{.*\})$/)
      expect(lines[card.index]).toContain(second)
      expect(JSON.parse(card.match[1]!)).toEqual({ to: "c-42", text: draft })
      const approves = at(/Alice edits the reply and approves it\.$/)
      const delivered = at(new RegExp(`Delivered ${proposal} once, to c-42, with idempotency key ([\\w-]+): (".*")$`))
      expect(lines[delivered.index]).toContain(second)
      expect(JSON.parse(delivered.match[2]!)).toBe(edited)
      const key = delivered.match[1]!
      expect(lines.filter((line) => line.includes("Delivered "))).toHaveLength(1)

      // The run finished there, with the model's answer after the delivery.
      const finished = at(/Runs\.resume: the run finished after 3 rounds\. The model's answer:$/)
      expect(lines[finished.index]).toContain(second)
      expect(lines[finished.index + 1]).toContain("I replied to Mei")

      // Back in the first process: the database and the customer's chat agree.
      const readBack = at(/^ {3}Read back from the database: the run is finished;$/)
      at(
        new RegExp(
          `^ {3}${proposal} chat\\.sendMessage is delivered, decided by agent:alice with an edit, idempotency key ${key}$`
        )
      )
      const chat = at(/^ {3}The customer's chat got (\d+) message\(s\) from the run:$/)
      expect(chat.match[1]).toBe("1")
      expect(lines[chat.index + 1]).toBe(`     to c-42 (key ${key}): ${edited}`)

      // And in that order.
      const order = [waiting, restart, opened, card, approves, delivered, finished, readBack, chat].map((l) => l.index)
      expect(order).toEqual([...order].sort((a, b) => a - b))
    },
    150_000
  )
})
