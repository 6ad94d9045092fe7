// Every command the documentation shows works as written. The test extracts
// each ```sh block of README.md and docs/*.md and runs its lines in order, as
// a person would paste them (bash, from the top of the repository, a `cd`
// carrying over to the next line), and checks each line's exit code and a line
// of what it prints. A line that asks a person something runs in a
// pseudo-terminal, and the test types the answer.
//
// Every documented line must have an entry below, and every entry a line: a
// new command in the docs fails here until it says what it should do. The
// few that cannot run here say why, and show as skipped.
//
// The blocks share no files or ids (each works in a folder of its own or
// leaves nothing behind), so they run two at a time, as a reader with two
// terminals would; the lines of a block run in order. A block that installs
// (`pnpm install`) runs first and alone: every other block runs from what it
// installs.
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { killAll, spawn } from "../packages/cli/test/pty.js"

type Expectation =
  /** Runs; exits with `exit`; some line of its output contains `prints`. */
  | { readonly exit: number; readonly prints: string; readonly answers?: undefined }
  /** Runs; exits with `exit`; leaves the shell in `endsIn` (a `cd`). */
  | { readonly exit: number; readonly endsIn: string; readonly answers?: undefined }
  /** Asks a person: runs in a pseudo-terminal, `answers` typed once `asks` is on the screen. */
  | { readonly exit: number; readonly prints: string; readonly asks: string; readonly answers: ReadonlyArray<string> }
  /** Cannot run here, and why. */
  | { readonly notRun: string }

const expectations: Readonly<Record<string, Expectation>> = {
  // README.md
  "npx -y pnpm@12.4.2 install --frozen-lockfile && npx -y pnpm@12.4.2 demo   # set up, run the support-desk demo": {
    exit: 0,
    prints: "Messages that reached the customer: 1"
  },
  "npx -y pnpm@12.4.2 test                                                   # type-check (bench too), vitest, tsd type tests, docs check, lint":
    {
      notRun: "it is this suite; .ci/run runs it on a fresh clone"
    },
  // docs/cli.md
  "cd examples/support-desk": { exit: 0, endsIn: "examples/support-desk" },
  "pnpm graded list --autonomous": { exit: 0, prints: "kb.search             read   offered" },
  "pnpm graded invoke kb.search '{\"query\":\"VAT\"}'": { exit: 0, prints: "\"ok\": true" },
  "pnpm graded invoke chat.sendMessage '{\"text\":\"Hello\"}' --audit audit.jsonl": {
    exit: 0,
    prints: "\"sent\": true",
    asks: "Approve, edit or reject? [a/e/r]",
    answers: ["a"]
  },
  "pnpm graded plan quick-ticket --audit audit.jsonl": { exit: 0, prints: "\"id\": \"T-1200\"" },
  "pnpm graded schemas --autonomous": { exit: 0, prints: "\"name\": \"kb__search\"" },
  "pnpm graded audit audit.jsonl": { exit: 0, prints: "plan quick-ticket, step 7 (submit, write): completed" },
  // docs/cli.md, proposals
  "cd packages/cli/test/fixtures": { exit: 0, endsIn: "packages/cli/test/fixtures" },
  "node ../../bin/graded.mjs -m proposals.config.ts invoke chat.sendMessage.propose '{\"text\":\"Hello\"}'": {
    exit: 0,
    prints: "\"proposal\": \"p-1\""
  },
  "node ../../bin/graded.mjs -m proposals.config.ts invoke chat.sendMessage.propose '{\"text\":\"Helo\"}'": {
    exit: 0,
    prints: "\"proposal\": \"p-2\""
  },
  "node ../../bin/graded.mjs -m proposals.config.ts invoke chat.sendMessage.propose '{\"text\":\"Thanks, bye\"}'": {
    exit: 0,
    prints: "\"proposal\": \"p-3\""
  },
  "node ../../bin/graded.mjs -m proposals.config.ts pending": {
    exit: 0,
    prints: "payload: {\"to\":\"customer:42\",\"text\":\"Helo\"}"
  },
  "node ../../bin/graded.mjs -m proposals.config.ts decide p-1 approve": {
    exit: 0,
    prints: "p-1 delivered by cli:",
    asks: "Approve, edit or reject? [a/e/r]",
    answers: ["a"]
  },
  "node ../../bin/graded.mjs -m proposals.config.ts decide p-2 reject --reason \"a typo\"": {
    exit: 0,
    prints: "p-2 rejected by cli:"
  },
  "node ../../bin/graded.mjs -m proposals.config.ts decide p-1 reject --reason \"too late\"": {
    exit: 1,
    prints: "Proposal p-1 was already decided (delivered by cli:"
  },
  "node ../../bin/graded.mjs audit --sqlite graded.db": {
    exit: 0,
    prints: "DELIVERED chat.sendMessage, confirmed by cli:"
  },
  "node ../../bin/graded.mjs -m proposals.config.ts decide p-3 edit": {
    exit: 0,
    prints: "p-3 delivered by cli:",
    asks: "New payload as one line of JSON (empty to go back):",
    answers: ["{\"to\":\"customer:42\",\"text\":\"Thanks, goodbye\"}"]
  },
  "node ../../bin/graded.mjs -m proposals.config.ts decide p-3 done": {
    exit: 1,
    prints: "Proposal p-3 is delivered, not in doubt (decided by cli:"
  },
  // docs/policy.md
  "pnpm demo:credit": {
    exit: 0,
    prints: "What left the bank: 1 transfer(s), 1 SMS, 1 e-mail(s), 2 ticket(s), 1 credit bureau inquiry(ies)."
  },
  // docs/mcp.md
  "pnpm demo:mcp": { exit: 0, prints: "[agent:alice] DELIVERED ticket.submit, confirmed by agent:alice" },
  "cd examples/mcp": { exit: 0, endsIn: "examples/mcp" },
  "pnpm graded pending": { exit: 0, prints: "No proposal is pending." },
  // docs/cli.md, policies
  "node ../../bin/graded.mjs -m policy-flawed.config.ts manifest": {
    exit: 0,
    prints: "off (review: Q1 excess input)"
  },
  "node ../../bin/graded.mjs -m policy-flawed.config.ts manifest --json": {
    exit: 0,
    prints: "\"wire\": \"account__search\","
  },
  "node ../../bin/graded.mjs -m policy-flawed.config.ts review": {
    exit: 1,
    prints: "account.note: question 3 (side effect not audited)"
  },
  "node ../../bin/graded.mjs -m policy.config.ts manifest --check": {
    exit: 0,
    prints: "No findings: every tool passes the four questions."
  },
  "npm i @graded/core": {
    notRun: "it adds graded to your own Effect 4 app, from the npm registry, where it is not published yet; " +
      "test/pack.test.ts installs the packed tarballs the same way, with npm and with pnpm"
  },
  // docs/openai.md
  "pnpm add @graded/core @graded/openai openai effect": {
    notRun: "it adds the packages to your own project, from the npm registry, where they are not published yet"
  },
  "OPENAI_API_KEY=sk-... pnpm demo": { notRun: "it needs an OpenAI API key" },
  "OPENAI_API_KEY=unused OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 pnpm demo   # Ollama": {
    notRun: "it needs an Ollama server with llama3.1"
  }
}

// Files the documented commands leave behind; one that was there before is put back afterwards.
const leftBehind = [
  "examples/support-desk/audit.jsonl",
  ...["graded.db", "graded.db-wal", "graded.db-shm"].map((file) => `examples/mcp/${file}`),
  ...["graded.db", "graded.db-wal", "graded.db-shm", "delivered.jsonl"].map((file) =>
    `packages/cli/test/fixtures/${file}`
  )
]

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

interface Block {
  readonly file: string
  readonly line: number
  readonly commands: ReadonlyArray<string>
}

const blocks = (file: string): ReadonlyArray<Block> => {
  const lines = readFileSync(path.join(root, file), "utf8").split("\n")
  const found: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(sh|bash|shell|console)\s*$/.test(lines[i] ?? "")) continue
    const start = i
    const commands: Array<string> = []
    for (i++; i < lines.length && !(lines[i] ?? "").startsWith("```"); i++) {
      const line = lines[i] ?? ""
      if (line.trim() !== "" && !line.trimStart().startsWith("#")) commands.push(line)
    }
    found.push({ file, line: start + 1, commands })
  }
  return found
}

const documents = [
  "README.md",
  ...readdirSync(path.join(root, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`)
]
const documented = documents.flatMap(blocks)

// effect/cli and pnpm color what they print, even in a pipe.
// eslint-disable-next-line no-control-regex -- \u001b starts the ANSI escape codes it strips
const plain = (text: string) => text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "")

// Runs one line with bash in `cwd`; the directory it ends in comes back through a file, so a `cd` carries over.
const script = (command: string, where: string) => `${command}\nstatus=$?\npwd > '${where}'\nexit $status\n`

const scratch = mkdtempSync(path.join(tmpdir(), "graded-docs-"))
let runs = 0

const run = (command: string, cwd: string) =>
  new Promise<{ code: number | null; output: string; cwd: string }>((resolve) => {
    const where = path.join(scratch, `cwd-${++runs}`)
    const child = execFile(
      "bash",
      ["-c", script(command, where)],
      { cwd, encoding: "utf8", timeout: 300_000 },
      (error, stdout, stderr) => {
        resolve({
          code: error === null ? 0 : typeof error.code === "number" ? error.code : null,
          output: plain(`${stdout}\n${stderr}`),
          cwd: existsSync(where) ? readFileSync(where, "utf8").trim() : cwd
        })
      }
    )
    child.stdin?.end()
  })

const runAsked = async (command: string, cwd: string, asks: string, answers: ReadonlyArray<string>) => {
  const where = path.join(scratch, `cwd-${++runs}`)
  const session = spawn("bash", ["-c", script(command, where)], { cwd })
  for (const answer of answers) {
    await session.waitFor(asks, 240_000)
    session.type(answer)
  }
  // As execFile's timeout does for the other lines: a line that never ends fails, with its screen.
  const limit = setTimeout(() => session.kill(), 300_000)
  const { code, screen } = await session.exited
  clearTimeout(limit)
  return { code, output: plain(screen), cwd: existsSync(where) ? readFileSync(where, "utf8").trim() : cwd }
}

type Result = { readonly code: number | null; readonly output: string; readonly cwd: string }

/** Each documented line's result, to come: a line's test waits for it while the blocks run on. */
const results = new Map(documented.map((block) => [
  block,
  block.commands.map(() => {
    let settle: (result: Promise<Result>) => void = () => {}
    const result = new Promise<Result>((resolve) => (settle = resolve))
    result.catch(() => {}) // a line that throws fails its own test
    return { result, settle }
  })
]))

/** Runs a block's lines in order from the top of the clone, each from where the last one left the shell. */
const runBlock = async (block: Block) => {
  let cwd = root
  for (const [index, command] of block.commands.entries()) {
    const expected = expectations[command]
    if (expected === undefined || "notRun" in expected) continue
    const result = expected.answers === undefined
      ? run(command, cwd)
      : runAsked(command, cwd, expected.asks, expected.answers)
    results.get(block)![index]!.settle(result)
    cwd = await result.then((done) => done.cwd, () => cwd)
  }
}

const installs = (block: Block) => block.commands.some((command) => /\bpnpm(@\S+)? install\b/.test(command))

/** The blocks that install, alone; then the others, two at a time. Settles once every line has run. */
const runAll = async () => {
  for (const block of documented.filter(installs)) await runBlock(block)
  const queue = documented.filter((block) => !installs(block))
  const lane = async () => {
    for (let block = queue.shift(); block !== undefined; block = queue.shift()) await runBlock(block)
  }
  await Promise.all([lane(), lane()])
}
let running = Promise.resolve()

beforeAll(() => {
  for (const file of leftBehind) {
    const full = path.join(root, file)
    if (existsSync(full)) renameSync(full, `${full}.before-docs-test`)
  }
  running = runAll()
})

afterAll(async () => {
  await running
  killAll()
  for (const file of leftBehind) {
    const full = path.join(root, file)
    rmSync(full, { force: true })
    if (existsSync(`${full}.before-docs-test`)) renameSync(`${full}.before-docs-test`, full)
  }
  rmSync(scratch, { recursive: true, force: true })
}, 1_800_000)

describe("the documented commands", () => {
  it("are found: README.md and docs/cli.md show some", () => {
    expect(documented.some((block) => block.file === "README.md" && block.commands.length > 0)).toBe(true)
    expect(documented.some((block) => block.file === "docs/cli.md" && block.commands.length > 0)).toBe(true)
  })

  it("each has an expectation here, and each expectation is documented", () => {
    const lines = documented.flatMap((block) => block.commands)
    expect(lines.filter((line) => !(line in expectations)), "documented, with no expectation here").toEqual([])
    expect(Object.keys(expectations).filter((line) => !lines.includes(line)), "expected here, documented nowhere")
      .toEqual([])
  })
})

for (const block of documented) {
  // Each block starts where a reader starts: at the top of a clone.
  describe(`${block.file}, the block at line ${block.line}`, () => {
    for (const [index, command] of block.commands.entries()) {
      const expected = expectations[command]
      if (expected === undefined) continue
      if ("notRun" in expected) {
        it.skip(`${command.replace(/\s+/g, " ")} (not run: ${expected.notRun})`, () => {})
        continue
      }
      // The bound is the whole run's: a line waits for its block's turn, and each line has its own 300 s.
      it(command.replace(/\s+/g, " "), async () => {
        const result = await results.get(block)![index]!.result
        expect(result.code, result.output).toBe(expected.exit)
        if ("endsIn" in expected) expect(result.cwd).toBe(path.join(root, expected.endsIn))
        else expect(result.output.split("\n").some((line) => line.includes(expected.prints)), result.output).toBe(true)
      }, 1_800_000)
    }
  })
}
