// The run timeline (`/runs`, `GET /api/runs`) over the credit desk's real
// audit: two roles on the same conversation with different candidate sets
// and the reasons for what was left out, a refusal, an approval with its
// decider and delivery; behind the page's sign-in; filters by state, actor and
// tool; text from outside comes back as the audit's escaped lines.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Agent, Audit, HumanConfirm, Printable, ScriptedModel } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { Sql, SqlAudit } from "@graded/sql"
import { mkdtempSync, rmSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { makeDesk } from "../../core/test/supportDesk.js"
import { run as creditDesk } from "../../../examples/credit-desk/src/story.js"

const story = Effect.runPromise(creditDesk({ log: () => {} }))

const timeline = (entries: ReadonlyArray<Audit.Entry>) =>
  Effect.gen(function*() {
    const { server } = yield* WebConfirm.make({ singleUser: true, timeline: { entries: Effect.succeed(entries) } })
    const get = (path: string, auth = true) =>
      Effect.promise(async () => {
        const response = await fetch(`${server.origin}${path}`, {
          headers: auth ? { authorization: `Bearer ${server.token}` } : {}
        })
        const type = response.headers.get("content-type") ?? ""
        return {
          status: response.status,
          type,
          csp: response.headers.get("content-security-policy"),
          body: (type.includes("json") ? await response.json() : await response.text()) as any
        }
      })
    return { server, get }
  })

const runsOf = (body: any): ReadonlyArray<any> => body.runs

describe("WebConfirm timeline", () => {
  it.live("serves /runs under the page's CSP; the API needs the token", () =>
    Effect.gen(function*() {
      const { entries } = yield* Effect.promise(() => story)
      const { get } = yield* timeline(entries)
      const page = yield* get("/runs", false)
      expect(page.status).toBe(200)
      expect(page.csp).toContain("script-src 'nonce-")
      expect(page.body).toContain("graded: runs")
      expect((yield* get("/api/runs", false)).status).toBe(401)
      expect((yield* get("/api/runs?trace=x", false)).status).toBe(401)
    }).pipe(Effect.scoped))

  it.live("without the option there is no timeline", () =>
    Effect.gen(function*() {
      const { server } = yield* WebConfirm.make({ singleUser: true })
      const page = yield* Effect.promise(() => fetch(`${server.origin}/runs`))
      expect(page.status).toBe(404)
      const api = yield* Effect.promise(() =>
        fetch(`${server.origin}/api/runs`, { headers: { authorization: `Bearer ${server.token}` } })
      )
      expect(api.status).toBe(404)
    }).pipe(Effect.scoped))

  it.live("lists the runs and filters them by actor, tool and state", () =>
    Effect.gen(function*() {
      const { entries } = yield* Effect.promise(() => story)
      const { get } = yield* timeline(entries)
      const all = runsOf((yield* get("/api/runs")).body)
      const traces = new Set(entries.map((entry) => entry.traceId ?? ""))
      expect(all.length).toBe(traces.size)
      const ravi = runsOf((yield* get("/api/runs?actor=officer:ravi")).body)
      expect(ravi.length).toBeGreaterThan(0)
      expect(ravi.every((run) => run.actor === "officer:ravi")).toBe(true)
      const transfers = runsOf((yield* get("/api/runs?tool=transfer.send")).body)
      expect(transfers.length).toBe(1)
      expect(transfers[0].actor).toBe("officer:ravi")
      expect(transfers[0].decisions).toBeGreaterThan(0)
      const finished = runsOf((yield* get("/api/runs?state=finished")).body)
      expect(finished.every((run) => run.state === "finished")).toBe(true)
      expect(runsOf((yield* get("/api/runs?state=cancelled")).body)).toEqual([])
    }).pipe(Effect.scoped))

  it.live("one run: two roles' candidate sets with the reasons, a refusal, an approval and its delivery", () =>
    Effect.gen(function*() {
      const { entries } = yield* Effect.promise(() => story)
      const { get } = yield* timeline(entries)
      const all = runsOf((yield* get("/api/runs")).body)
      const detail = (trace: string) => Effect.map(get(`/api/runs?trace=${encodeURIComponent(trace)}`), (r) => r.body)
      // The same conversation, first as the support agent, then as the officer.
      const [supportRun] = all.filter((run) => run.actor === "agent:alice" && run.tools.length === 0).slice(-1)
      const support = yield* detail(supportRun.trace)
      const supportOffer = support.rounds[0].offer
      expect(supportOffer.tools).not.toContain("credit.score")
      expect(supportOffer.leftOut).toEqual(expect.arrayContaining([
        expect.objectContaining({ tool: "credit.score", gate: expect.stringMatching(/^policy:/) })
      ]))
      expect(supportOffer.leftOut.find((left: any) => left.tool === "credit.score").reason).toMatch(/\S/)

      const transfer = all.find((run) => run.tools.includes("transfer.send"))
      const officer = yield* detail(transfer.trace)
      // The officer is offered the score from the start, unlike the support agent; the transfer once
      // the balance was looked up: each round shows the set it was judged on.
      expect(officer.rounds[0].offer.tools).toContain("credit.score")
      expect(officer.rounds.some((round: any) => round.offer?.tools.includes("transfer.send"))).toBe(true)
      const steps = officer.rounds.flatMap((round: any) => round.steps)
      expect(steps.find((step: any) => step.type === "decided" && step.tool === "transfer.send")).toMatchObject({
        decision: "approved",
        by: "officer:ravi",
        edited: false
      })
      expect(steps.find((step: any) => step.type === "delivered" && step.tool === "transfer.send").key).toMatch(/\S/)

      // The support agent reaching for the score: refused, with the gate.
      const named = all.find((run) =>
        run.actor === "agent:alice" && run.refusals > 0 && run.tools.includes("credit.score")
      )
      const refused = (yield* detail(named.trace)).rounds.flatMap((round: any) => round.steps)
        .find((step: any) => step.type === "refused")
      expect(refused).toMatchObject({ tool: "credit.score", gate: "policy:role" })
      expect(refused.line).toContain("REFUSED credit.score")

      expect((yield* get("/api/runs?trace=no-such-run")).status).toBe(404)
    }).pipe(Effect.scoped))

  it.live("text from outside comes back escaped, as the audit's lines show it", () =>
    Effect.gen(function*() {
      const hostile = "x\u202Egnp.exe\n<img src=x onerror=alert(1)>"
      const at = new Date(0).toISOString()
      const entries: ReadonlyArray<Audit.Entry> = [
        {
          type: "refused",
          tool: hostile,
          gate: "offered",
          reason: "not offered",
          at,
          traceId: "t-1",
          actor: hostile,
          autonomous: true
        },
        {
          type: "confirm-requested",
          tool: "chat.sendMessage",
          grade: "send",
          payload: { text: hostile },
          at,
          traceId: "t-1",
          actor: hostile,
          autonomous: false
        }
      ]
      const { get } = yield* timeline(entries)
      const [listed] = runsOf((yield* get("/api/runs")).body)
      const detail = (yield* get(`/api/runs?trace=${listed.trace}`)).body
      // No raw line break or bidirectional override reaches the page; each is a visible escape.
      const strings = (value: unknown): ReadonlyArray<string> =>
        typeof value === "string" ? [value]
          : typeof value === "object" && value !== null ? Object.values(value).flatMap(strings)
          : []
      const shown = strings({ listed, detail })
      expect(shown.filter((text) => /[\n\u202E]/.test(text))).toEqual([])
      expect(shown.some((text) => text.includes("\\u202E"))).toBe(true)
      expect(detail.rounds[0].steps[0].tool).toBe(Printable.name(hostile))
      expect(detail.rounds[0].steps[1].line).toBe(Audit.describe(entries[1]!))
    }).pipe(Effect.scoped))

  it.live("reads a SQLite audit through SqlAudit.entries, as written by a supervised run", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(path.join(os.tmpdir(), "graded-timeline-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      const database = yield* Layer.build(Sql.sqlite({ filename: path.join(dir, "graded.db") }))
      const desk = makeDesk()
      yield* Agent.supervised({
        toolkit: desk.support,
        prompt: "Tell the customer.",
        context: { actor: "agent:mei", traceId: "sqlite-run" }
      }).pipe(
        Effect.provide(Layer.mergeAll(
          ScriptedModel.layer([
            ScriptedModel.calls(ScriptedModel.call("chat.sendMessage", { text: "Hello" })),
            ScriptedModel.text("Sent.")
          ]),
          HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:mei")]))
        )),
        Effect.provide(database)
      )
      const { server } = yield* WebConfirm.make({
        singleUser: true,
        timeline: { entries: SqlAudit.entries().pipe(Effect.provide(database)) }
      })
      const get = (query: string) =>
        Effect.promise(async () =>
          (await fetch(`${server.origin}/api/runs${query}`, { headers: { authorization: `Bearer ${server.token}` } }))
            .json() as Promise<any>
        )
      const [run] = runsOf(yield* get(""))
      expect(run).toMatchObject({ trace: "sqlite-run", actor: "agent:mei", state: "finished", decisions: 1 })
      const steps = (yield* get("?trace=sqlite-run")).rounds.flatMap((round: any) => round.steps)
      expect(steps.find((step: any) => step.type === "decided")).toMatchObject({
        tool: "chat.sendMessage",
        decision: "approved",
        by: "agent:mei"
      })
      expect(steps.find((step: any) => step.type === "delivered").key).toMatch(/\S/)
    }).pipe(Effect.scoped))

  it.live("an audit that cannot be read is a 503, not a crash", () =>
    Effect.gen(function*() {
      const { server } = yield* WebConfirm.make({
        singleUser: true,
        timeline: { entries: Effect.fail(new Error("database down: password=hunter2")) }
      })
      const response = yield* Effect.promise(() =>
        fetch(`${server.origin}/api/runs`, { headers: { authorization: `Bearer ${server.token}` } })
      )
      expect(response.status).toBe(503)
      expect(yield* Effect.promise(() => response.text())).not.toContain("hunter2")
    }).pipe(Effect.scoped))
})
