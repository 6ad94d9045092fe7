// The chat page end to end in a real browser (playwright-core, the browsers
// chromium.ts picks): a model whose stream is slowed as a provider's is, so
// the answer is seen growing before it ends; a send proposed mid-answer is
// the confirm page's card, drawn in the conversation; Approve and Edit there
// continue the same answer; what the model says and the tools it names stay
// text; closing the page takes the card away. The screenshots docs/confirm.md
// shows are taken here, from the first browser (GRADED_SCREENSHOTS=docs writes
// them to docs/images; otherwise they go to .artifacts/images).
import { Effect, Exit, Scope, Stream } from "effect"
import { mkdirSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { Browser, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest"
import { Agent, type LanguageModel, ScriptedModel, Toolkit } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { makeDesk } from "../../core/test/supportDesk.js"
import { durableChatting, paced } from "./chatClient.js"
import type * as Chromium from "./chromium.js"
import { launch } from "./launch.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const artifacts = path.resolve(here, "../../../.artifacts")
const images = process.env.GRADED_SCREENSHOTS === "docs"
  ? path.resolve(here, "../../../docs/images")
  : path.join(artifacts, "images")
mkdirSync(images, { recursive: true })

const browsers: ReadonlyArray<Chromium.Browser> = inject("browsers")

const { call, calls, text } = ScriptedModel

const question = "Mei Lin says her latest invoice shows the old VAT number again. Can you help her?"

// The desk's story, told slowly enough to watch: the agent looks it up,
// drafts a reply to Mei mid-answer, and answers once the draft is decided.
const story = (reply: string): ReadonlyArray<ScriptedModel.Turn> => [
  {
    ...calls(call("kb.search", { query: "VAT number invoice" })),
    text: "Let me look that up. An invoice with an old VAT number usually means the billing settings still " +
      "hold the old one, so that is where I will start."
  },
  {
    ...calls(call("chat.sendMessage", { text: reply })),
    text: "Found it: kb-1 explains how to change the VAT number. I have drafted a reply to Mei:"
  },
  (request: LanguageModel.Request) => {
    const last = request.messages.at(-1)
    return text(
      last?.role === "tool" && last.content.includes("\"delivered\":true")
        ? "Sent. Mei has the steps; her next invoice will carry the new number."
        : "Not sent: nothing went to Mei."
    )
  }
]

const alice = "a-token-of-alices-own-0123456789"

/** A chat server whose agent is the shared desk on `turns`, paced `millis` a part. */
const serve = async (turns: ReadonlyArray<ScriptedModel.Turn>, millis = 40) => {
  const desk = makeDesk()
  const requests: Array<WebConfirm.ChatRequest> = []
  const toolkit = Toolkit.make(desk.KbSearch, desk.SubmitTicket, desk.SendReply)
  const chat: WebConfirm.Chat = {
    reply: (request) => {
      requests.push(request)
      return Agent.supervisedStream({ toolkit, messages: WebConfirm.toMessages(request.messages) }).pipe(
        Stream.provide(paced(turns, millis))
      )
    }
  }
  const scope = Effect.runSync(Scope.make())
  const { server } = await Effect.runPromise(
    Scope.provide(WebConfirm.make({ users: { [alice]: "alice" }, chat }), scope)
  )
  return { desk, requests, server, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** A durable chat server for alice, its model paced `millis` a part. */
const serveDurable = async (millis: number) => {
  const scope = Effect.runSync(Scope.make())
  const chat = await Effect.runPromise(
    Scope.provide(durableChatting({ who: { users: { [alice]: "alice" } }, paceMillis: millis }), scope)
  )
  return { ...chat, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** Decides the one open card as the confirm page does, over its API (as alice). */
const decideOnConfirmPage = async (origin: string, body: unknown) => {
  const headers = { authorization: `Bearer ${alice}`, "content-type": "application/json" }
  const { requests } = await (await fetch(`${origin}/api/requests`, { headers })).json() as {
    requests: Array<{ id: string; csrf: string; kind?: string }>
  }
  const [card] = requests
  const route = card!.kind === "proposal" ? "proposals" : "requests"
  const answer = await fetch(`${origin}/api/${route}/${card!.id}/decision`, {
    method: "POST",
    headers: { ...headers, "x-graded-csrf": card!.csrf },
    body: JSON.stringify(body)
  })
  expect(answer.status).toBe(200)
}

const ask = async (page: Page, message: string) => {
  await page.locator("#message").fill(message)
  await page.getByRole("button", { name: "Send" }).click()
}

// The DOM as the page sees it; this file's types have no DOM.
const pwned = (page: Page) => page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)

for (const chosen of browsers) {
  describe(`the chat page, in ${chosen.name}`, () => {
    let browser: Browser
    const first = chosen === browsers[0]
    const picture = (page: Page, name: string) =>
      page.screenshot({
        path: first ? path.join(images, `chat-${name}.png`) : path.join(artifacts, `${chosen.kind}-chat-${name}.png`),
        fullPage: true
      })

    beforeAll(async () => {
      browser = await launch(chosen)
    }, 120_000)

    afterAll(async () => {
      await browser?.close()
    })

    it(
      "the answer grows as it streams; the send is a card in the conversation; Approve sends it and the answer goes on",
      async () => {
        const reply =
          "Hi Mei, the VAT number comes from Billing > Settings > Tax ID; change it there and reissue the invoice."
        const chat = await serve(story(reply))
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
        try {
          await page.goto(chat.server.chatLink!(alice))
          await page.locator("#who", { hasText: "Deciding as alice (signed in)" }).waitFor()
          await ask(page, question)
          const turn = page.locator(".turn.assistant").last()
          const bubble = turn.locator(".bubble.assistant").first()
          await bubble.waitFor()
          // Seen growing, piece by piece, while the run still streams and before any call.
          const lengths: Array<number> = []
          for (let i = 0; i < 200 && lengths.length < 4; i++) {
            const length = (await bubble.textContent() ?? "").length
            if (length > (lengths.at(-1) ?? 0)) lengths.push(length)
            await page.waitForTimeout(20)
          }
          expect(lengths.length).toBe(4)
          expect(await turn.getAttribute("data-state")).toBe("streaming")
          expect(await turn.locator(".event.call").count()).toBe(0)
          await picture(page, "desktop-streaming")
          // The search, then the draft as the confirm page's card, in the conversation where it was proposed.
          await turn.locator(".event.call", { hasText: "used kb.search" }).waitFor()
          const card = turn.locator(".inline-card section.card")
          await card.waitFor()
          expect(await card.locator(".grade").textContent()).toBe("send")
          expect(await card.locator("pre.payload").textContent()).toContain(reply)
          const order = await turn.evaluate((node) =>
            Array.from(
              (node as unknown as { children: ArrayLike<{ className: string }> }).children,
              (child) => child.className
            )
          )
          expect(order.indexOf("inline-card")).toBeGreaterThan(order.lastIndexOf("bubble assistant"))
          expect(await turn.locator(".bubble.assistant").nth(1).textContent()).toBe(
            "Found it: kb-1 explains how to change the VAT number. I have drafted a reply to Mei:"
          )
          // The same card on the confirm page's API; nothing sent while it waits.
          expect(chat.server.pending()).toBe(1)
          await page.waitForTimeout(300)
          expect(chat.desk.effects.delivered).toEqual([])
          await picture(page, "desktop-card")
          await card.getByRole("button", { name: "Approve" }).click()
          await turn.locator("section.card.decided .status", { hasText: "Approved by alice." }).waitFor()
          await page.locator(".turn.assistant[data-state=done]").waitFor()
          expect(await turn.locator(".bubble.assistant").last().textContent()).toBe(
            "Sent. Mei has the steps; her next invoice will carry the new number."
          )
          expect(await turn.locator(".event.decided").textContent()).toBe(
            "chat.sendMessage: delivered (decided by alice)"
          )
          expect(chat.desk.effects.delivered).toEqual([{ to: "customer:42", text: reply }])
          await picture(page, "desktop-answered")
          // The answer goes with the next message; the story starts again (a new run of the script).
          await ask(page, "Thanks!")
          await page.locator(".turn.assistant").nth(1).locator(".inline-card section.card").waitFor()
          expect(chat.requests[1]?.messages).toEqual([
            { role: "user", content: question },
            { role: "assistant", content: "Sent. Mei has the steps; her next invoice will carry the new number." },
            { role: "user", content: "Thanks!" }
          ])
          // The page closed mid-run: the run stops, its card goes, nothing more is sent.
          await page.close()
          for (let i = 0; i < 200 && chat.server.pending() > 0; i++) await new Promise((r) => setTimeout(r, 10))
          expect(chat.server.pending()).toBe(0)
          expect(chat.desk.effects.delivered).toHaveLength(1)
        } finally {
          if (!page.isClosed()) await page.close()
          await chat.close()
        }
      },
      60_000
    )

    it("Edit: the edited message is the one delivered, and the answer goes on", async () => {
      const chat = await serve(story("Hello Mei, your invoice is fixd"), 5)
      const page = await browser.newPage({ viewport: { width: 390, height: 800 } })
      try {
        await page.goto(chat.server.chatLink!(alice))
        await ask(page, question)
        const card = page.locator(".inline-card section.card")
        await card.waitFor()
        // A phone: the conversation fits the screen.
        expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(
          390
        )
        await card.getByRole("button", { name: "Edit" }).click()
        await card.locator("input[name=text]").fill("Hello Mei, your invoice is fixed")
        await card.getByRole("button", { name: "Approve edited" }).click()
        await page.locator("section.card.decided .status", { hasText: "Approved with an edit by alice." }).waitFor()
        await page.locator(".turn.assistant[data-state=done]").waitFor()
        await page.screenshot({ path: path.join(artifacts, `${chosen.kind}-chat-phone-edited.png`), fullPage: true })
        expect(await page.locator(".turn.assistant .bubble.assistant").last().textContent()).toMatch(/^Sent\./)
        expect(chat.desk.effects.delivered).toEqual([{ to: "customer:42", text: "Hello Mei, your invoice is fixed" }])
      } finally {
        await page.close()
        await chat.close()
      }
    }, 60_000)

    it(
      "a model's text and a tool name carrying HTML and hidden characters stay text, the hidden ones as badges",
      async () => {
        const attack =
          "<img src=x onerror=\"window.__pwned='img'\"><script>window.__pwned='script'</script>\u202Etxt.exe"
        const chat = await serve([
          { ...calls(call(`kb.search${attack}`, { query: "x" })), text: `Looking ${attack}` },
          text(`Done ${attack}\u200B`)
        ], 2)
        const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
        try {
          await page.goto(chat.server.chatLink!(alice))
          await ask(page, `Me too ${attack}`)
          await page.locator(".turn.assistant[data-state=done]").waitFor()
          const bubbles = page.locator(".bubble")
          const texts = await bubbles.allTextContents()
          const shown = attack.replace("\u202E", "\\u202E")
          expect(texts).toEqual([`Me too ${shown}`, `Looking ${shown}`, `Done ${shown}\\u200B`])
          expect(texts.join("")).not.toMatch(/[\u202E\u200B]/)
          expect(await page.locator(".bubble .hidden-char").allTextContents()).toEqual([
            "\\u202E",
            "\\u202E",
            "\\u202E",
            "\\u200B"
          ])
          const refused = page.locator(".event.refused").first()
          expect(await refused.textContent()).toContain("<img src=x onerror=")
          expect(await page.locator("main img, main script").count()).toBe(0)
          expect(await pwned(page)).toBeUndefined()
          expect(chat.desk.effects.searches).toEqual([])
          await page.screenshot({ path: path.join(artifacts, `${chosen.kind}-chat-xss-as-text.png`), fullPage: true })
        } finally {
          await page.close()
          await chat.close()
        }
      },
      60_000
    )

    it("a card decided on the confirm page shows decided in the chat, with who decided, without a click", async () => {
      const chat = await serve(story("Hello Mei, your invoice is fixed."), 2)
      const page = await browser.newPage()
      try {
        await page.goto(chat.server.chatLink!(alice))
        await ask(page, question)
        const card = page.locator(".inline-card section.card")
        await card.waitFor()
        await decideOnConfirmPage(chat.server.origin, { action: "reject", reason: "not yet" })
        await page.locator("section.card.decided .status", { hasText: "Rejected by alice." }).waitFor()
        expect(await page.locator(".inline-card button").count()).toBe(0)
        await page.locator(".turn.assistant[data-state=done]").waitFor()
        expect(chat.desk.effects.delivered).toEqual([])
      } finally {
        await page.close()
        await chat.close()
      }
    }, 60_000)

    it(
      "a durable chat: the page closed mid-answer, reopened, shows the conversation so far and goes on with it",
      async () => {
        const chat = await serveDurable(30)
        const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
        try {
          const before = await context.newPage()
          await before.goto(chat.server.chatLink!(alice))
          await before.locator("#who", { hasText: "Deciding as alice (signed in)" }).waitFor()
          await ask(before, question)
          // Mid-answer: the first words are on the page, the run still streams.
          await before.locator(".turn.assistant .bubble.assistant").first().waitFor()
          expect(await before.locator(".turn.assistant").getAttribute("data-state")).toBe("streaming")
          await before.close()
          const runId = chat.requests[0]!.runId
          expect((await Effect.runPromise(chat.settled(runId, "waiting"))).state.ended).toBeUndefined()
          expect(chat.desk.effects.delivered).toEqual([])

          // Reopened: the question again, then the answer goes on to the card.
          const after = await context.newPage()
          await after.goto(chat.server.chatLink!(alice))
          const card = after.locator(".inline-card section.card")
          await card.waitFor()
          expect(await after.locator(".bubble.user").allTextContents()).toEqual([question])
          expect(chat.requests.map((request) => request._tag)).toEqual(["Start", "Resume"])
          expect(await card.locator(".meta.run").textContent()).toContain(runId)
          await card.getByRole("button", { name: "Approve" }).click()
          await after.locator("section.card.decided .status", { hasText: "Approved by alice." }).waitFor()
          await after.locator(".turn.assistant[data-state=done]").waitFor()
          expect(await after.locator(".bubble.assistant").last().textContent()).toBe("Sent: Mei has the fix.")
          expect(chat.desk.effects.delivered).toEqual([{
            to: "customer:42",
            text: "Hello Mei, your invoice is fixed."
          }])
          expect(chat.desk.effects.searches).toEqual(["invoice"])
          await after.screenshot({
            path: path.join(artifacts, `${chosen.kind}-chat-durable-resumed.png`),
            fullPage: true
          })

          // The conversation goes on: the next message is a new run, with what was said so far.
          await ask(after, "Thanks!")
          for (let i = 0; i < 500 && chat.requests.length < 4; i++) await new Promise((r) => setTimeout(r, 10))
          expect(chat.requests[3]).toMatchObject({
            _tag: "Start",
            messages: [
              { role: "user", content: question },
              { role: "assistant", content: "Sent: Mei has the fix." },
              { role: "user", content: "Thanks!" }
            ]
          })
          expect(chat.requests[3]!.runId).not.toBe(runId)
        } finally {
          await context.close()
          await chat.close()
        }
      },
      60_000
    )

    it("without the token the page says so, and nothing can be sent", async () => {
      const chat = await serve([text("never")])
      const page = await browser.newPage()
      try {
        await page.goto(`${chat.server.origin}/chat`)
        await page.getByText("Not authorized").waitFor()
        expect(await page.getByRole("button", { name: "Send" }).isDisabled()).toBe(true)
        expect(chat.requests).toEqual([])
      } finally {
        await page.close()
        await chat.close()
      }
    }, 60_000)
  })
}
