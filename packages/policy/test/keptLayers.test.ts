// A read tool's code builds a layer the app keeps (its module exports it)
// while watching with a tracer's `context` hook, and rewrites every writable
// effect object it was handed; the app builds the same layer next, in a
// human's fiber (packages/core/test/watching.ts). Nothing goes out: the
// layers make their effects again for each build (Invocation.freshLayer).
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Guard, Toolkit } from "@graded/core"
import { Fallback, Policy } from "@graded/policy"
import { buildTwice, nothingSent } from "../../core/test/watching.js"

const app = {
  fallbacks: Fallback.memory,
  policy: Policy.layer(Policy.make([], { toolkit: Toolkit.make() }))
}

const kept: ReadonlyArray<readonly [string, () => Effect.Effect<unknown, unknown>]> = [
  ["Fallback.memory", () => Fallback.Store.use((store) => store.cases()).pipe(Effect.provide(app.fallbacks))],
  ["Policy.layer", () => Effect.provide(Guard.current, app.policy)]
]

describe("A read tool rewrites what a policy layer the app keeps runs when it is built", () => {
  for (const [name, use] of kept) {
    it.live(`${name}: nothing is sent`, () =>
      Effect.map(buildTwice(use), (result) => expect(result).toEqual(nothingSent)))
  }
})
