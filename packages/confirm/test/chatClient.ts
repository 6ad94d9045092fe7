// The chat's test harness: a WebConfirm server with a chat whose agent is
// the shared support desk on a scripted model, and a client for its API that
// reads the answer's Server-Sent Events as they arrive. Used by
// WebConfirm.chat.test.ts, RedTeam.web.test.ts, browser.chat.test.ts and the
// demo's test (examples/support-desk/test/chat.test.ts, which reads with `read`).
import { Context, Effect, type Exit, Layer, Stream } from "effect"
import { Agent, LanguageModel, ProposalStore, RunStore, Runs, ScriptedModel, type Tool, Toolkit } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { makeDesk } from "../../core/test/supportDesk.js"

const { call, calls, text } = ScriptedModel

/**
 * The desk's story, as a model would stream it: it searches the knowledge
 * base, proposes a reply to the customer mid-answer, and answers once the
 * reply is decided, saying whether it went out.
 */
export const story = (reply = "Hello Mei, your invoice is fixed."): ReadonlyArray<ScriptedModel.Turn> => [
  { ...calls(call("kb.search", { query: "invoice" })), text: "Let me look that up." },
  { ...calls(call("chat.sendMessage", { text: reply })), text: "Found it. I will send Mei this:" },
  (request: LanguageModel.Request) => {
    const last = request.messages.at(-1)
    const sent = last?.role === "tool" && last.content.includes("\"delivered\":true")
    return text(sent ? "Sent: Mei has the fix." : "Not sent: nothing went to Mei.")
  }
]

/** One SSE event as the page gets it. */
export type Told = { readonly type: string } & Record<string, any>

/** An answer being read: the events so far, and ways to wait for more. */
export interface Reading {
  readonly status: number
  readonly headers: Headers
  readonly events: Array<Told>
  /** The raw text so far. */
  readonly raw: () => string
  /** Waits for the first event that matches (fails after `ms`). */
  readonly until: (match: (event: Told) => boolean, ms?: number) => Promise<Told>
  /** Resolves once the body ended (or the read was aborted). */
  readonly ended: Promise<void>
  /** Closes the connection, as a page closing does. */
  readonly close: () => void
}

/** Reads an answer's events as they arrive (`controller` aborts its fetch). */
export const read = (response: Response, controller: AbortController): Reading => {
  const events: Array<Told> = []
  let raw = ""
  const ended = (async () => {
    if (response.body === null) return
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    let buffer = ""
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        raw += value
        buffer += value
        let at
        while ((at = buffer.indexOf("\n\n")) !== -1) {
          const block = buffer.slice(0, at)
          buffer = buffer.slice(at + 2)
          const data = block.split("\n").filter((line) => line.startsWith("data: ")).map((line) => line.slice(6))
          if (data.length > 0) events.push(JSON.parse(data.join("\n")))
        }
      }
    } catch {
      // Aborted.
    }
  })()
  const until = async (match: (event: Told) => boolean, ms = 5000) => {
    const start = Date.now()
    for (;;) {
      const found = events.find(match)
      if (found !== undefined) return found
      if (Date.now() - start > ms) {
        throw new Error(`no such event in ${ms} ms; got ${JSON.stringify(events.map((event) => event.type))}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }
  return {
    status: response.status,
    headers: response.headers,
    events,
    raw: () => raw,
    until,
    ended,
    close: () => controller.abort()
  }
}

export interface Options {
  /** Who decides; single-user by default. */
  readonly who?: Partial<WebConfirm.Options>
  /** The model's turns; the story by default. */
  readonly turns?: ReadonlyArray<ScriptedModel.Turn>
  /** The model itself, in place of the scripted one. */
  readonly model?: Layer.Layer<LanguageModel.LanguageModel>
  /** More tools beside the desk's. */
  readonly tools?: ReadonlyArray<Tool.Any>
  /** A reply of the test's own, in place of the desk's run. */
  readonly reply?: WebConfirm.Chat["reply"]
  /** Without a chat at all. */
  readonly noChat?: boolean
  readonly maxBodyBytes?: number
}

/** A server with a chat, and a client for it. */
export const chatting = (options: Options = {}) =>
  Effect.gen(function*() {
    const desk = makeDesk()
    const requests: Array<WebConfirm.ChatRequest> = []
    const exits: Array<Exit.Exit<unknown, unknown>> = []
    const toolkit = Toolkit.make(desk.KbSearch, desk.SubmitTicket, desk.SendReply, ...(options.tools ?? []))
    const chat: WebConfirm.Chat = {
      reply: options.reply ?? ((request) => {
        requests.push(request)
        return Agent.supervisedStream({
          toolkit,
          messages: WebConfirm.toMessages(request.messages),
          context: request.by === undefined ? {} : { actor: request.by }
        }).pipe(
          Stream.provide(options.model ?? ScriptedModel.layer(options.turns ?? story(), { chunk: 4 })),
          Stream.onExit((exit) => Effect.sync(() => exits.push(exit)))
        )
      })
    }
    const who = options.who ?? { singleUser: true }
    const { server } = yield* WebConfirm.make({
      ...who,
      ...(options.maxBodyBytes === undefined ? {} : { maxBodyBytes: options.maxBodyBytes }),
      ...(options.noChat === true ? {} : { chat })
    } as WebConfirm.Options)
    const token = "users" in who && who.users !== undefined ? Object.keys(who.users)[0]! : server.token ?? ""
    const auth = { authorization: `Bearer ${token}` }
    const api = (path: string, init: RequestInit = {}) =>
      Effect.promise(async () => {
        const response = await fetch(`${server.origin}${path}`, {
          ...init,
          headers: { ...auth, "content-type": "application/json", ...init.headers }
        })
        return {
          status: response.status,
          headers: response.headers,
          body: await response.json().catch(() => undefined) as any
        }
      })
    const me = yield* api("/api/me")
    const csrf: string = me.body?.chatCsrf ?? ""
    /** Posts a chat body, with the page's headers unless `headers` replaces them; reads the answer as events. */
    const post = (body: unknown, headers: Record<string, string> = {}) =>
      Effect.promise(async () => {
        const controller = new AbortController()
        const response = await fetch(`${server.origin}/api/chat`, {
          method: "POST",
          signal: controller.signal,
          headers: { ...auth, "content-type": "application/json", "x-graded-csrf": csrf, ...headers },
          body: typeof body === "string" ? body : JSON.stringify(body)
        })
        return read(response, controller)
      })
    /** The person says `text` (after the conversation so far). */
    const say = (content: string, before: ReadonlyArray<WebConfirm.ChatMessage> = []) =>
      post({ messages: [...before, { role: "user", content }] })
    /** A refused post: its status and `{ error }`. */
    const refused = (body: unknown, headers: Record<string, string> = {}) =>
      Effect.flatMap(post(body, headers), (reading) =>
        Effect.promise(async () => {
          await reading.ended
          return { status: reading.status, body: JSON.parse(reading.raw() || "null") }
        }))
    const cards = api("/api/requests").pipe(Effect.map((answer) => answer.body.requests as Array<any>))
    const decide = (card: { readonly id: string; readonly csrf: string }, body: unknown) =>
      api(`/api/requests/${card.id}/decision`, {
        method: "POST",
        body: JSON.stringify(body),
        headers: { "x-graded-csrf": card.csrf }
      })
    return { server, desk, requests, exits, token, csrf, me, api, post, say, refused, cards, decide }
  })

/** A scripted model whose stream waits `millis` before each part: tokens arrive as a provider's do. */
export const paced = (
  turns: ReadonlyArray<ScriptedModel.Turn>,
  millis: number,
  chunk = 4
): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.map(Effect.service(LanguageModel.LanguageModel), (model) => ({
      generate: model.generate,
      stream: (request: LanguageModel.Request) =>
        model.stream!(request).pipe(Stream.mapEffect((part) => Effect.as(Effect.sleep(millis), part)))
    }))
  ).pipe(Layer.provide(ScriptedModel.layer(turns, { chunk })))

/**
 * The desk's story for a durable run, read from the conversation rather than
 * counted: a resumed run that asks again for a turn it never finished gets
 * that same turn.
 */
export const durableStory = (request: LanguageModel.Request): LanguageModel.Response => {
  const results = request.messages.filter((message) => message.role === "tool")
  if (results.length === 0) return { ...calls(call("kb.search", { query: "invoice" })), text: "Let me look that up." }
  if (results.length === 1) {
    return {
      ...calls(call("chat.sendMessage", { text: "Hello Mei, your invoice is fixed." })),
      text: "Found it. I will send Mei this:"
    }
  }
  const sent = results.at(-1)!.content.includes("\"delivered\":true")
  return text(sent ? "Sent: Mei has the fix." : "Not sent: nothing went to Mei.")
}

export interface DurableOptions {
  /** Who decides; single-user by default. */
  readonly who?: Partial<WebConfirm.Options>
  /** How long the model waits before each part of its stream. */
  readonly paceMillis?: number
}

/** A server with a durable chat on in-memory stores (built once, read by the test), and a client for it. */
export const durableChatting = (options: DurableOptions = {}) =>
  Effect.gen(function*() {
    const desk = makeDesk()
    const toolkit = Toolkit.make(desk.KbSearch, desk.SubmitTicket, desk.SendReply)
    const requests: Array<WebConfirm.DurableChatRequest> = []
    const asked: Array<LanguageModel.Request> = []
    const stores = yield* Layer.build(Layer.mergeAll(RunStore.memory, ProposalStore.memory))
    const turns = Array.from({ length: 50 }, () => (request: LanguageModel.Request) => {
      asked.push(request)
      return durableStory(request)
    })
    // One model for every run: a scripted one counts its turns.
    const model = Layer.succeedContext(yield* Layer.build(paced(turns, options.paceMillis ?? 0)))
    const chat: WebConfirm.DurableChat = {
      durable: {
        reply: (request) => {
          requests.push(request)
          return (request._tag === "Start"
            ? Runs.startStream({ toolkit, runId: request.runId, messages: WebConfirm.toMessages(request.messages) })
            : Runs.resumeStream(request.runId, { toolkit })).pipe(Stream.provide(model))
        }
      }
    }
    const who = options.who ?? { singleUser: true }
    const { server } = yield* WebConfirm.make({ ...who, proposals: { toolkit }, chat } as WebConfirm.Options).pipe(
      Effect.provide(Layer.succeedContext(stores))
    )
    const client = (token: string) => {
      const auth = { authorization: `Bearer ${token}` }
      const api = (path: string, init: RequestInit = {}) =>
        Effect.promise(async () => {
          const response = await fetch(`${server.origin}${path}`, {
            ...init,
            headers: { ...auth, "content-type": "application/json", ...init.headers }
          })
          return { status: response.status, body: await response.json().catch(() => undefined) as any }
        })
      const csrf = Effect.map(api("/api/me"), (me) => me.body?.chatCsrf as string)
      const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
        Effect.flatMap(csrf, (value) =>
          Effect.promise(async () => {
            const controller = new AbortController()
            const response = await fetch(`${server.origin}${path}`, {
              method: "POST",
              signal: controller.signal,
              headers: { ...auth, "content-type": "application/json", "x-graded-csrf": value, ...headers },
              body: JSON.stringify(body)
            })
            return read(response, controller)
          }))
      return {
        api,
        say: (content: string) => post("/api/chat", { messages: [{ role: "user", content }] }),
        resume: (runId: string, headers: Record<string, string> = {}) => post("/api/chat/resume", { runId }, headers),
        cards: api("/api/requests").pipe(Effect.map((answer) => answer.body.requests as Array<any>)),
        decide: (card: { readonly id: string; readonly csrf: string }, body: unknown) =>
          api(`/api/proposals/${card.id}/decision`, {
            method: "POST",
            body: JSON.stringify(body),
            headers: { "x-graded-csrf": card.csrf }
          })
      }
    }
    const token = "users" in who && who.users !== undefined ? Object.keys(who.users)[0]! : server.token ?? ""
    const runs = Context.get(stores, RunStore.RunStore)
    /** Waits until the stored run is `status` and held by no process. */
    const settled = (runId: string, status: RunStore.Status) =>
      Effect.gen(function*() {
        for (let i = 0; i < 500; i++) {
          const run = yield* Effect.option(runs.get(runId))
          if (run._tag === "Some" && run.value.status === status && run.value.leaseUntil === undefined) {
            return run.value
          }
          yield* Effect.sleep("10 millis")
        }
        return yield* Effect.die(`run ${runId} never became ${status}`)
      })
    return { server, desk, toolkit, requests, asked, stores, runs, settled, client, me: client(token) }
  })
