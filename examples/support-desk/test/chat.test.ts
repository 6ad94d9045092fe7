import { spawn } from "node:child_process"
import { describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"
import { read } from "../../../packages/confirm/test/chatClient.js"
import { draft } from "../src/chat.js"

describe("pnpm demo:chat", () => {
  it(
    "prints each person's chat; a question streams its answer, the drafted reply waits there as a card, the page closed and reopened goes on with the same run, the reply is sent once approved (as who signed in), and the answer goes on; Ctrl-C stops it",
    async () => {
      // Its own process group; built (`pnpm demo:chat` is tsx src/chat.ts).
      const child = spawn(process.execPath, [built("examples/support-desk/src/chat.ts")], {
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
        env: { ...process.env, OPENAI_API_KEY: "" }
      })
      let out = ""
      let err = ""
      child.stdout.on("data", (chunk) => (out += chunk))
      child.stderr.on("data", (chunk) => (err += chunk))
      const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
      const until = async (pattern: RegExp) => {
        for (let i = 0; i < 600 && !pattern.test(out); i++) await new Promise((r) => setTimeout(r, 50))
        const match = pattern.exec(out)
        if (match === null) throw new Error(`never printed ${pattern}:\n${out}\n${err}`)
        return match
      }
      try {
        const [, origin, token] = await until(/Chat for alice: (http:\/\/127\.0\.0\.1:\d+)\/chat#token=(\w+)/)
        await until(/Chat for bob: /)
        expect(out).toContain("Model: scripted (no API key needed)")
        const page = await fetch(`${origin}/chat`)
        expect(page.status).toBe(200)
        expect(await page.text()).toContain("graded: support chat")
        const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
        const me = (await (await fetch(`${origin}/api/me`, { headers })).json()) as { by: string; chatCsrf: string }
        expect(me.by).toBe("alice")
        const controller = new AbortController()
        const answer = read(
          await fetch(`${origin}/api/chat`, {
            method: "POST",
            signal: controller.signal,
            headers: { ...headers, "x-graded-csrf": me.chatCsrf },
            body: JSON.stringify({ messages: [{ role: "user", content: "Mei's invoice has the old VAT number." }] })
          }),
          controller
        )
        expect(answer.status).toBe(200)
        const { card } = await answer.until((event) => event.type === "card", 20_000)
        const before = answer.events.slice(0, answer.events.indexOf(answer.events.find((e) => e.type === "card")!))
        expect(before.filter((event) => event.type === "text").length).toBeGreaterThan(10)
        expect(before).toContainEqual({ type: "call", id: "call_1", tool: "kb.search", ok: true })
        expect(card).toMatchObject({ tool: "chat.sendMessage", payload: { to: "c-42", text: draft } })
        // Nothing goes out until someone decides.
        await new Promise((r) => setTimeout(r, 300))
        expect(out).not.toContain("DELIVERED")
        // The page closes while the draft waits; reopened, the chat goes on with the same run.
        const { runId } = answer.events.find((event) => event.type === "run")!
        answer.close()
        await answer.ended
        const again = new AbortController()
        const resumed = read(
          await fetch(`${origin}/api/chat/resume`, {
            method: "POST",
            signal: again.signal,
            headers: { ...headers, "x-graded-csrf": me.chatCsrf },
            body: JSON.stringify({ runId })
          }),
          again
        )
        expect(resumed.status).toBe(200)
        await resumed.until((event) => event.type === "card" && event.card.id === card.id, 20_000)
        expect(resumed.events.find((event) => event.type === "history")?.messages[0]).toEqual({
          role: "user",
          content: "Mei's invoice has the old VAT number."
        })
        const decided = await fetch(`${origin}/api/proposals/${card.id}/decision`, {
          method: "POST",
          headers: { ...headers, "x-graded-csrf": card.csrf },
          // alice's token, claiming to be someone else: the audit believes the token.
          body: JSON.stringify({ by: "mallory", action: "approve" })
        })
        expect(decided.status).toBe(200)
        const end = await resumed.until((event) => event.type === "end", 20_000)
        expect(end.answer).toMatch(/^The reply is on its way to Mei\./)
        expect(out).toContain("DELIVERED chat.sendMessage, confirmed by alice")
        // Ctrl-C: the server closes, and the demo says what went out.
        process.kill(-child.pid!, "SIGINT")
        expect(await exited).toBe(0)
        expect(out).toContain("Stopped. Messages that reached the customer: 1")
      } catch (error) {
        throw new Error(`${String(error)}\n--- demo stdout ---\n${out}\n--- demo stderr ---\n${err}`)
      } finally {
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
