// A person at a terminal, for tests. It runs a command in a real
// pseudo-terminal (@lydell/node-pty, prebuilt: nothing to install but the npm
// package), draws what the command prints on a screen (@xterm/headless, the
// emulator behind VS Code's terminal), and types keys. What a test reads is
// what a person would see, with cursor moves, line clears and wrapping applied.
import * as pty from "@lydell/node-pty"
import xterm from "@xterm/headless"

export interface Options {
  readonly cwd: string
  readonly cols?: number
  readonly rows?: number
  readonly env?: Record<string, string>
}

export interface Session {
  /** The screen and its scrollback, wrapped lines joined, trailing blank lines dropped. */
  readonly screen: () => string
  /** The screen and its scrollback row by row, as a person sees it: a line the terminal wrapped is several rows. */
  readonly rows: () => ReadonlyArray<string>
  /** Waits until `text` is on the screen; fails with the screen if the command ends first or time runs out. */
  readonly waitFor: (text: string, timeout?: number) => Promise<string>
  /** Types `text`, then Enter. */
  readonly type: (text: string) => void
  /** Sends `data` as it is (a control key such as Ctrl-D, "\u0004"). */
  readonly write: (data: string) => void
  /** Resolves once the command has ended and all it printed is on the screen. */
  readonly exited: Promise<{ readonly code: number; readonly screen: string }>
  readonly kill: () => void
}

const live = new Set<Session>()

/** Ends every command still running (for `afterAll`). */
export const killAll = () => {
  for (const session of live) session.kill()
}

export const spawn = (file: string, args: ReadonlyArray<string>, options: Options): Session => {
  const cols = options.cols ?? 200
  const rows = options.rows ?? 60
  const terminal = new xterm.Terminal({ cols, rows, scrollback: 5_000, allowProposedApi: true })
  const child = pty.spawn(file, [...args], {
    name: "xterm-256color",
    cols,
    rows,
    cwd: options.cwd,
    env: { ...process.env, TERM: "xterm-256color", ...options.env } as Record<string, string>
  })
  // xterm parses asynchronously; `drawn` settles once everything written so far is on the screen.
  let drawn = Promise.resolve()
  child.onData((data) => {
    drawn = new Promise((resolve) => terminal.write(data, resolve))
  })
  let ended = false
  const exited = new Promise<{ code: number; screen: string }>((resolve) => {
    child.onExit(({ exitCode }) => {
      ended = true
      live.delete(session)
      void drawn.then(() => resolve({ code: exitCode, screen: screen() }))
    })
  })

  const read = (joinWrapped: boolean) => {
    const buffer = terminal.buffer.active
    const lines: Array<string> = []
    for (let y = 0; y < buffer.length; y++) {
      const line = buffer.getLine(y)
      if (line === undefined) continue
      const text = line.translateToString(true)
      if (joinWrapped && line.isWrapped && lines.length > 0) lines[lines.length - 1] += text
      else lines.push(text)
    }
    while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop()
    return lines
  }
  const screen = () => read(true).join("\n")

  const waitFor = async (text: string, timeout = 60_000) => {
    const deadline = Date.now() + timeout
    for (;;) {
      await drawn
      const now = screen()
      if (now.includes(text)) return now
      if (ended) {
        await drawn
        const last = screen()
        if (last.includes(text)) return last
        throw new Error(`"${text}" never appeared; the command ended. The screen:\n${last}`)
      }
      if (Date.now() > deadline) throw new Error(`"${text}" never appeared in ${timeout} ms. The screen:\n${now}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  const session: Session = {
    screen,
    rows: () => read(false),
    waitFor,
    type: (text) => child.write(`${text}\r`),
    write: (data) => child.write(data),
    exited,
    kill: () => {
      if (!ended) child.kill()
    }
  }
  live.add(session)
  return session
}
