// Random streamed turns: text and calls split at any boundary and
// interleaved in any order, sometimes with a malformed part or the
// connection cut. Whatever the pieces, a streaming loop ends where the loop
// that does not stream ends for the same turn; a malformed or cut call is
// refused, never run.
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Exit, Layer, Schema, Stream } from "effect"
import { Agent, Audit, type LanguageModel, ScriptedModel, Toolkit } from "@graded/core"
import { makeDesk } from "./supportDesk.js"
import { propertyRuns } from "../../../test/propertyRuns.js"
import { integer, option } from "../../../test/arbitraries.js"

interface Case {
  readonly text: string | undefined
  readonly queries: ReadonlyArray<string>
  // Where to split and which piece comes next: read in turn, round and round.
  readonly draws: ReadonlyArray<number>
  // 0 as it came, 1 one call's part malformed, 2 the connection cut.
  readonly variant: number
}

const cases: Arbitrary.Arbitrary<Case> = Arbitrary.map(
  Arbitrary.all([
    option(Arbitrary.schema(Schema.String), 3),
    Arbitrary.array(Arbitrary.schema(Schema.String), { maxLength: 3 }),
    Arbitrary.array(integer(0, 1_000), { minLength: 1, maxLength: 40 }),
    integer(0, 2)
  ]),
  ([text, queries, draws, variant]) => ({ text, queries, draws, variant })
)

const reader = (draws: ReadonlyArray<number>) => {
  let at = 0
  return (below: number) => below <= 1 ? 0 : draws[at++ % draws.length]! % below
}

// Splits text into pieces at drawn places (never an empty piece).
const split = (text: string, draw: (below: number) => number): Array<string> => {
  const pieces: Array<string> = []
  let rest = text
  while (rest.length > 0) {
    const size = 1 + draw(Math.min(rest.length, 12))
    pieces.push(rest.slice(0, size))
    rest = rest.slice(size)
  }
  return pieces
}

const streamOf = (c: Case) => {
  const draw = reader(c.draws)
  const turn: LanguageModel.Response = {
    text: c.text === undefined || c.text === "" ? undefined : c.text,
    toolCalls: c.queries.map((query, index) => ({
      id: `c${index}`,
      name: "kb__search",
      arguments: JSON.stringify({ query })
    }))
  }
  const sequences: Array<Array<LanguageModel.StreamPart>> = [
    split(turn.text ?? "", draw).map((delta) => ({ type: "text-delta", delta })),
    ...turn.toolCalls.map((call, index): Array<LanguageModel.StreamPart> => [
      { type: "call-start", key: `k${index}`, id: call.id, name: call.name },
      ...split(call.arguments, draw).map((delta): LanguageModel.StreamPart => ({
        type: "call-delta",
        key: `k${index}`,
        delta
      })),
      // A provider that ends calls only at the turn's end (Chat Completions) sends none.
      ...(draw(3) === 0 ? [] : [{ type: "call-end", key: `k${index}` } as const])
    ])
  ]
  // Interleaved: each sequence in its order, the sequences in any order.
  const parts: Array<LanguageModel.StreamPart> = []
  for (;;) {
    const left = sequences.filter((sequence) => sequence.length > 0)
    if (left.length === 0) break
    parts.push(left[draw(left.length)]!.shift()!)
  }
  parts.push({ type: "finish" })
  // A turn's calls are in the order they started, as a provider numbers them.
  const order = parts.flatMap((part) => part.type === "call-start" ? [part.id] : [])
  const inOrder = { ...turn, toolCalls: order.map((id) => turn.toolCalls.find((call) => call.id === id)!) }
  // Which call is broken, and how.
  const broken = new Set<string>()
  if (c.variant === 1 && turn.toolCalls.length > 0) {
    const victim = draw(turn.toolCalls.length)
    const index = parts.findIndex((part) => part.type === "call-delta" && part.key === `k${victim}`)
    parts.splice(index, 0, { type: "call-delta", key: `k${victim}`, delta: { text: "not text" } } as never)
    broken.add(`c${victim}`)
  }
  let cut = false
  if (c.variant === 2) {
    // Cut anywhere before the turn's end.
    parts.splice(draw(parts.length), parts.length)
    cut = true
    const ended = new Set(parts.flatMap((part) => part.type === "call-end" ? [part.key] : []))
    for (const part of parts) if (part.type === "call-start" && !ended.has(part.key)) broken.add(part.id)
  }
  return { turn: inOrder, parts, broken, cut }
}

const shape = (entries: ReadonlyArray<Audit.Entry>) => entries.map(({ at: _at, traceId: _trace, ...entry }) => entry)

describe("streamed turns, at random", () => {
  it.effect(
    "reassemble to the turn the loop that does not stream gets; a malformed or cut call is refused, never run",
    () =>
      Effect.gen(function*() {
        let runs = 0
        const count = propertyRuns(400)
        const result = yield* Arbitrary.checkEffect(cases, (c) =>
          Effect.gen(function*() {
            runs++
            const { broken, cut, parts, turn } = streamOf(c)
            const plainDesk = makeDesk()
            const plainAudit = Audit.memory()
            const plain = yield* Agent.run({ toolkit: Toolkit.make(plainDesk.KbSearch), prompt: "Look." }).pipe(
              Effect.provide(Layer.merge(ScriptedModel.layer([turn, ScriptedModel.text("done")]), plainAudit.layer))
            )
            const desk = makeDesk()
            const audit = Audit.memory()
            const exit = yield* Effect.exit(Stream.runCollect(
              Agent.runStream({ toolkit: Toolkit.make(desk.KbSearch), prompt: "Look." }).pipe(
                Stream.provide(Layer.merge(
                  ScriptedModel.layer([ScriptedModel.streamed(parts, { cut }), ScriptedModel.text("done")]),
                  audit.layer
                ))
              )
            ))
            const started = parts.some((part) => part.type === "call-start")
            if (cut && !started) {
              // Only text came, cut: no answer, and nothing ran.
              return Exit.isFailure(exit) && desk.effects.searches.length === 0
            }
            if (Exit.isFailure(exit)) return false
            const end = exit.value.at(-1)
            if (end?.type !== "end") return false
            if (broken.size === 0 && !cut) {
              // The same turn: the same result, the same audit, the same searches.
              expect(end.result).toEqual(plain)
              expect(shape(audit.entries)).toEqual(shape(plainAudit.entries))
              return desk.effects.searches.join("\u0000") === plainDesk.effects.searches.join("\u0000")
            }
            // Each broken call was refused at the call gate; only the others ran.
            const first = end.result.calls.filter((call) => broken.has(call.id))
            const ran = end.result.calls.filter((call) => call.ok).map((call) => call.ok ? call.input : undefined)
            return first.length === broken.size && first.every((call) =>
              !call.ok && call.error.code === "invalid-input"
            ) &&
              ran.length === desk.effects.searches.length &&
              exit.value.filter((event) => event.type === "refused" && broken.has(event.id)).length === broken.size
          }), { runs: count })
        expect(result._tag, Arbitrary.formatCheckFailure(result)).toBe("Passed")
        expect(runs).toBeGreaterThanOrEqual(count)
      }),
    240_000
  )
})
