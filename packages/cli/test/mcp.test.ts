// `graded mcp serve` in real processes (the built command): an SDK client
// spawns it (stdio) or connects to it (HTTP); the proposals its writes and
// sends record land in a SQLite file that `graded pending` and `graded
// decide`, run in the test's process (inProcess.ts), read and decide while
// the server still runs.
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import { Proposal } from "@graded/core"
import { Sql } from "@graded/sql"
import { describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"
import { initialize, listTools, post } from "../../mcp/test/fixtures/rawHttp.js"
import { graded as run, useEnv } from "./inProcess.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.resolve(here, "fixtures")
const main = built("packages/cli/src/main.ts")
// A server process loads the built module: plain node cannot import TypeScript.
const config = (module: string) => built(`packages/cli/test/fixtures/${module}`)

const setup = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "graded-mcp-cli-"))
  const files = {
    GRADED_TEST_DB: path.join(dir, "graded.db"),
    GRADED_TEST_DELIVERED: path.join(dir, "delivered.jsonl")
  }
  // The servers get them at start; fixtures/mcp.config.ts reads them here as each command runs, until the test ends.
  useEnv(files)
  const env: Record<string, string> = { ...process.env as Record<string, string>, ...files }
  const graded = (args: ReadonlyArray<string>, input = "", module = "mcp.config.ts") =>
    run(["-m", module, ...args], { cwd: fixtures, input })
  const delivered = (): Array<unknown> =>
    existsSync(env.GRADED_TEST_DELIVERED!)
      ? readFileSync(env.GRADED_TEST_DELIVERED!, "utf8").trim().split("\n").map((line) => JSON.parse(line))
      : []
  const stored = (id: string) =>
    Effect.runPromise(Proposal.get(id).pipe(Effect.provide(Sql.sqlite({ filename: env.GRADED_TEST_DB! }))))
  // An SDK client that spawns `graded mcp serve` as an MCP host would.
  const spawned = async (module = "mcp.config.ts", extra: ReadonlyArray<string> = []) => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [main, "-m", config(module), "mcp", "serve", ...extra],
      cwd: fixtures,
      env,
      stderr: "pipe"
    })
    let stderr = ""
    transport.stderr?.on("data", (chunk: Buffer) => void (stderr += chunk.toString()))
    const client = new Client({ name: "cli-test", version: "1.0.0" })
    await client.connect(transport)
    return { client, pid: transport.pid!, stderr: () => stderr }
  }
  return { env, graded, delivered, stored, spawned }
}

const exited = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      return resolve({ code: child.exitCode, signal: child.signalCode })
    }
    child.once("exit", (code, signal) => resolve({ code, signal }))
  })

const waitForExit = async (pid: number) => {
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0)
    } catch {
      return true
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}

type Structured = { readonly proposal: string; readonly requiresConfirm: boolean; readonly status: string }

// A server starts in under a second of CPU; on a busy machine it takes longer.
describe("graded mcp serve", { timeout: 240_000 }, () => {
  it("a client's write and send over stdio become proposals that graded pending lists and graded decide decides", async () => {
    const { delivered, graded, spawned, stored } = setup()
    const { client, pid, stderr } = await spawned()
    try {
      expect(client.getServerVersion()).toMatchObject({ name: "support-desk", version: "1.2.3" })
      const { tools } = await client.listTools()
      // The feature-gated read is not licensed in this session.
      expect(Object.fromEntries(tools.map((tool) => [tool.name, tool._meta?.["graded/grade"]]))).toEqual({
        kb__search: "read",
        ticket__submit: "write",
        chat__sendMessage: "send"
      })
      const read = await client.callTool({ name: "kb__search", arguments: { query: "VAT" } })
      expect(read.structuredContent).toEqual({ hits: ["How to fix: VAT"] })

      const write = (await client.callTool({ name: "ticket__submit", arguments: { subject: "VAT wrong" } }))
        .structuredContent as Structured
      expect(write).toMatchObject({ requiresConfirm: true, status: "pending" })
      const send = (await client.callTool({ name: "chat__sendMessage", arguments: { text: "Hello" } }))
        .structuredContent as Structured
      expect(send).toMatchObject({ requiresConfirm: true, status: "pending" })
      // Nothing ran on the client's word.
      expect(delivered()).toEqual([])

      // Another process, while the server still runs, on the same SQLite file.
      const pending = await graded(["pending", "--json"])
      expect(pending.code).toBe(0)
      const lines = pending.out.trim().split("\n").map((line) => JSON.parse(line))
      expect(lines).toEqual([
        expect.objectContaining({
          id: write.proposal,
          tool: "ticket.submit",
          grade: "write",
          status: "pending",
          payload: { subject: "VAT wrong" },
          actor: expect.stringMatching(/^mcp:cli:\S+$/)
        }),
        expect.objectContaining({
          id: send.proposal,
          tool: "chat.sendMessage",
          grade: "send",
          status: "pending",
          payload: { to: "customer:42", text: "Hello" }
        })
      ])

      const rejected = await graded(["decide", write.proposal, "reject", "--reason", "a duplicate"])
      expect(rejected.code).toBe(0)
      expect((await stored(write.proposal)).decision).toMatchObject({ reason: "a duplicate" })
      const approved = await graded(["decide", send.proposal, "approve"], "a\n")
      expect(approved.code).toBe(0)
      expect(approved.out).toContain(`"text": "Hello"`)
      // The approved send went out once; the rejected write never ran.
      expect(delivered()).toEqual([{ delivered: { to: "customer:42", text: "Hello" } }])
      expect((await stored(write.proposal)).status).toBe("rejected")
      expect((await graded(["pending", "--json"])).out.trim()).toBe("")
      expect(stderr()).toContain(`graded mcp serve: ${config("mcp.config.ts")} over stdio`)
    } finally {
      await client.close()
    }
    expect(await waitForExit(pid)).toBe(true)
  })

  it("over stdio, stdout carries only the protocol, and the end of input ends the server with exit code 0", async () => {
    const { env } = setup()
    const child = spawn(process.execPath, [main, "-m", config("mcp.config.ts"), "mcp", "serve"], { cwd: fixtures, env })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk: Buffer) => void (out += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => void (err += chunk.toString()))
    const messages = [
      {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
      },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "nope", arguments: {} } },
      { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "kb__search", arguments: { query: "x" } } }
    ]
    child.stdin.write(messages.map((message) => JSON.stringify(message)).join("\n") + "\n")
    // Every request answered, then end of input.
    const deadline = Date.now() + 60_000
    while (!out.includes(`"id":4`) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    child.stdin.end()
    expect(await exited(child)).toEqual({ code: 0, signal: null })
    const lines = out.trim().split("\n").map((line) => JSON.parse(line) as { jsonrpc: string; id: number })
    expect(lines.map((line) => [line.jsonrpc, line.id])).toEqual([["2.0", 1], ["2.0", 2], ["2.0", 3], ["2.0", 4]])
    expect(lines[2]).toMatchObject({ error: { message: expect.stringContaining("nope") } })
    expect(err).toContain("over stdio")
  })

  it("--http prints the endpoint on stderr, serves there, and SIGTERM or SIGINT closes it with exit code 0", async () => {
    const { env, graded } = setup()
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      const child = spawn(process.execPath, [main, "-m", config("mcp.config.ts"), "mcp", "serve", "--http", "0"], {
        cwd: fixtures,
        env
      })
      let out = ""
      let err = ""
      child.stdout.on("data", (chunk: Buffer) => void (out += chunk.toString()))
      child.stderr.on("data", (chunk: Buffer) => void (err += chunk.toString()))
      const deadline = Date.now() + 60_000
      while (!/http:\/\/\S+\/mcp/.test(err) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const url = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err)?.[1]
      expect(url).toBeDefined()
      const client = new Client({ name: "http-test", version: "1.0.0" })
      await client.connect(new StreamableHTTPClientTransport(new URL(url!)))
      const write = (await client.callTool({ name: "ticket__submit", arguments: { subject: signal } }))
        .structuredContent as Structured
      expect(write).toMatchObject({ requiresConfirm: true, status: "pending" })
      const pending = await graded(["pending", "--json"])
      expect(pending.out).toContain(`"id":"${write.proposal}"`)

      child.kill(signal)
      expect(await exited(child)).toEqual({ code: 0, signal: null })
      // Closed: nothing listens there any more.
      await expect(fetch(url!, { method: "POST" })).rejects.toBeInstanceOf(TypeError)
      expect(out).toBe("")
      await client.close().catch(() => undefined)
    }
  })

  it("--max-sessions caps the open sessions (503 beyond) and --idle-timeout closes one left idle (404 after)", async () => {
    const { env } = setup()
    const child = spawn(
      process.execPath,
      [
        main,
        "-m",
        config("mcp.config.ts"),
        "mcp",
        "serve",
        "--http",
        "0",
        "--max-sessions",
        "1",
        "--idle-timeout",
        "1 second"
      ],
      { cwd: fixtures, env }
    )
    let err = ""
    child.stderr.on("data", (chunk: Buffer) => void (err += chunk.toString()))
    try {
      const deadline = Date.now() + 60_000
      while (!/http:\/\/\S+\/mcp/.test(err) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const url = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err)?.[1]
      expect(url, err).toBeDefined()
      const first = await post(url!, initialize)
      expect(first.status).toBe(200)
      const session = first.headers.get("mcp-session-id")
      expect(session).toBeTruthy()
      // The one place is taken: a second client is turned away, told the limit and when to retry.
      const second = await post(url!, initialize)
      expect(second.status).toBe(503)
      expect(second.headers.get("retry-after")).toBe("1")
      expect(await second.text()).toContain("session limit (1 session)")
      // Left idle past a second, the first session is closed and its place freed.
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      expect((await post(url!, listTools, session!)).status).toBe(404)
      expect((await post(url!, initialize)).status).toBe(200)
    } finally {
      child.kill("SIGTERM")
      await exited(child)
    }
  })

  it("on a host other machines reach, a client's form is never asked: its write is proposed", async () => {
    const { env, graded } = setup()
    const child = spawn(
      process.execPath,
      [main, "-m", config("mcp.config.ts"), "mcp", "serve", "--http", "0", "--host", "0.0.0.0"],
      { cwd: fixtures, env }
    )
    let err = ""
    child.stderr.on("data", (chunk: Buffer) => void (err += chunk.toString()))
    const deadline = Date.now() + 60_000
    while (!/http:\/\/\S+\/mcp/.test(err) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const port = /http:\/\/0\.0\.0\.0:(\d+)\/mcp/.exec(err)?.[1]
    expect(port, err).toBeDefined()
    expect(err).toContain("no client's form is asked")
    // A client that would approve anything in its form, the attack: a stranger on the network.
    let forms = 0
    const client = new Client({ name: "stranger", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } } })
    client.setRequestHandler(ElicitRequestSchema, () => {
      forms++
      return { action: "accept", content: { "graded/decision": "approve" } }
    })
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)))
      const write = (await client.callTool({ name: "ticket__submit", arguments: { subject: "from afar" } }))
        .structuredContent as Structured
      expect(write).toMatchObject({ requiresConfirm: true, status: "pending" })
      expect(forms).toBe(0)
      const pending = await graded(["pending", "--json"])
      expect(pending.out).toContain(`"id":"${write.proposal}"`)
    } finally {
      await client.close().catch(() => undefined)
      child.kill("SIGTERM")
      await exited(child)
    }
  })

  it("a module's exported policy screens the session when its layer does not put it in force", async () => {
    const { spawned } = setup()
    const { client, pid, stderr } = await spawned("mcp-policy.config.ts")
    try {
      // The session is a support agent's: the policy admits the article search only.
      const { tools } = await client.listTools()
      expect(tools.map((tool) => tool.name)).toEqual(["kb__search"])
      const refused = await client.callTool({ name: "transfer__send", arguments: { to: "x", amount: 5 } })
      expect(refused.isError).toBe(true)
      expect(JSON.stringify(refused.content)).toContain("policy:")
      expect(stderr()).toContain("policy is in force")
    } finally {
      await client.close()
    }
    expect(await waitForExit(pid)).toBe(true)
  })

  it("--help shows mcp serve's options and examples; the list of commands names it", async () => {
    const { graded } = setup()
    const [help, unknown] = await Promise.all([graded(["mcp", "serve", "--help"]), graded(["frob"])])
    expect(help.code).toBe(0)
    // eslint-disable-next-line no-control-regex
    const text = help.out.replace(/\u001b\[[0-9;]*m/g, "")
    expect(text).toContain("--http integer")
    expect(text).toContain("--host string")
    expect(text).toContain("--max-sessions integer")
    expect(text).toContain("--idle-timeout string")
    expect(text).toContain("$ graded mcp serve --http 3000")
    expect(unknown.code).toBe(2)
    expect(unknown.err).toMatch(/^ {2}mcp +mcp serve: /m)
  })

  it("refuses what it cannot serve, in words: --host without --http, a bad port, no ProposalStore, a taken port", async () => {
    const { graded } = setup()
    const host = await graded(["mcp", "serve", "--host", "0.0.0.0"])
    expect(host.code).toBe(2)
    expect(host.err).toContain("--host is where --http listens")
    const port = await graded(["mcp", "serve", "--http", "70000"])
    expect(port.code).toBe(2)
    expect(port.err).toContain("--http takes a port from 0 to 65535")
    const [noHttp, zeroSessions, badTimeout, zeroTimeout] = await Promise.all([
      graded(["mcp", "serve", "--max-sessions", "5"]),
      graded(["mcp", "serve", "--http", "0", "--max-sessions", "0"]),
      graded(["mcp", "serve", "--http", "0", "--idle-timeout", "soon"]),
      graded(["mcp", "serve", "--http", "0", "--idle-timeout", "0 seconds"])
    ])
    expect(noHttp.code).toBe(2)
    expect(noHttp.err).toContain("--max-sessions and --idle-timeout bound --http's sessions")
    expect(zeroSessions.code).toBe(2)
    expect(zeroSessions.err).toContain("--max-sessions takes a positive whole number, not 0")
    expect(badTimeout.code).toBe(2)
    expect(badTimeout.err).toContain(
      `--idle-timeout takes a duration such as "30 minutes" or "90 seconds", or "never", not "soon"`
    )
    expect(zeroTimeout.code).toBe(2)
    expect(zeroTimeout.err).toContain(`not "0 seconds"`)
    const nostore = await graded(["mcp", "serve"], "", "mcp-nostore.config.ts")
    expect(nostore.code).toBe(2)
    expect(nostore.err).toContain("mcp-nostore.config.ts provides no ProposalStore")
    expect(nostore.out).toBe("")
    const badOptions = await graded(["mcp", "serve"], "", "mcp-bad.config.ts")
    expect(badOptions.code).toBe(1)
    expect(badOptions.err).toContain(`mcp-bad.config.ts: "mcp" .name must be a string`)
    expect(badOptions.out).toBe("")
    const badModule = await graded(["mcp", "serve"], "", "missing.config.ts")
    expect(badModule.code).toBe(1)
    expect(badModule.err).toContain("Cannot load missing.config.ts")
    expect(badModule.out).toBe("")

    // A port another server holds: a ListenError, said in a line, exit code 1.
    const { createServer } = await import("node:net")
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve))
    const taken = (holder.address() as { port: number }).port
    try {
      const busy = await graded(["mcp", "serve", "--http", String(taken)])
      expect(busy.code).toBe(1)
      expect(busy.err).toContain(`McpServe could not listen on 127.0.0.1:${taken}`)
      expect(busy.err).not.toMatch(/^\s+at /m)
    } finally {
      holder.close()
    }
  })
})
