// Effects that a callback outside any fiber hands over (the SDK's request
// handlers, node's HTTP listener) run here, in fibers born of the fiber that
// made the runner. On Effect 4 graded's mark (a model's work, a tool's own
// code) is kept per fiber and given to a fiber when it is made, by the fiber
// making it: a root fiber started from a callback (`Effect.runForkWith` a
// captured context) would start without it. So the runner's loop, forked
// where the runner is made, forks each effect itself: every one carries the
// maker's context and mark, as a fiber it forked itself would.
// Who may import this: serve.ts only.
import { Effect, Exit, Fiber, Queue } from "effect"

export interface Runner {
  /** Runs `effect` in a fiber the runner's loop forks; its exit, however it ends. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, any>) => Promise<Exit.Exit<A, E>>
  /** Ends the loop; effects it started run on to their end, as the ones a callback started would. */
  readonly stop: () => void
}

/**
 * A runner whose loop `fork` starts (`Effect.forkDetach` for one that lives
 * until `stop`, `Effect.forkScoped` for one its scope also ends).
 */
export const make = <R>(
  fork: (loop: Effect.Effect<never, never, any>) => Effect.Effect<Fiber.Fiber<never>, never, R>
): Effect.Effect<Runner, never, any> =>
  Effect.gen(function*() {
    const jobs = yield* Queue.unbounded<Effect.Effect<void, never, any>>()
    // Started at once: an effect that completes in one step (a read on the
    // registry's synchronous path) is done before the loop takes the next.
    const loop = yield* fork(
      Effect.forever(Effect.flatMap(Queue.take(jobs), Effect.forkDetach({ startImmediately: true })))
    )
    return {
      run: <A, E>(effect: Effect.Effect<A, E, any>) =>
        new Promise<Exit.Exit<A, E>>((resolve) => {
          const offered = Queue.offerUnsafe(
            jobs,
            // Its exit is the caller's: nothing of it is left for the loop (or a log) to see.
            Effect.asVoid(Effect.exit(Effect.onExit(effect, (exit) => Effect.sync(() => resolve(exit)))))
          )
          // Stopped: nothing runs any more.
          if (!offered) resolve(Exit.interrupt())
        }),
      stop: () => {
        Queue.shutdownUnsafe(jobs)
        Effect.runFork(Fiber.interrupt(loop))
      }
    }
  })
