// The terminal card: what a person reads before deciding. Imported by
// TerminalConfirm only. It guards three things, in this order:
// - nothing on the card (the payload, its keys, a name, the actor) can move the
//   cursor, erase a line or reorder text: everything goes through core's
//   Printable, and characters that hide or reorder text also flag the card;
// - a text's line breaks show as lines, each behind a gutter (`┆`) the payload
//   cannot draw, and every row is cut at the terminal's width (continued
//   behind `↳`), so neither a line break nor the terminal's own wrapping lets
//   a payload fake a field, the card's border or its question;
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

// Card rows behind the card's border: each cut at the terminal's width, so a
// long title, name or payload line cannot wrap onto the left edge and draw
// the border, a field or the question there.
const framed = (border: string, rows: ReadonlyArray<string>) => rows.map((row) => `${border}${row}`)
const inside = (text: string, width: number) => framed("│ ", Printable.rows(text, width - 2))

/**
 * Renders a view within the limits, `width` columns wide. A payload that
 * cannot be rendered at all (nested deeper than the stack allows) is said so,
 * and reported as not shown whatever the limits, so it cannot be approved here.
 */
export const render = (view: HumanConfirm.View, limits: Limits, width: number): Card => {
  const head = [
    "",
    ...Printable.rows(
      `┌ ${view.grade.toUpperCase()}: ${Printable.escape(view.title)} (${Printable.name(view.tool)})`,
      width
    ),
    ...inside(view.description, width),
    ...(view.actor !== undefined ? inside(`acting: ${Printable.name(view.actor)}`, width) : []),
    // Asked inside a sub-agent: the path from the run's own call to this tool.
    ...(view.path !== undefined && view.path.length > 0
      ? inside(`asked by: ${[...view.path, view.tool].map(Printable.name).join(" → ")}`, width)
      : [])
  ]
  let body: { readonly lines: ReadonlyArray<string>; readonly flags: ReadonlyArray<string>; readonly cut: boolean }
  try {
    const shown = Printable.display(view.payload, limits)
    body = {
      lines: Printable.lines(shown, { width: width - 4 }),
      cut: shown.cut,
      flags: [
        ...(shown.hidden.length > 0
          ? inside(
            `⚠ the payload holds characters that hide or reorder text, shown as escapes: ${shown.hidden.join(" ")}`,
            width
          )
          : []),
        ...(shown.cut
          ? inside(
            `⚠ this card shows ${shown.shown} of ${shown.total} characters of the payload; answer s to see all of it before approving`,
            width
          )
          : [])
      ]
    }
  } catch {
    body = {
      lines: ["[not shown]"],
      cut: true,
      flags: inside(
        "⚠ the payload is nested too deeply to be shown here, so it cannot be approved here: edit or reject it",
        width
      )
    }
  }
  const text = [
    ...head,
    ...body.flags,
    "│ payload, exactly as it will go out:",
    ...framed("│   ", body.lines),
    "└"
  ].join("\n") + "\n"
  return { text, cut: body.cut }
}
