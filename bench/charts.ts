// Bar charts for docs/PERFORMANCE.md, as SVG files `pnpm bench` writes next
// to the page's other images: where a picture reads faster than a table (a
// row of a dozen paths, each a few microseconds). Each chart is made from the
// same figures the section's table prints, so the two cannot disagree. Text
// is escaped for XML: row names are ours, but a chart is a document.
import { writeFileSync } from "node:fs"

export interface Bar {
  readonly label: string
  readonly value: number
  /** Drawn in graded's colour rather than the peers' grey. */
  readonly ours?: boolean | undefined
}

const xml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** A horizontal bar chart: one bar a row, its value printed at its end in `unit`. */
export const barChart = (
  options: {
    readonly title: string
    readonly unit: string
    readonly bars: ReadonlyArray<Bar>
    readonly digits?: number
  }
): string => {
  const labelWidth = 340
  const barWidth = 360
  const row = 26
  const top = 40
  const width = labelWidth + barWidth + 100
  const height = top + row * options.bars.length + 16
  const max = Math.max(...options.bars.map((bar) => bar.value), Number.MIN_VALUE)
  const digits = options.digits ?? 2
  const rows = options.bars.map((bar, i) => {
    const y = top + i * row
    const length = Math.max(1, Math.round((bar.value / max) * barWidth))
    return [
      `<text x="${labelWidth - 8}" y="${y + 16}" text-anchor="end">${xml(bar.label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 4}" width="${length}" height="16" rx="2" fill="${
        bar.ours === true ? "#166534" : "#a1a1aa"
      }"/>`,
      `<text x="${labelWidth + length + 6}" y="${y + 16}">${bar.value.toFixed(digits)} ${xml(options.unit)}</text>`
    ].join("")
  })
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="13" fill="#18181b">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="12" y="24" font-size="15" font-weight="700">${xml(options.title)}</text>
${rows.join("\n")}
</svg>
`
}

/** Writes a chart to `file`. */
export const writeChart = (file: string, options: Parameters<typeof barChart>[0]): void =>
  writeFileSync(file, barChart(options))
