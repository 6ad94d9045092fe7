// The run timeline end to end in a real browser (playwright-core; chromium.ts
// picks the browsers): the credit desk's audit on /runs, two roles on the
// same conversation with their different candidate sets and the reasons,
// a refusal, an approval with who made it; hostile tool names and payloads
// shown as text that runs nothing. Screenshots go to .artifacts/images, or to
// docs/images with GRADED_SCREENSHOTS=docs.
import { Effect, Exit, Scope } from "effect"
import { mkdirSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import type { Audit } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { run as creditDesk } from "../../../examples/credit-desk/src/story.js"
import type * as Chromium from "./chromium.js"
import { launch } from "./launch.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const artifacts = path.resolve(here, "../../../.artifacts/images")
const images = process.env.GRADED_SCREENSHOTS === "docs" ? path.resolve(here, "../../../docs/images") : artifacts
mkdirSync(images, { recursive: true })
mkdirSync(artifacts, { recursive: true })

const browsers: ReadonlyArray<Chromium.Browser> = inject("browsers")

const attack = `<img src=x onerror="window.__pwned='img'"><script>window.__pwned='script'</script>`
const at = "2026-01-01T00:00:00.000Z"
// A run whose tool names, reasons and payloads a hostile model and client chose.
const hostile: ReadonlyArray<Audit.Entry> = [
  {
    type: "offered",
    tools: [attack],
    suppressed: [{ tool: "x.y", reason: attack, gate: attack }],
    at,
    traceId: "hostile-run",
    actor: attack,
    autonomous: true
  },
  {
    type: "refused",
    tool: attack,
    gate: "offered",
    reason: "not offered",
    at,
    traceId: "hostile-run",
    actor: attack,
    autonomous: true
  },
  {
    type: "confirm-requested",
    tool: "chat.sendMessage",
    grade: "send",
    payload: { text: attack },
    at,
    traceId: "hostile-run",
    actor: attack,
    autonomous: false
  },
  {
    type: "decided",
    tool: "chat.sendMessage",
    by: attack,
    decision: "rejected",
    edited: false,
    reason: attack,
    at,
    traceId: "hostile-run",
    actor: attack,
    autonomous: false
  }
]

let scope: Scope.Closeable
let server: WebConfirm.Server
let entries: ReadonlyArray<Audit.Entry>
let runs: ReadonlyArray<
  { readonly trace: string; readonly actor?: string; readonly tools: ReadonlyArray<string>; readonly refusals: number }
>

beforeAll(async () => {
  const story = await Effect.runPromise(creditDesk({ log: () => {} }))
  entries = [...story.entries, ...hostile]
  scope = Effect.runSync(Scope.make())
  server = (await Effect.runPromise(
    Scope.provide(WebConfirm.make({ singleUser: true, timeline: { entries: Effect.sync(() => entries) } }), scope)
  )).server
  const listed = await fetch(`${server.origin}/api/runs`, { headers: { authorization: `Bearer ${server.token}` } })
  runs = ((await listed.json()) as { runs: typeof runs }).runs
}, 60_000)

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
})

const runLink = (trace: string) => `${server.origin}/runs#${new URLSearchParams({ token: server.token!, run: trace })}`

// Opens one run and waits for its own heading: between two runs only the
// fragment changes, and the page redraws after it has fetched the new run.
const openRun = async (page: Page, trace: string) => {
  await page.goto(runLink(trace))
  await page.locator("div.card h2", { hasText: `Run ${trace}` }).waitFor()
}

for (const chosen of browsers) {
  describe(`the run timeline in ${chosen.name}`, () => {
    let browser: Browser
    const first = chosen === browsers[0]
    // The docs show the first browser's; the others' go to .artifacts, prefixed by kind.
    const shoot = (page: Page, name: string) =>
      page.screenshot({
        path: first ? path.join(images, `${name}.png`) : path.join(artifacts, `${chosen.kind}-${name}.png`),
        fullPage: true
      })

    beforeAll(async () => {
      browser = await launch(chosen)
    }, 120_000)
    afterAll(async () => {
      await browser?.close()
    })

    it("lists the runs and filters them by actor", async () => {
      const page = await browser.newPage({ viewport: { width: 1200, height: 800 } })
      await page.goto(`${server.origin}/runs#token=${server.token}`)
      await page.locator("tr.run").first().waitFor()
      expect(await page.locator("tr.run").count()).toBe(runs.length)
      await shoot(page, "timeline-runs")
      await page.fill("#actor", "officer:ravi")
      await page.click("#apply")
      await page.waitForFunction(() =>
        [...(globalThis as any).document.querySelectorAll("tr.run td:nth-child(3)")].every((cell: any) =>
          cell.textContent === "officer:ravi"
        )
      )
      expect(await page.locator("tr.run").count()).toBe(runs.filter((run) => run.actor === "officer:ravi").length)
      await page.close()
    }, 60_000)

    it("two roles, one conversation: their candidate sets and why the score was left out for support", async () => {
      const page = await browser.newPage({ viewport: { width: 1200, height: 800 } })
      const support = runs.filter((run) => run.actor === "agent:alice" && run.tools.length === 0).at(-1)!
      await openRun(page, support.trace)
      const round = page.locator("section.round").first()
      expect(await round.locator(".offer .tool").allTextContents()).not.toContain("credit.score")
      const leftOut = round.locator("ul.left-out li", { hasText: "credit.score" })
      expect(await leftOut.textContent()).toMatch(/\[policy:role\] \S/)
      await shoot(page, "timeline-support")

      const officer = runs.find((run) => run.tools.includes("transfer.send"))!
      await openRun(page, officer.trace)
      expect(await page.locator("section.round").first().locator(".offer .tool").allTextContents()).toContain(
        "credit.score"
      )
      const approval = page.locator("li.decided", { hasText: "transfer.send" })
      expect(await approval.textContent()).toContain("(approved, by officer:ravi)")
      expect(await page.locator("li.delivered", { hasText: "transfer.send" }).count()).toBeGreaterThan(0)
      await shoot(page, "timeline-officer")

      const named = runs.find((run) => run.actor === "agent:alice" && run.refusals > 0)!
      await openRun(page, named.trace)
      const refusal = page.locator("li.refused", { hasText: "credit.score" }).first()
      await refusal.waitFor()
      expect(await refusal.textContent()).toContain("REFUSED credit.score")
      await shoot(page, "timeline-refusal")
      await page.close()
    }, 60_000)

    it("hostile tool names, reasons, deciders and payloads show as text and run nothing", async () => {
      const page = await browser.newPage({ viewport: { width: 1200, height: 800 } })
      await page.goto(`${server.origin}/runs#token=${server.token}`)
      await page.locator("tr.run").first().waitFor()
      await openRun(page, "hostile-run")
      expect(await page.locator("main").innerText()).toContain("<img src=x")
      expect(await page.locator("main img, main script").count()).toBe(0)
      expect(await page.evaluate(() => (globalThis as { __pwned?: string }).__pwned)).toBeUndefined()
      await shoot(page, "timeline-hostile")
      await page.close()
    }, 60_000)

    it("without the token the page says so and shows nothing", async () => {
      const page = await browser.newPage()
      await page.goto(`${server.origin}/runs`)
      await page.locator("p.empty", { hasText: "Not authorized" }).waitFor()
      expect(await page.locator("tr.run").count()).toBe(0)
      await page.close()
    }, 60_000)
  })
}
