// What the proposal tests share: a mail tool whose first delivery can be made
// to stop half-way (so a proposal is left in doubt), a way to leave one in
// doubt as a crash would, and the page's proposal API spoken over real HTTP.
import { Effect, Fiber, Schema } from "effect"
import { HumanConfirm, Invocation, Proposal, type ProposalStore, Tool, Toolkit } from "@graded/core"

export const Mail = Schema.Struct({ to: Schema.String, text: Schema.Trimmed.check(Schema.isNonEmpty()) })

/** A mail tool counting what it really sent, and with which delivery key; `stall` makes a delivery never finish. */
export const makeMailer = () => {
  const state = {
    stall: false,
    /** How many deliveries reached the outside system, finished or not. */
    entered: 0,
    sent: [] as Array<{ readonly payload: typeof Mail.Type; readonly key: string }>
  }
  const Send = Tool.send("mail.send", {
    title: "Send an email",
    description: "Email a customer.",
    input: Mail,
    payload: Mail,
    output: Schema.Struct({ id: Schema.String }),
    prepare: (input) => Effect.succeed(input),
    deliver: (confirmed) =>
      Effect.suspend(() => (state.entered++, state.stall ? Effect.never : Effect.void)).pipe(
        Effect.andThen(Effect.sync(() => {
          state.sent.push({ payload: confirmed.payload, key: confirmed.idempotencyKey })
          return { id: `m-${state.sent.length}` }
        }))
      )
  })
  const toolkit = Toolkit.make(Send)
  const propose = (text: string, options: Proposal.ToolOptions = {}) =>
    Effect.gen(function*() {
      const proposed = yield* Tool.proposal(Send, options).invoke({ to: "customer:42", text })
      return proposed.proposal
    })
  /**
   * Approved by `by`, its delivery recorded, then stopped inside `deliver`
   * (as a crash or a lost process would): the proposal is left in doubt.
   */
  // `edit`: what the approver changed the payload to.
  const stopMidDelivery = (id: string, by = "agent:alice", edit?: unknown) =>
    Effect.gen(function*() {
      state.stall = true
      const entered = state.entered
      const fiber = yield* Effect.forkChild(
        Proposal.approve(toolkit, id).pipe(
          Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve(by, edit)]))),
          Invocation.within({ actor: by })
        )
      )
      // Inside `deliver`: the delivery is recorded and may be going out.
      for (let i = 0; i < 1000 && state.entered === entered; i++) yield* Effect.sleep("2 millis")
      yield* Fiber.interrupt(fiber)
      state.stall = false
      return yield* Proposal.get(id)
    }) satisfies Effect.Effect<Proposal.Proposal, unknown, ProposalStore.ProposalStore>
  return { state, Send, toolkit, propose, stopMidDelivery }
}

export interface Answer {
  readonly status: number
  readonly body: any
}

/** The page's API for one caller (`token`), over real HTTP with fetch. */
export const client = (origin: string, token: string, extra: Record<string, string> = {}) => {
  const call = (path: string, init: RequestInit = {}) =>
    Effect.promise(async (): Promise<Answer> => {
      const response = await fetch(`${origin}${path}`, {
        ...init,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          ...extra,
          ...init.headers as Record<string, string>
        }
      })
      return { status: response.status, body: await response.json().catch(() => undefined) }
    })
  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    call(path, { method: "POST", body: JSON.stringify(body), headers })
  return {
    /** The cards the page lists now. */
    cards: Effect.map(call("/api/requests"), (answer) => (answer.body?.requests ?? []) as Array<any>),
    /** Approve, edit or reject a pending proposal card. */
    decide: (card: { id: string; csrf: string }, body: unknown, headers = { "x-graded-csrf": card.csrf }) =>
      post(`/api/proposals/${encodeURIComponent(card.id)}/decision`, body, headers),
    /** Mark done or retry an in-doubt card. */
    resolve: (card: { id: string; csrf: string }, body: unknown, headers = { "x-graded-csrf": card.csrf }) =>
      post(`/api/proposals/${encodeURIComponent(card.id)}/in-doubt`, body, headers)
  }
}
