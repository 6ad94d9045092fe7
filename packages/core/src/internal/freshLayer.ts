// The layers graded hands out, their effects made again for each build. A
// layer made by `Layer.sync`, `succeed`, `effect` or `effectContext` keeps
// the effect it runs in a closure, out of reach of sealing, and every build
// runs that same object; a tracer's `context` hook is handed every effect a
// fiber runs, so a tool's code that watches its own call could rewrite it for
// the next build, in a human's fiber (test/Adversarial.supervised.test.ts).
// Who may import this: core's modules that make layers, and Invocation.ts,
// whose `freshLayer` the other packages (and apps) make theirs with.
import { Context, Effect, Layer, Scope } from "effect"

/** A layer of the context `make` builds, made for each build, in the layer's scope. */
export const freshLayer = <A, E, R>(
  make: () => Effect.Effect<Context.Context<A>, E, R>
): Layer.Layer<A, E, Exclude<R, Scope.Scope>> =>
  Layer.fromBuildMemo((_, scope) => Scope.provide(Effect.suspend(make), scope))

/** A layer of one service, `make` run for each build. */
export const freshService = <I, S, E, R>(
  tag: Context.Key<I, S>,
  make: () => Effect.Effect<S, E, R>
): Layer.Layer<I, E, Exclude<R, Scope.Scope>> =>
  freshLayer(() => Effect.map(make(), (service) => Context.make(tag, service)))
