// The few fast-check combinators the property suites (core's and sql's) were
// written with, on Effect 4's own Arbitrary (Effect 4 ships no fast-check): a
// weight is how often a choice comes up, and `option`'s `freq` how many values
// come for one undefined, as fast-check's.
import { Schema } from "effect"
import * as Arbitrary from "effect/Arbitrary"

export type Arb<A> = Arbitrary.Arbitrary<A>
type Weighted<A> = Arb<A> | { readonly arbitrary: Arb<A>; readonly weight: number }
type Chosen<W> = W extends Arb<infer A> ? A : W extends { readonly arbitrary: Arb<infer A> } ? A : never

export const integer = (min: number, max: number): Arb<number> =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: min, maximum: max })))

export const oneof = <const W extends ReadonlyArray<Weighted<any>>>(...choices: W): Arb<Chosen<W[number]>> => {
  const weighted = choices.map((choice): { readonly arbitrary: Arb<any>; readonly weight: number } =>
    Arbitrary.isArbitrary(choice) ? { arbitrary: choice, weight: 1 } : choice as { arbitrary: Arb<any>; weight: number }
  )
  const total = weighted.reduce((sum, { weight }) => sum + weight, 0)
  return Arbitrary.flatMap(integer(0, total - 1), (n) => {
    for (const { arbitrary, weight } of weighted) {
      if (n < weight) return arbitrary
      n -= weight
    }
    return weighted.at(-1)!.arbitrary
  })
}

export const constantFrom = <const A extends ReadonlyArray<unknown>>(...values: A): Arb<A[number]> =>
  Arbitrary.map(integer(0, values.length - 1), (index) => values[index])

export const option = <A>(arbitrary: Arb<A>, freq = 5): Arb<A | undefined> =>
  oneof({ arbitrary: Arbitrary.Constant(undefined), weight: 1 }, { arbitrary, weight: freq })

export const boolean: Arb<boolean> = Arbitrary.schema(Schema.Boolean)
export const json: Arb<Schema.Json> = Arbitrary.schema(Schema.Json)
