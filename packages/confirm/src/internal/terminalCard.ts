// The terminal card: what a person reads before deciding. Imported by
// TerminalConfirm only. It guards three things, in this order:
// - nothing on the card (the payload, its keys, a name, the actor) can move the
//   cursor, erase a line or reorder text: everything goes through core's
//   Printable, and characters that hide or reorder text also flag the card;
// - a text's line breaks show as lines, each behind a gutter (`┆`) the payload
//   cannot draw, so a payload cannot fake a field or the card's border;
// - a payload larger than the limits is cut where the card says so, and the
//   card reports how much it shows (`cut`), so the UI can refuse to approve
//   what the person has not seen.
// A backslash in the payload shows as `\\` and a tab in a quoted text as `\t`,
// so every escape a person reads on the card is one graded made.
import { type HumanConfirm, Printable } from "@graded/core"

export interface Limits {
  /** The most characters of one text (a string value or a key) the card shows. */
  readonly field: number
  /** The most characters of the whole payload the card shows. */
  readonly total: number
}

export const unlimited: Limits = { field: Number.POSITIVE_INFINITY, total: Number.POSITIVE_INFINITY }

export interface Card {
  readonly text: string
  /** Whether some of the payload is not on the card. */
  readonly cut: boolean
}

const gutter = (text: string) => Printable.escape(text, { multiline: true }).split("\n").map((line) => `│ ${line}`)

/**
 * Renders a view within the limits. A payload that cannot be rendered at all
 * (nested deeper than the stack allows) is said so, and reported as not shown
 * whatever the limits, so it cannot be approved here.
 */
export const render = (view: HumanConfirm.View, limits: Limits): Card => {
  const head = [
    "",
    `┌ ${view.grade.toUpperCase()}: ${Printable.escape(view.title)} (${Printable.name(view.tool)})`,
    ...gutter(view.description),
    ...(view.actor !== undefined ? [`│ acting: ${Printable.name(view.actor)}`] : [])
  ]
  let body: { readonly lines: ReadonlyArray<string>; readonly flags: ReadonlyArray<string>; readonly cut: boolean }
  try {
    const shown = Printable.display(view.payload, limits)
    body = {
      lines: Printable.lines(shown),
      cut: shown.cut,
      flags: [
        ...(shown.hidden.length > 0
          ? [`│ ⚠ the payload holds characters that hide or reorder text, shown as escapes: ${shown.hidden.join(" ")}`]
          : []),
        ...(shown.cut
          ? [
            `│ ⚠ this card shows ${shown.shown} of ${shown.total} characters of the payload; answer s to see all of it before approving`
          ]
          : [])
      ]
    }
  } catch {
    body = {
      lines: ["[not shown]"],
      cut: true,
      flags: ["│ ⚠ the payload is nested too deeply to be shown here, so it cannot be approved here: edit or reject it"]
    }
  }
  const text = [
    ...head,
    ...body.flags,
    "│ payload, exactly as it will go out:",
    ...body.lines.map((line) => `│   ${line}`),
    "└"
  ].join("\n") + "\n"
  return { text, cut: body.cut }
}
