import { spawn } from "node:child_process"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { built } from "../../../test/built.js"
import { run } from "../src/story.js"

// What the story must show, each a line it prints. Every one of these is a
// refusal or a decision the policy makes: without the policy layer, none is
// printed. A trailing newline means the line ends there.
const policyLines = [
  // The same conversation, two roles, two tool sets.
  "[agent:alice] offered: kb.search, account.balance, ticket.submit\n",
  // No account looked up yet: transfer.send waits for the lookup (the frozen-account rule fails closed).
  "[officer:ravi] offered: kb.search, account.balance, credit.score, ticket.submit\n",
  "left out credit.score [policy:role]: credit.score needs guideline credit-scores (role = \"credit-officer\"): " +
  "role = \"credit-officer\" does not hold (role is \"support\")",
  // The support agent naming the credit score: refused by the loop, and at the console by the policy.
  "[agent:alice] REFUSED credit.score at the offered gate: credit.score is not offered to the model here",
  "[agent:alice] REFUSED credit.score at the policy:role gate: credit.score needs guideline credit-scores",
  // The consent precondition, with its fixed message.
  "We need the customer's consent before checking their credit.",
  // The fallback past its quota: the fixed answer, and the case queued.
  "[model] REFUSED kb.search at the policy:fallback-quota gate: I cannot help with that here",
  "(over quota)"
]

const contains = (lines: ReadonlyArray<string>, wanted: string) => lines.some((line) => `${line}\n`.includes(wanted))

describe("pnpm demo:credit", () => {
  it(
    "runs with no API key and tells the story: two roles, a refusal audited with its guideline, a confirmed transfer, a ticket approved by rule, one action on two channels",
    async () => {
      // The demo in its own process, built (`pnpm demo:credit` itself, through tsx, is test/docs.test.ts's).
      const child = spawn(process.execPath, [built("examples/credit-desk/src/main.ts")], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, OPENAI_API_KEY: "" }
      })
      let out = ""
      let err = ""
      child.stdout.on("data", (chunk) => (out += chunk))
      child.stderr.on("data", (chunk) => (err += chunk))
      const code = await new Promise<number | null>((resolve) => child.on("close", resolve))
      expect(code, `${out}\n${err}`).toBe(0)
      const lines = out.split("\n")
      expect(lines[0]).toBe("Model: scripted (no API key needed)")
      for (const wanted of policyLines) expect(contains(lines, wanted), wanted).toBe(true)
      // The credit officer's score: its side effect and tags in the audit.
      expect(out).toContain(
        "[model] runs credit.score {\"customer\":\"c-42\"} {tags: pii, credit-bureau; side effects: records an inquiry at the credit bureau}"
      )
      // The transfer went out once a human confirmed it.
      expect(out).toContain(
        "Confirm card for officer:ravi: Transfer money (send) {\"customer\":\"c-42\",\"to\":\"savings-7731\",\"amount\":500}"
      )
      expect(out).toContain("[officer:ravi] DELIVERED transfer.send, confirmed by officer:ravi")
      // The low-priority ticket by rule, the high-priority one by Alice.
      expect(out).toContain("[agent:alice] DELIVERED ticket.submit, confirmed by rule:low-priority-tickets")
      expect(out).toContain(
        "Confirm card for agent:alice: Submit a ticket (write) {\"customer\":\"c-7\",\"subject\":\"Card reported stolen\""
      )
      // The manifest and the four-question review.
      expect(
        lines.some((line) =>
          /^\s+credit\.score\s+credit__score\s+read\s+credit-officer\s+pii, credit-bureau\s+records an inquiry/.test(
            line
          )
        )
      )
        .toBe(true)
      expect(out).toContain("The four-question contract review: No findings: every tool passes the four questions.")
      // The policy's own check: the one disagreement is resolved by priority.
      expect(out).toContain("warning conflict: transfers, frozen-accounts (transfer.send)")
      expect(out).toContain("0 errors, 1 warning")
      // One action, two channels.
      expect(out).toContain("{\"channel\":\"sms\",\"to\":\"+44 7700 900042\"")
      expect(out).toContain("{\"channel\":\"email\",\"to\":\"tom.berg@example.com\"")
      expect(out).toContain(
        "What left the bank: 1 transfer(s), 1 SMS, 1 e-mail(s), 2 ticket(s), 1 credit bureau inquiry(ies)."
      )
    },
    120_000
  )

  it.effect("its refusals come from the policy: with the layer removed, the support agent's credit check runs", () =>
    Effect.gen(function*() {
      const guarded: Array<string> = []
      const withPolicy = yield* run({ log: (line) => guarded.push(line) })
      for (const wanted of policyLines) expect(contains(guarded, wanted), wanted).toBe(true)
      expect(withPolicy.bank.inquiries).toEqual(["c-42"])
      expect(withPolicy.direct).toMatchObject({ ok: false, gate: "policy:role" })

      const open: Array<string> = []
      const withoutPolicy = yield* run({ log: (line) => open.push(line), policy: false })
      expect(policyLines.filter((wanted) => contains(open, wanted))).toEqual([])
      // The model's call, the console's and the one without consent all ran: three more bureau inquiries.
      expect(withoutPolicy.bank.inquiries).toEqual(["c-42", "c-42", "c-42", "c-42"])
      expect(withoutPolicy.direct.ok).toBe(true)
    }))
})
