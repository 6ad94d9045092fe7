// How every browser test starts its Chromium (chromium.ts picks which ones).
import { chromium } from "playwright-core"
import type { Browser } from "./chromium.js"

/** Starts `chosen` headless, as every browser test does; `args` adds switches. */
export const launch = (chosen: Browser, args: ReadonlyArray<string> = []) =>
  chromium.launch({
    executablePath: chosen.executablePath,
    env: { ...process.env, ...chosen.env },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...args
    ]
  })
