// Every code point that Chromium draws as nothing between two letters is one
// that Printable flags (and so every surface shows as an escape). The test
// draws the whole Unicode range rather than trusting a list: first every code
// point of a plane in runs (one canvas measurement a run, its clusters giving
// each character's advance), then each one with no advance alone between two
// letters, keeping those that add no width and no ink.
import { describe, expect, inject, it } from "vitest"
import { Printable } from "@graded/core"
import type * as Chromium from "./chromium.js"
import { launch } from "./launch.js"

const browsers: ReadonlyArray<Chromium.Browser> = inject("browsers")

// Planes 4 to 13 hold no character and none kept as default-ignorable, and
// planes 15 and 16 are private use: a browser draws the missing-glyph box for
// them (checked below), so the drawing covers planes 0 to 3 and 14.
const drawn = [[0x0000, 0x3ffff], [0xe0000, 0xeffff]] as const
const undrawn = [[0x40000, 0xdffff], [0xf0000, 0x10ffff]] as const

// The card shows these as they are: a line break as a line, a tab as a tab.
const shownAsLayout = new Set(["\t", "\n", "\r"])

describe("characters drawn as nothing", () => {
  it("no code point left out of the drawing is assigned or default-ignorable", () => {
    const drawable = /[^\p{Cn}\p{Co}]|\p{Default_Ignorable_Code_Point}/u
    const found: Array<string> = []
    for (const [first, last] of undrawn) {
      for (let code = first; code <= last; code++) {
        if (drawable.test(String.fromCodePoint(code))) found.push(code.toString(16))
      }
    }
    expect(found).toEqual([])
  })

  for (const chosen of browsers) {
    it(`each one Chromium draws as nothing is flagged by Printable.hidden, in ${chosen.name}`, async () => {
      // getTextClusters, the advance of each character of a run, is behind this switch.
      const browser = await launch(chosen, ["--enable-experimental-web-platform-features"])
      try {
        const page = await browser.newPage()
        const blank = await page.evaluate((planes) => {
          // In the browser; this file's types have no DOM.
          const { document } = globalThis as unknown as { document: any }
          const canvas = document.createElement("canvas")
          canvas.width = 240
          canvas.height = 80
          const context = canvas.getContext("2d", { willReadFrequently: true })
          context.font = "32px monospace"
          context.textBaseline = "middle"
          // In runs: a character with no advance of its own is a candidate.
          const candidates: Array<number> = []
          for (const [first, last] of planes) {
            for (let from = first; from <= last; from += 4096) {
              const codes: Array<number> = []
              for (let code = from; code < from + 4096 && code <= last; code++) {
                if (code < 0xd800 || code > 0xdfff) codes.push(code)
              }
              if (codes.length === 0) continue
              const text = String.fromCodePoint(...codes)
              const metrics = context.measureText(text)
              // A character in no cluster is drawn as nothing: it stands where the next one does.
              const x = new Float64Array(text.length + 1).fill(Number.NaN)
              for (const cluster of metrics.getTextClusters()) {
                for (let i = cluster.start; i < cluster.end; i++) x[i] = cluster.x
              }
              x[text.length] = metrics.width
              for (let i = text.length - 1; i >= 0; i--) if (Number.isNaN(x[i])) x[i] = x[i + 1]!
              let offset = 0
              for (const code of codes) {
                const units = code > 0xffff ? 2 : 1
                if (x[offset + units] === x[offset]) candidates.push(code)
                offset += units
              }
            }
          }
          // Alone between two letters: no added width, and not one pixel changed.
          const draw = (text: string) => {
            context.clearRect(0, 0, canvas.width, canvas.height)
            context.fillText(text, 20, 40)
            return context.getImageData(0, 0, canvas.width, canvas.height).data
          }
          const width = context.measureText("ab").width
          const letters = draw("ab")
          return candidates.filter((code) => {
            const text = `a${String.fromCodePoint(code)}b`
            if (Math.abs(context.measureText(text).width - width) > 0.01) return false
            const pixels = draw(text)
            for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== letters[i]) return false
            return true
          })
        }, drawn)
        const unflagged = blank
          .map((code) => String.fromCodePoint(code))
          .filter((char) => !shownAsLayout.has(char) && Printable.hidden(char).length === 0)
          .map((char) => `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`)
        // The drawing finds them: the combining grapheme joiner, a Khmer vowel, a tag at least.
        expect(blank).toEqual(expect.arrayContaining([0x034f, 0x17b4, 0xe0041]))
        expect(unflagged).toEqual([])
      } finally {
        await browser.close()
      }
    }, 120_000)
  }
})
