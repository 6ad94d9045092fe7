import { spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const here = path.dirname(fileURLToPath(import.meta.url))
const tsx = path.resolve(here, "../../../node_modules/.bin/tsx")

describe("pnpm demo:web", () => {
  it(
    "prints each person's confirm page, waits, and sends once a person approves there, recorded as who they signed in as",
    async () => {
      const child = spawn(tsx, [path.resolve(here, "../src/web.ts")], { stdio: ["ignore", "pipe", "pipe"] })
      let out = ""
      child.stdout.on("data", (chunk) => (out += chunk))
      const until = async (pattern: RegExp) => {
        for (let i = 0; i < 600 && !pattern.test(out); i++) await new Promise((r) => setTimeout(r, 50))
        const match = pattern.exec(out)
        if (match === null) throw new Error(`never printed ${pattern}:\n${out}`)
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
      } finally {
        child.kill()
      }
    },
    60_000
  )
})
