/**
 * A HumanConfirm UI in the terminal, through @effect/platform's `Terminal`.
 * It shows the tool, its grade and title, who is acting and the exact
 * payload, then asks: approve, edit (the edit is validated again by
 * HumanConfirm against the tool's schema) or reject with a reason. There is no
 * way to skip the question.
 *
 * @since 0.1.0
 */
import { Terminal } from "@effect/platform"
import { Effect, Layer } from "effect"
import { HumanConfirm, type SendCapability, type WriteCapability } from "@graded/core"

/**
 * Who decides at this terminal: the `by` of every decision, rejections
 * included.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly by: string
}

/**
 * How a confirmation looks in the terminal.
 *
 * @since 0.1.0
 * @category utility types
 */
export const card = (view: HumanConfirm.View): string =>
  [
    "",
    `┌ ${view.grade.toUpperCase()}: ${view.title} (${view.tool})`,
    `│ ${view.description}`,
    ...(view.actor !== undefined ? [`│ acting: ${view.actor}`] : []),
    "│ payload, exactly as it will go out:",
    ...JSON.stringify(view.payload, null, 2).split("\n").map((line) => `│   ${line}`),
    "└"
  ].join("\n") + "\n"

/**
 * The UI, over the `Terminal` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ui = (options: Options): Effect.Effect<HumanConfirm.UI, never, Terminal.Terminal> =>
  Effect.map(Terminal.Terminal, (terminal) => {
    const say = (text: string) => Effect.orElseSucceed(terminal.display(text), () => undefined)
    // End of input (Ctrl-D, a closed pipe) is a rejection, never an approval.
    const ask = (question: string) =>
      Effect.zipRight(say(question), terminal.readLine).pipe(
        Effect.map((line) => line.trim()),
        Effect.catchAll(() => Effect.succeed(undefined))
      )
    const closed = HumanConfirm.reject(options.by, "the terminal closed before a decision")

    const edit = (view: HumanConfirm.View): Effect.Effect<HumanConfirm.Decision | undefined> =>
      Effect.gen(function*() {
        const line = yield* ask("New payload as one line of JSON (empty to go back): ")
        if (line === undefined) return closed
        if (line === "") return undefined
        try {
          return HumanConfirm.approve(options.by, JSON.parse(line))
        } catch {
          yield* say("That is not JSON.\n")
          return yield* edit(view)
        }
      })

    const decide = (view: HumanConfirm.View): Effect.Effect<HumanConfirm.Decision> =>
      Effect.gen(function*() {
        const answer = yield* ask("Approve, edit or reject? [a/e/r] ")
        if (answer === undefined) return closed
        switch (answer.toLowerCase()) {
          case "a":
          case "approve":
            return HumanConfirm.approve(options.by)
          case "e":
          case "edit": {
            const decision = yield* edit(view)
            return decision ?? (yield* decide(view))
          }
          case "r":
          case "reject": {
            const reason = yield* ask("Reason: ")
            if (reason === undefined) return closed
            return HumanConfirm.reject(options.by, reason === "" ? "rejected in the terminal" : reason)
          }
          default:
            yield* say("Please answer a, e or r.\n")
            return yield* decide(view)
        }
      })

    return { confirm: (view) => Effect.zipRight(say(card(view)), decide(view)) }
  })

/**
 * `HumanConfirm.layer` over the terminal.
 *
 * @example
 * import { NodeTerminal } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { TerminalConfirm } from "@graded/confirm"
 * const confirm = TerminalConfirm.layer({ by: "cli:alice" }).pipe(Layer.provide(NodeTerminal.layer))
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<
  WriteCapability | SendCapability,
  never,
  Terminal.Terminal
> => Layer.unwrapEffect(Effect.map(ui(options), HumanConfirm.layer))
