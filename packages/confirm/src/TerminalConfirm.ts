/**
 * A HumanConfirm UI in the terminal, through effect's `Terminal`.
 * It shows the tool, its grade and title, who is acting and the exact
 * payload, then asks: approve, edit (the edit is validated again by
 * HumanConfirm against the tool's schema) or reject with a reason. There is no
 * way to skip the question.
 *
 * Its rules, in the order they apply:
 * - the card shows every character as what it is (`card`), is flagged when
 *   the payload holds characters that hide or reorder text, and is cut at
 *   `Limits`, saying how much it shows;
 * - a cut card cannot be approved until the person has asked to see all of it;
 * - end of input is a rejection, never an approval;
 * - the decider is the operating-system user unless the app names one (`by`).
 *
 * @since 0.1.0
 */
import { Effect, Layer, Terminal } from "effect"
import {
  HumanConfirm,
  Invocation,
  type NeedsHumanConfirm,
  type SendCapability,
  type WriteCapability
} from "@graded/core"
import * as os from "node:os"
import * as LineTerminal from "./internal/lineTerminal.js"
import * as Card from "./internal/terminalCard.js"

/**
 * How much of a payload a card shows: at most `field` characters of any one
 * text (a string value or a key), and `total` characters of the whole payload.
 * A card that shows less than all says so, and cannot be approved until the
 * person has asked to see all of it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  readonly field: number
  readonly total: number
}

/**
 * The limits a card uses unless the app sets others: 2,000 characters of one
 * text, 8,000 of the whole payload.
 *
 * @since 0.1.0
 * @category models
 */
export const defaultLimits: Limits = { field: 2_000, total: 8_000 }

/**
 * Who decides at this terminal and how much a card shows.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The decider recorded with every decision, rejections included. By default
   * the operating-system user running the program (`osUser`); set it when the
   * app knows better (its own sign-in).
   */
  readonly by?: string | undefined
  /** Overrides `defaultLimits`; a limit that is not a positive number keeps the default. */
  readonly limits?: Partial<Limits> | undefined
  /**
   * What each card asks first: `"decision"` (default) asks `Approve, edit or
   * reject?`; `"edit"` asks for the new payload at once, for a person who
   * said they came to edit it (`graded decide <id> edit`). An empty line goes
   * back to the usual question; nothing is approved without an answer.
   */
  readonly startWith?: "decision" | "edit" | undefined
}

/**
 * The operating-system user running this program, as the decider at its
 * terminal: `os.userInfo().username`, or `uid:<n>` when the system has no
 * name for the user (a container's uid without a passwd entry), or `"unknown
 * user"` where there is no uid either.
 *
 * @example
 * import { TerminalConfirm } from "@graded/confirm"
 * console.log(TerminalConfirm.osUser())
 *
 * @since 0.1.0
 * @category constructors
 */
export const osUser = (): string => {
  try {
    return os.userInfo().username
  } catch {
    const uid = process.getuid?.()
    return uid === undefined ? "unknown user" : `uid:${uid}`
  }
}

// Output that is not a terminal (columns 0: a pipe, a file) has no rows to cut.
const widthOf = (columns: number | undefined) =>
  columns !== undefined && columns > 0 ? Math.floor(columns) : Number.POSITIVE_INFINITY

const limitsOf = (limits: Partial<Limits> | undefined): Limits => {
  const pick = (value: number | undefined, fallback: number) =>
    value !== undefined && value > 0 ? Math.floor(value) : fallback
  return {
    field: pick(limits?.field, defaultLimits.field),
    total: pick(limits?.total, defaultLimits.total)
  }
}

/**
 * How a confirmation looks in the terminal: the grade, title, tool, who is
 * acting and the payload, every character of it shown as what it is (control,
 * ANSI, bidirectional and zero-width characters as visible escapes such as
 * `\u202E`; a text's line breaks as lines behind a `┆` gutter). Given a
 * `width`, every row is cut at that many columns, each part after the first
 * behind `↳`, so the terminal never wraps a row onto its left edge. The
 * card is flagged when the payload holds characters that hide or reorder
 * text, and says how much it shows when the payload is larger than the limits.
 *
 * @example
 * import { HumanConfirm } from "@graded/core"
 * import { TerminalConfirm } from "@graded/confirm"
 * declare const view: HumanConfirm.View
 * process.stdout.write(TerminalConfirm.card(view, { total: 4_000, width: process.stdout.columns }))
 *
 * @since 0.1.0
 * @category utility types
 */
export const card = (
  view: HumanConfirm.View,
  options?: Partial<Limits> & { readonly width?: number | undefined }
): string => Card.render(view, limitsOf(options), widthOf(options?.width)).text

/**
 * The UI, over the `Terminal` in context. A card that does not show the whole
 * payload asks `Show all, edit or reject? [s/e/r]`: approving needs the person
 * to have seen all of it, so `a` is refused until `s` has shown it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ui = (options: Options = {}): Effect.Effect<HumanConfirm.UI, never, Terminal.Terminal> =>
  Effect.gen(function*() {
    const terminal = yield* Terminal.Terminal
    const by = options.by ?? osUser()
    const limits = limitsOf(options.limits)
    const say = (text: string) => Effect.orElseSucceed(terminal.display(text), () => undefined)
    // End of input (Ctrl-D, a closed pipe) is a rejection, never an approval.
    const ask = (question: string) =>
      Effect.andThen(say(question), terminal.readLine).pipe(
        Effect.map((line): string | undefined => line.trim()),
        Effect.catch(() => Effect.succeed(undefined))
      )
    // Asked for each card: a terminal window can be resized between two.
    const width = Effect.map(terminal.columns, widthOf)
    const closed = HumanConfirm.reject(by, "input ended before a decision (the terminal or pipe closed)")

    const edit = (view: HumanConfirm.View): Effect.Effect<HumanConfirm.Decision | undefined> =>
      Effect.gen(function*() {
        const line = yield* ask("New payload as one line of JSON (empty to go back): ")
        if (line === undefined) return closed
        if (line === "") return undefined
        try {
          return HumanConfirm.approve(by, JSON.parse(line))
        } catch {
          yield* say("That is not JSON.\n")
          return yield* edit(view)
        }
      })

    // `seen`: whether the person has been shown the whole payload.
    const decide = (view: HumanConfirm.View, seen: boolean): Effect.Effect<HumanConfirm.Decision> =>
      Effect.gen(function*() {
        const answer = yield* ask(seen ? "Approve, edit or reject? [a/e/r] " : "Show all, edit or reject? [s/e/r] ")
        if (answer === undefined) return closed
        switch (answer.toLowerCase()) {
          case "a":
          case "approve":
            if (seen) return HumanConfirm.approve(by)
            yield* say("This card does not show the whole payload: answer s to see all of it first.\n")
            return yield* decide(view, seen)
          case "s":
          case "show": {
            const all = Card.render(view, Card.unlimited, yield* width)
            yield* say(all.text)
            return yield* decide(view, !all.cut)
          }
          case "e":
          case "edit": {
            const decision = yield* edit(view)
            return decision ?? (yield* decide(view, seen))
          }
          case "r":
          case "reject": {
            const reason = yield* ask("Reason: ")
            if (reason === undefined) return closed
            return HumanConfirm.reject(by, reason === "" ? "rejected in the terminal" : reason)
          }
          default:
            yield* say(seen ? "Please answer a, e or r.\n" : "Please answer s, e or r.\n")
            return yield* decide(view, seen)
        }
      })

    return {
      confirm: (view) =>
        Effect.gen(function*() {
          const shown = Card.render(view, limits, yield* width)
          yield* say(shown.text)
          // A line typed before this card was on the screen does not answer it.
          yield* LineTerminal.forgetTyped(terminal)
          return yield* options.startWith === "edit"
            ? Effect.flatMap(edit(view), (decision) =>
              decision === undefined ? decide(view, !shown.cut) : Effect.succeed(decision))
            : decide(view, !shown.cut)
        })
    }
  })

/**
 * The process's own terminal, read one line per question from a terminal or a
 * pipe alike: a script can pipe its answers (`a`, `e` and the edit, `r` and
 * the reason) to several cards in turn, and end of input rejects the open
 * question. On a terminal, a line typed before a card was shown does not
 * answer it.
 *
 * @example
 * import { TerminalConfirm } from "@graded/confirm"
 * import { Layer } from "effect"
 * const confirm = TerminalConfirm.layer().pipe(Layer.provide(TerminalConfirm.stdio))
 *
 * @since 0.1.0
 * @category layers
 */
export const stdio: Layer.Layer<Terminal.Terminal> = LineTerminal.layer

/**
 * `HumanConfirm.layer` over the terminal.
 *
 * @example
 * import { Layer } from "effect"
 * import { TerminalConfirm } from "@graded/confirm"
 * const confirm = TerminalConfirm.layer().pipe(Layer.provide(TerminalConfirm.stdio))
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<
  WriteCapability | SendCapability | NeedsHumanConfirm<string>,
  never,
  Terminal.Terminal
> => Invocation.freshLayer(() => Effect.flatMap(ui(options), (made) => Layer.build(HumanConfirm.layer(made))))
