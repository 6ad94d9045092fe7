import { spawn } from "node:child_process"
import { describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"

// The demo in its own process (built; `pnpm demo:mcp` itself, through tsx, is
// test/docs.test.ts's), which spawns the server as another and talks to it
// with the SDK's Client over stdio.
const demo = () =>
  new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = spawn(process.execPath, [built("examples/mcp/src/main.ts")], { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk) => (out += chunk))
    child.stderr.on("data", (chunk) => (err += chunk))
    child.on("close", (code) => resolve({ code, out, err }))
  })

describe("pnpm demo:mcp", () => {
  it(
    "serves the support desk over stdio: the read runs; the write and the send run nothing until a human decides",
    async () => {
      const { code, err, out } = await demo()
      expect(code, `${out}\n${err}`).toBe(0)
      const lines = out.split("\n").map((line) => line.trim())
      const at = (wanted: string) => {
        const index = lines.indexOf(wanted)
        expect(index, `"${wanted}" in\n${out}`).toBeGreaterThanOrEqual(0)
        return index
      }

      // What the client sees: each tool by wire name, its grade from _meta, its annotations.
      at("kb__search             read   {\"readOnlyHint\":true,\"openWorldHint\":false}")
      at("ticket__submit         write  {\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":false}")
      at("chat__sendMessage      send   {\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":true}")

      // The read ran in the server and answered the client.
      at("kb__search ran: Changing the VAT number on invoices")
      at("[mcp:client] runs kb.search {\"query\":\"VAT number\"}")

      // The write and the send: a proposal each, nothing run by the server.
      const proposedTicket = at("[mcp:client] proposed ticket.submit for a human to decide (p-1)")
      at("[mcp:client] proposed chat.sendMessage for a human to decide (p-2)")
      at("ticket__submit: requires confirmation, proposal p-1 (pending)")
      at("chat__sendMessage: requires confirmation, proposal p-2 (pending)")
      const auditLines = lines.filter((line) => line.startsWith("["))
      // The only write the server itself ran is the one a person approved in the form (below).
      expect(auditLines.filter((line) => /\bruns (ticket\.submit|chat\.sendMessage) \{/.test(line))).toEqual([
        "[mcp:client] runs ticket.submit {\"subject\":\"Refund for March\",\"body\":\"Charged twice.\"}"
      ])

      // The write ran once, after Alice approved it, in her process; the send was rejected and never went out.
      const approved = at("[agent:alice] agent:alice approved ticket.submit")
      const delivered = at("[agent:alice] DELIVERED ticket.submit, confirmed by agent:alice")
      expect(proposedTicket).toBeLessThan(approved)
      expect(approved).toBeLessThan(delivered)
      // The form: the second client's person saw the write first and approved an edit; only then did it run.
      at("the form: WRITE: Submit a ticket (ticket.submit); fields graded/decision, subject, body, graded/reason")
      const asked = at(
        "[mcp:client] asks a human to confirm ticket.submit (write) with {\"subject\":\"Refund for March\",\"body\":\"Charged twice.\"}"
      )
      const viaForm = at("[mcp:client] mcp:desk-app@1.0.0 approved ticket.submit (edited)")
      expect(asked).toBeLessThan(viaForm)
      expect(auditLines.filter((line) => line.includes("DELIVERED"))).toEqual([
        lines[delivered],
        "[mcp:client] DELIVERED ticket.submit, confirmed by mcp:desk-app@1.0.0"
      ])
      at("[agent:alice] agent:alice rejected chat.sendMessage: I will call her instead")
      at("p-1 delivered: ticket {\"id\":\"T-1200\"} filed")
      at("p-2 rejected: chat.sendMessage was rejected by agent:alice: I will call her instead")
      at("tickets filed: [{\"id\":\"T-1200\",\"subject\":\"VAT number wrong again\"}]")
      at("messages to the customer: []")
    },
    120_000
  )
})
