// End to end in a real browser, driven by playwright-core: Debian's chromium
// where it is installed, and the Chromium that @sparticuz/chromium ships in its
// npm package (see chromium.ts, which picks them once per run).
// Screenshots go to .artifacts/ at the top of the repository.
import { Effect, Exit, Scope } from "effect"
import { mkdirSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { HumanConfirm, Invocation, Proposal } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import type * as Chromium from "./chromium.js"
import { launch } from "./launch.js"
import { makeDesk } from "../../core/test/supportDesk.js"
import { makeMailer } from "./proposalPage.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const artifacts = path.resolve(here, "../../../.artifacts")
// The screenshots docs/confirm.md shows, from the first browser: taken on
// every run, and written into docs/images with GRADED_SCREENSHOTS=docs (a
// test run leaves the checkout as it was; they go to .artifacts otherwise).
const images = process.env.GRADED_SCREENSHOTS === "docs"
  ? path.resolve(here, "../../../docs/images")
  : path.join(artifacts, "images")
mkdirSync(images, { recursive: true })
mkdirSync(artifacts, { recursive: true })

const browsers: ReadonlyArray<Chromium.Browser> = inject("browsers")

let browser: Browser
let scope: Scope.Closeable
let server: WebConfirm.Server
let ui: HumanConfirm.UI

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  const made = await Effect.runPromise(Scope.provide(WebConfirm.make({ singleUser: true }), scope))
  server = made.server
  ui = made.ui
}, 60_000)

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
})

// The first choice keeps the plain screenshot names; the others are prefixed by kind.
const shot = (chosen: Chromium.Browser) => chosen === browsers[0] ? "" : `${chosen.kind}-`

const send = (desk: ReturnType<typeof makeDesk>, text: string) =>
  Effect.runPromise(Effect.result(desk.SendReply.invoke({ text }).pipe(Effect.provide(HumanConfirm.layer(ui)))))

const open = async (): Promise<Page> => {
  const page = await browser.newPage()
  await page.goto(server.url)
  await page.fill("#by", "alice")
  await page.dispatchEvent("#by", "change")
  return page
}

const card = (page: Page, text: string) => page.locator("section.card", { hasText: text })

for (const chosen of browsers) {
  describe(`in ${chosen.name}`, () => {
    beforeAll(async () => {
      browser = await launch(chosen)
      // Text must render, not only lay out: with no usable font a line of text
      // has no width, and every screenshot is blank.
      const probe = await browser.newPage()
      await probe.setContent("<span id=probe style='font-size:40px'>graded</span>")
      const box = await probe.locator("#probe").boundingBox()
      expect(box?.width ?? 0).toBeGreaterThan(40)
      await probe.close()
    }, 120_000)

    afterAll(async () => {
      await browser?.close()
    })

    describe("the confirm page", () => {
      it("shows a pending send; an edit is approved and delivered once, with the edited payload", async () => {
        const desk = makeDesk()
        const result = send(desk, "Hello Mei, your invoice is fixd")
        const page = await open()
        const pending = card(page, "fixd")
        await pending.waitFor()
        expect(await pending.locator(".grade").textContent()).toBe("send")
        expect(await pending.locator("pre.payload").textContent()).toContain("\"to\": \"customer:42\"")
        await page.screenshot({ path: path.join(artifacts, `${shot(chosen)}confirm-pending.png`), fullPage: true })
        await pending.getByRole("button", { name: "Edit" }).click()
        await pending.locator("input[name=text]").fill("Hello Mei, your invoice is fixed")
        await pending.getByRole("button", { name: "Approve edited" }).click()
        await pending.page().locator("section.card.decided .status", { hasText: "Approved with an edit by alice." })
          .waitFor()
        await page.screenshot({ path: path.join(artifacts, `${shot(chosen)}confirm-edited.png`), fullPage: true })
        const outcome = await result
        expect(outcome._tag).toBe("Success")
        expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Hello Mei, your invoice is fixed" }])
        // A second click on the disabled card, or a second tab, sends nothing more.
        const again = await page.evaluate(async (token) => {
          const response = await fetch("/api/requests", { headers: { authorization: `Bearer ${token}` } })
          return ((await response.json()) as { requests: Array<unknown> }).requests.length
        }, server.token)
        expect(again).toBe(0)
        expect(desk.effects.delivered).toHaveLength(1)
        await page.close()
      }, 60_000)

      it("rejects with a reason, and the caller gets a structured denial", async () => {
        const desk = makeDesk()
        const result = send(desk, "Please pay twice")
        const page = await open()
        const pending = card(page, "Please pay twice")
        await pending.waitFor()
        await pending.getByRole("button", { name: "Reject" }).click()
        await pending.locator("input[name=reason]").fill("we never ask that")
        await pending.getByRole("button", { name: "Reject with this reason" }).click()
        await pending.page().locator("section.card.decided .status", {
          hasText: "Rejected by alice: we never ask that"
        }).waitFor()
        await page.screenshot({ path: path.join(artifacts, `${shot(chosen)}confirm-rejected.png`), fullPage: true })
        const outcome = await result
        expect(outcome._tag === "Failure" && outcome.failure).toMatchObject({
          _tag: "@graded/core/ToolError/Rejected",
          by: "alice",
          reason: "we never ask that"
        })
        expect(desk.effects.delivered).toEqual([])
        await page.close()
      }, 60_000)

      it("a payload carrying HTML and script shows as text and runs nothing", async () => {
        const desk = makeDesk()
        const attack = `<img src=x onerror="window.__pwned='img'"><script>window.__pwned='script'</script>`
        const result = send(desk, attack)
        const page = await open()
        const pending = card(page, "onerror")
        await pending.waitFor()
        expect(await pending.locator("pre.payload").textContent()).toContain(attack.replaceAll("\"", "\\\""))
        expect(await pending.locator("img").count()).toBe(0)
        expect(await pending.locator("script").count()).toBe(0)
        expect(await page.evaluate(() => (globalThis as { __pwned?: string }).__pwned)).toBeUndefined()
        await page.screenshot({ path: path.join(artifacts, `${shot(chosen)}confirm-xss-as-text.png`), fullPage: true })
        await pending.getByRole("button", { name: "Reject" }).click()
        await pending.getByRole("button", { name: "Reject with this reason" }).click()
        expect((await result)._tag).toBe("Failure")
        expect(await page.evaluate(() => (globalThis as { __pwned?: string }).__pwned)).toBeUndefined()
        await page.close()
      }, 60_000)

      it("an API call without the token is refused, and the page says so", async () => {
        const page = await browser.newPage()
        await page.goto(server.origin) // no #token
        await page.getByText("Not authorized").waitFor()
        const status = await page.evaluate(async () => (await fetch("/api/requests")).status)
        expect(status).toBe(401)
        await page.screenshot({ path: path.join(artifacts, `${shot(chosen)}confirm-no-token.png`), fullPage: true })
        await page.close()
      }, 60_000)
    })

    describe("each state, at a desktop and a phone width", () => {
      for (const [device, width] of [["desktop", 1280], ["phone", 390]] as const) {
        const picture = (page: Page, name: string) =>
          page.screenshot({
            path: chosen === browsers[0]
              ? path.join(images, `confirm-${device}-${name}.png`)
              : path.join(artifacts, `${shot(chosen)}confirm-${device}-${name}.png`),
            fullPage: true
          })

        it(`${device}: a name is required, Edit keeps lines, Cancel backs out, Reject and Approve decide`, async () => {
          const desk = makeDesk()
          const text = "Hello Mei,\n\nyour invoice is fixd."
          const result = send(desk, text)
          const page = await browser.newPage({ viewport: { width, height: 800 } })
          await page.goto(server.url)
          await page.evaluate(() => (globalThis as any).localStorage.clear())
          await page.reload()
          const pending = card(page, "invoice is fixd")
          await pending.waitFor()
          // The header fits the screen, and holds no stray label.
          expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth))
            .toBeLessThanOrEqual(
              width
            )
          expect(await page.locator("header").textContent()).not.toContain("Deciding as")
          await picture(page, "pending")
          // No name, no decision: nobody is recorded as a placeholder.
          expect(await page.locator("#by").inputValue()).toBe("")
          await pending.getByRole("button", { name: "Approve" }).click()
          await pending.locator(".status.error", { hasText: "Type your name" }).waitFor()
          await page.fill("#by", "alice")
          await page.dispatchEvent("#by", "change")
          // Edit: a text with line breaks is a textarea, and keeps them; Cancel gives the card back.
          await pending.getByRole("button", { name: "Edit" }).click()
          const area = pending.locator("textarea[name=text]")
          expect(await area.inputValue()).toBe(text)
          await picture(page, "edit")
          await pending.getByRole("button", { name: "Cancel" }).click()
          expect(await pending.locator("form").count()).toBe(0)
          await pending.getByRole("button", { name: "Reject" }).click()
          await pending.locator("input[name=reason]").fill("not yet")
          await picture(page, "reject")
          await pending.getByRole("button", { name: "Cancel" }).click()
          expect(await pending.locator("form").count()).toBe(0)
          await pending.getByRole("button", { name: "Edit" }).click()
          await area.fill("Hello Mei,\n\nyour invoice is fixed.")
          await pending.getByRole("button", { name: "Approve edited" }).click()
          const decided = page.locator("section.card.decided", { hasText: "Approved with an edit by alice." })
          await decided.waitFor()
          await picture(page, "approved")
          expect((await result)._tag).toBe("Success")
          expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Hello Mei,\n\nyour invoice is fixed." }])
          // A decided card keeps its record only: no payload, no form, no buttons.
          expect(await decided.locator("pre, form, button, textarea, input").count()).toBe(0)
          const rejected = send(desk, "Please pay twice")
          const second = card(page, "Please pay twice")
          await second.waitFor()
          await second.getByRole("button", { name: "Reject" }).click()
          await second.locator("input[name=reason]").fill("we never ask that")
          await second.getByRole("button", { name: "Reject with this reason" }).click()
          await page.locator("section.card.decided", { hasText: "Rejected by alice: we never ask that" }).waitFor()
          await picture(page, "rejected")
          expect((await rejected)._tag).toBe("Failure")
          await page.close()
        }, 60_000)
      }
    })

    describe("what the person sees is what runs", () => {
      it(
        "characters that hide or reorder text show as badges where they stand, flag the card, and show in an edit's preview",
        async () => {
          const desk = makeDesk()
          const result = Effect.runPromise(Effect.result(
            desk.SendReply.invoke({ text: "Your file: invoice\u202Efdp.exe\u200B is attached" }).pipe(
              Invocation.within({ actor: "agent\u2066:alice" }),
              Effect.provide(HumanConfirm.layer(ui))
            )
          ))
          const page = await open()
          const pending = card(page, "is attached")
          await pending.waitFor()
          const payload = await pending.locator("pre.payload").textContent() ?? ""
          // No character that reorders or hides text reaches the screen: each is a visible badge.
          expect(payload).toContain("invoice\\u202Efdp.exe\\u200B is attached")
          expect(payload).not.toMatch(/[\u202E\u200B]/)
          expect(await pending.locator("pre.payload .hidden-char").allTextContents()).toEqual(["\\u202E", "\\u200B"])
          expect(await pending.locator(".meta .hidden-char").allTextContents()).toEqual(["\\u2066"])
          const flag = pending.locator(".flag")
          expect(await flag.textContent()).toContain("This card contains characters that hide or reorder text")
          expect(await flag.textContent()).toContain("\\u202E")
          expect(await flag.isVisible()).toBe(true)
          // A badge looks unlike the text around it.
          const [badge, text] = await pending.locator("pre.payload .hidden-char").first().evaluate((node) => {
            // In the browser; this file's types have no DOM.
            const { getComputedStyle } = globalThis as unknown as {
              getComputedStyle: (element: unknown) => { backgroundColor: string }
            }
            return [getComputedStyle(node).backgroundColor, getComputedStyle(node.parentElement).backgroundColor]
          })
          expect(badge).not.toBe(text)
          await page.screenshot({
            path: path.join(artifacts, `${shot(chosen)}confirm-hidden-characters.png`),
            fullPage: true
          })
          // An edit shows what it would send the same way, as the person types.
          await pending.getByRole("button", { name: "Edit" }).click()
          const preview = pending.locator("pre.preview")
          expect(await preview.locator(".hidden-char").allTextContents()).toEqual(["\\u202E", "\\u200B"])
          expect(await pending.locator("form .flag").isVisible()).toBe(true)
          await page.screenshot({
            path: path.join(artifacts, `${shot(chosen)}confirm-hidden-characters-edit.png`),
            fullPage: true
          })
          await pending.locator("input[name=text]").fill("Your file: invoice.pdf is attached")
          expect(await preview.locator(".hidden-char").count()).toBe(0)
          expect(await pending.locator("form .flag").isVisible()).toBe(false)
          expect(await preview.textContent()).toContain("\"text\": \"Your file: invoice.pdf is attached\"")
          await pending.getByRole("button", { name: "Approve edited" }).click()
          await pending.page().locator("section.card.decided .status", { hasText: "Approved with an edit by alice." })
            .waitFor()
          expect((await result)._tag).toBe("Success")
          expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Your file: invoice.pdf is attached" }])
          await page.close()
        },
        60_000
      )

      it("a payload over the cap shows its first 20,000 characters, says so, and can only be rejected", async () => {
        const desk = makeDesk()
        const text = `${"long ".repeat(5000)}end`
        const result = send(desk, text)
        const page = await open()
        const pending = card(page, "long long")
        await pending.waitFor()
        const total = JSON.stringify({ to: "customer:42", text }, null, 2).length
        expect(await pending.locator("pre.payload").textContent()).toHaveLength(20_000)
        expect(await pending.locator(".cut").textContent()).toBe(
          `The payload is cut: showing 20,000 of ${total.toLocaleString("en-US")} characters.`
        )
        expect(await pending.getByRole("button", { name: "Approve" }).isDisabled()).toBe(true)
        expect(await pending.getByRole("button", { name: "Edit" }).isDisabled()).toBe(true)
        expect(await pending.locator(".why").textContent()).toContain("Approve and Edit are off")
        await page.screenshot({ path: path.join(artifacts, `${shot(chosen)}confirm-cut.png`), fullPage: true })
        await pending.getByRole("button", { name: "Reject" }).click()
        await pending.locator("input[name=reason]").fill("too long to read")
        await pending.getByRole("button", { name: "Reject with this reason" }).click()
        await pending.page().locator("section.card.decided .status", { hasText: "Rejected by alice: too long to read" })
          .waitFor()
        expect(await result).toMatchObject({ _tag: "Failure", failure: { reason: "too long to read" } })
        expect(desk.effects.delivered).toEqual([])
        await page.close()
      }, 60_000)

      it("signed in by a token of their own, the page says who decides and the decision is theirs", async () => {
        const token = "a-token-of-alices-own-0123456789"
        const own = Effect.runSync(Scope.make())
        const made = await Effect.runPromise(Scope.provide(WebConfirm.make({ users: { [token]: "alice" } }), own))
        const desk = makeDesk()
        const result = Effect.runPromise(Effect.result(
          desk.SendReply.invoke({ text: "Signed in" }).pipe(Effect.provide(HumanConfirm.layer(made.ui)))
        ))
        const page = await browser.newPage()
        await page.goto(made.server.link(token))
        const pending = card(page, "Signed in")
        await pending.waitFor()
        await page.locator("#who", { hasText: "Deciding as alice (signed in)" }).waitFor()
        expect(await page.locator("#by").isVisible()).toBe(false)
        await pending.getByRole("button", { name: "Approve" }).click()
        await pending.page().locator("section.card.decided .status", { hasText: "Approved by alice." }).waitFor()
        expect((await result)._tag).toBe("Success")
        expect(made.server.decided()).toMatchObject([{ by: "alice", decision: "approved" }])
        await page.close()
        await Effect.runPromise(Scope.close(own, Exit.void))
      }, 60_000)
    })

    describe("proposals on the confirm page", () => {
      it("a model's pending proposal shows as a card; approving it delivers once", async () => {
        const { Agent, ProposalStore, ScriptedModel, Tool, Toolkit } = await import("@graded/core")
        const { Layer } = await import("effect")
        const desk = makeDesk()
        const toolkit = Toolkit.make(desk.SendReply)
        const proposalScope = Effect.runSync(Scope.make())
        const store = await Effect.runPromise(Scope.provide(Layer.build(ProposalStore.memory), proposalScope))
        const run = <A, E>(effect: Effect.Effect<A, E, any>) =>
          Effect.runPromise(Effect.provide(effect, store) as Effect.Effect<A, E>)
        const { server: page } = await run(
          Scope.provide(WebConfirm.make({ singleUser: true, proposals: { toolkit } }), proposalScope)
        )
        await run(
          Agent.run({ toolkit: Toolkit.make(Tool.proposal(desk.SendReply)), prompt: "Tell the customer" }).pipe(
            Effect.provide(ScriptedModel.layer([
              ScriptedModel.calls(ScriptedModel.call("chat.sendMessage.propose", { text: "Proposed by a model" })),
              ScriptedModel.text("Proposed.")
            ]))
          )
        )
        const tab = await browser.newPage()
        await tab.goto(page.url)
        await tab.fill("#by", "alice")
        await tab.dispatchEvent("#by", "change")
        const proposal = tab.locator("section.card.proposal", { hasText: "Proposed by a model" })
        await proposal.waitFor()
        expect(await proposal.locator("h2").textContent()).toContain("Proposed: Send a chat message")
        // Drawn like a live card: the tool's description, and its edit form one field per property.
        expect(await proposal.textContent()).toContain(desk.SendReply.description)
        await proposal.getByRole("button", { name: "Edit" }).click()
        expect(
          await proposal.locator("form input, form textarea").evaluateAll((fields) =>
            fields.map((field) => (field as any).name)
          )
        ).toEqual(["to", "text"])
        for (const [device, width] of [["desktop", 1280], ["phone", 390]] as const) {
          await tab.setViewportSize({ width, height: 800 })
          if (chosen === browsers[0]) {
            await tab.screenshot({ path: path.join(images, `confirm-${device}-proposal.png`), fullPage: true })
          }
        }
        await proposal.getByRole("button", { name: "Cancel" }).click()
        await tab.screenshot({ path: path.join(artifacts, `${shot(chosen)}confirm-proposal.png`), fullPage: true })
        await proposal.getByRole("button", { name: "Approve" }).click()
        await proposal.page().locator("section.card.decided .status", { hasText: "Approved by alice." }).waitFor()
        expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Proposed by a model" }])
        const again = await tab.evaluate(async ({ token }) => {
          const listed = await (await fetch("/api/requests", { headers: { authorization: `Bearer ${token}` } }))
            .json() as { requests: Array<unknown> }
          return listed.requests.length
        }, { token: page.token })
        expect(again).toBe(0)
        await tab.close()
        await Effect.runPromise(Scope.close(proposalScope, Exit.void))
      }, 60_000)

      it(
        "an in-doubt delivery is its own card with its delivery key; a long one offers Mark done only, a short one is retried once",
        async () => {
          const { ProposalStore } = await import("@graded/core")
          const { Layer } = await import("effect")
          const mailer = makeMailer()
          const proposalScope = Effect.runSync(Scope.make())
          const store = await Effect.runPromise(Scope.provide(Layer.build(ProposalStore.memory), proposalScope))
          const run = <A, E>(effect: Effect.Effect<A, E, any>) =>
            Effect.runPromise(Effect.provide(effect, store) as Effect.Effect<A, E>)
          const { server: page } = await run(
            Scope.provide(
              WebConfirm.make({ singleUser: true, maxChars: 300, proposals: { toolkit: mailer.toolkit } }),
              proposalScope
            )
          )
          const long = await run(mailer.propose(`Long: ${"x".repeat(400)}`))
          const short = await run(mailer.propose("Your refund is on its way."))
          const stoppedLong = await run(mailer.stopMidDelivery(long))
          const stoppedShort = await run(mailer.stopMidDelivery(short))
          const tab = await browser.newPage()
          await tab.goto(page.url)
          await tab.fill("#by", "alice")
          await tab.dispatchEvent("#by", "change")
          const longCard = tab.locator("section.card.in-doubt", { hasText: "Long: " })
          const shortCard = tab.locator("section.card.in-doubt", { hasText: "Your refund is on its way." })
          await shortCard.waitFor()
          await longCard.waitFor()
          expect(await shortCard.locator(".doubt").textContent()).toContain(
            "This delivery stopped and may have gone out"
          )
          expect(await shortCard.locator(".key").textContent()).toBe(`delivery key: ${stoppedShort.deliveryKey}`)
          expect(await longCard.locator(".key").textContent()).toBe(`delivery key: ${stoppedLong.deliveryKey}`)
          await tab.screenshot({ path: path.join(artifacts, `${shot(chosen)}confirm-in-doubt.png`), fullPage: true })
          // Cut short: Retry is off, and says why; Mark done takes a note.
          expect(await longCard.getByRole("button", { name: "Retry" }).isDisabled()).toBe(true)
          await longCard.getByRole("button", { name: "Mark done" }).click()
          await longCard.locator("input[name=note]").fill("seen in the outbox")
          await longCard.getByRole("button", { name: "Mark done with this note" }).click()
          await longCard.page().locator("section.card.decided .status", { hasText: "Marked done by alice." }).waitFor()
          await shortCard.getByRole("button", { name: "Retry" }).click()
          await shortCard.page().locator("section.card.decided .status", { hasText: "Retried by alice" }).waitFor()
          expect(mailer.state.sent).toEqual([{
            payload: { to: "customer:42", text: "Your refund is on its way." },
            key: stoppedShort.deliveryKey
          }])
          expect(await run(Effect.map(Proposal.get(long), (p) => [p.status, p.decision?.reason]))).toEqual([
            "delivered",
            "seen in the outbox"
          ])
          await tab.close()
          await Effect.runPromise(Scope.close(proposalScope, Exit.void))
        },
        60_000
      )
    })
  })
}
