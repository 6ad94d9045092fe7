import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Invocation } from "@graded/core"

describe("Invocation", () => {
  it.effect("starts human, and merges what callers add", () =>
    Effect.gen(function*() {
      expect(yield* Invocation.current).toEqual({ autonomous: false })
      const inner = yield* Invocation.current.pipe(Invocation.within({ page: "ticket", actor: "a" }))
      expect(inner).toEqual({ autonomous: false, page: "ticket", actor: "a" })
    }))

  it.effect("within is data-first too, and a data-first autonomous mark is as sticky", () =>
    Effect.gen(function*() {
      const inner = yield* Invocation.within(Invocation.current, { page: "ticket", actor: "a" })
      expect(inner).toEqual({ autonomous: false, page: "ticket", actor: "a" })
      const marked = yield* Invocation.within(Invocation.within(Invocation.current, { autonomous: false }), {
        autonomous: true
      })
      expect(marked.autonomous).toBe(true)
    }))

  it.effect("autonomous is sticky: code running for a model cannot declare itself human", () =>
    Effect.gen(function*() {
      const inner = yield* Invocation.current.pipe(
        Invocation.within({ autonomous: false }),
        Invocation.within({ autonomous: true })
      )
      expect(inner.autonomous).toBe(true)
    }))
})
