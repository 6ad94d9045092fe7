// McpImport.live: an imported toolkit kept current. When the server sends
// `notifications/tools/list_changed`, its tools are listed and imported again
// under the same grades; a tool nobody graded is a send, as at import.
//
// Every tool of a live import, from whichever listing it was made, reaches the
// server through the latest listing: a tool the server no longer lists, or
// arguments its current input schema does not allow, fail with `Changed`
// before anything is sent. When the latest listing could not be imported, no
// call is made until one can: what the server exposes is then unknown.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, PubSub, Queue, Ref, Result, type Schema, Semaphore, type Scope } from "effect"
import type { Grade, Toolkit } from "@graded/core"
import {
  build,
  call,
  Changed,
  checkGrades,
  type Compile,
  ImportFailed,
  list,
  type Listed,
  makeCompiler,
  messageOf,
  missingGraded,
  type Options,
  reports,
  type Route
} from "./import.js"

export interface Refresh {
  readonly added: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  readonly changed: ReadonlyArray<string>
  readonly failed?: string | undefined
}

export interface Live {
  readonly toolkit: Effect.Effect<Toolkit.Any>
  readonly refresh: Effect.Effect<Refresh, ImportFailed>
  readonly changes: Effect.Effect<PubSub.Subscription<Refresh>, never, Scope.Scope>
}

interface Current {
  readonly listing: Listed
  readonly accepts: (args: unknown) => string | undefined
  readonly output: Schema.Codec<any, any> | undefined
}

interface State {
  readonly toolkit: Toolkit.Any
  readonly listed: ReadonlyArray<Listed>
  readonly current: ReadonlyMap<string, Current>
  /** Why the latest listing could not be imported; no call is made meanwhile. */
  readonly failed: string | undefined
}

/** A listed tool as calls check it now, when its schemas compile; a tool whose schemas do not is left out. */
const currentOf = (compile: Compile, listing: Listed): ReadonlyArray<readonly [string, Current]> => {
  const input = compile(listing.inputSchema)
  const output = listing.outputSchema === undefined ? undefined : compile(listing.outputSchema)
  if (Result.isFailure(input) || output !== undefined && Result.isFailure(output)) return []
  return [[listing.name, {
    listing,
    // The arguments as they are, never stripped: what is checked is what is sent.
    accepts: input.success.check,
    output: output?.success.schema
  }]]
}

/** Why a tool is not in the latest listing: the server stopped listing it, or left it out for its schemas. */
const removedDetail = (now: State, serverName: string): string => {
  const skipped = reports.get(now.toolkit)?.skipped.find((tool) => tool.serverName === serverName)
  return skipped === undefined
    ? `the server no longer lists ${serverName}`
    : `the latest import left ${serverName} out: ${skipped.reason}`
}

const fingerprint = (listing: Listed): string =>
  JSON.stringify([
    listing.title,
    listing.description,
    listing.inputSchema,
    listing.outputSchema,
    listing.annotations
  ])

export const live = (
  client: Client,
  gradesByName: { readonly [name: string]: Grade.Grade },
  options: Options = {}
): Effect.Effect<Live, ImportFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const namespace = options.namespace ?? "mcp"
    yield* checkGrades(gradesByName)
    const state = yield* Ref.make<State | undefined>(undefined)

    const route: Route = (name, listing) => (args, key) =>
      Ref.get(state).pipe(
        Effect.flatMap((now) => {
          if (now === undefined || now.failed !== undefined) {
            return Effect.fail(
              new Changed({
                tool: name,
                change: "unlisted",
                detail: `the server's latest tool listing could not be imported: ${now?.failed ?? "not yet listed"}`
              })
            )
          }
          const current = now.current.get(listing.name)
          if (current === undefined) {
            return Effect.fail(new Changed({ tool: name, change: "removed", detail: removedDetail(now, listing.name) }))
          }
          const problem = current.accepts(args)
          if (problem !== undefined) {
            return Effect.fail(
              new Changed({ tool: name, change: "input", detail: `its current input schema refuses them: ${problem}` })
            )
          }
          return call(client, name, listing.name, current.output, options, args, key)
        })
      )

    const importListing = (listed: ReadonlyArray<Listed>, previous: State | undefined) =>
      Effect.gen(function*() {
        const missing = missingGraded(gradesByName, listed)
        if (previous === undefined && missing.length > 0) {
          return yield* new ImportFailed({ reason: `the server does not list ${missing.join(", ")}` })
        }
        // A graded tool the server stopped listing keeps its place, and its type:
        // its calls fail with Changed("removed") until the server lists it again.
        const kept = previous === undefined
          ? []
          : missing.flatMap((name) => previous.listed.filter((listing) => listing.name === name))
        // One compiler per listing: what it compiled goes with the listing it was compiled for.
        const compile = makeCompiler()
        const toolkit = yield* build(gradesByName, [...listed, ...kept], options, route, compile)
        const next: State = {
          toolkit,
          listed: [...listed, ...kept],
          current: new Map(listed.flatMap((listing) => currentOf(compile, listing))),
          failed: undefined
        }
        return next
      })

    const first = yield* list(client, options).pipe(Effect.flatMap((listed) => importListing(listed, undefined)))
    yield* Ref.set(state, first)

    const published = yield* Effect.acquireRelease(PubSub.sliding<Refresh>(64), PubSub.shutdown)
    const lock = yield* Semaphore.make(1)

    const refresh: Effect.Effect<Refresh, ImportFailed> = Semaphore.withPermits(lock, 1)(
      Effect.gen(function*() {
        const previous = (yield* Ref.get(state))!
        const outcome = yield* list(client, options).pipe(
          Effect.flatMap((listed) => importListing(listed, previous)),
          // A listing that breaks the importer is one that cannot be imported: calls stop, as for any.
          Effect.catchDefect((defect) =>
            Effect.fail(new ImportFailed({ reason: `the listing could not be imported: ${messageOf(defect)}` }))
          ),
          Effect.result
        )
        if (Result.isFailure(outcome)) {
          // Unknown is not safe: no call is made until a listing imports again.
          yield* Ref.set(state, { ...previous, failed: outcome.failure.reason })
          yield* PubSub.publish(published, { added: [], removed: [], changed: [], failed: outcome.failure.reason })
          return yield* outcome.failure
        }
        const next = outcome.success
        const graded = (serverName: string) => `${namespace}.${serverName}`
        // Only tools that are, or were, in a toolkit: one left out for its name is reported by `skipped`.
        const inNext = (name: string) => next.toolkit.get(graded(name)) !== undefined
        const inPrevious = (name: string) => previous.toolkit.get(graded(name)) !== undefined
        const report: Refresh = {
          added: [...next.current.keys()].filter((name) => !previous.current.has(name) && inNext(name)).map(graded),
          removed: [...previous.current.keys()].filter((name) => !next.current.has(name) && inPrevious(name)).map(
            graded
          ),
          changed: [...next.current.values()].flatMap(({ listing }) => {
            const old = previous.current.get(listing.name)?.listing
            return old !== undefined && inNext(listing.name) && fingerprint(old) !== fingerprint(listing)
              ? [graded(listing.name)]
              : []
          })
        }
        yield* Ref.set(state, next)
        yield* PubSub.publish(published, report)
        return report
      })
    )

    // Notifications are coalesced: a burst of them is one listing.
    const signals = yield* Queue.sliding<void>(1)
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
          Queue.offerUnsafe(signals, undefined)
        })
      ),
      () => Effect.sync(() => client.removeNotificationHandler("notifications/tools/list_changed"))
    )
    // A failed refresh is published, and the next notification tries again: nothing a refresh
    // meets, a defect included, ends the loop that follows the server.
    yield* Queue.take(signals).pipe(
      Effect.andThen(Effect.catchCause(refresh, () => Effect.void)),
      Effect.forever,
      Effect.forkScoped
    )

    return {
      toolkit: Ref.get(state).pipe(Effect.map((now) => now!.toolkit)),
      refresh,
      changes: PubSub.subscribe(published)
    }
  })
