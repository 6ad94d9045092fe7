// The desk of killRandom.test.ts: a read, a write and a send whose write and
// send go to an "outside ledger", a file each delivery appends one JSON line
// to and fsyncs before the tool returns, so a line is there even if the
// process is killed the next instant. Each line names the delivery's
// idempotency key, the run and the model's call it belongs to (the model puts
// both into its arguments), the exact payload that went out and the process.
// The ledger honours no key on purpose: a delivery made twice shows as two
// lines, which the test counts.
//
// The tools take a little time, as outside systems do, at the points where a
// kill matters most: a send's `prepare` looks something up (between a turn's
// first proposal being stored and its run being saved), and the outside
// system acknowledges a delivery a moment after it acted (between the line
// and the proposal being settled).
//
// The journal beside it is the deciders': what a human approved (or rejected,
// or retried), written and fsynced before `Proposal.approve` is called.
import { Effect, Schema } from "effect"
import { Tool, Toolkit } from "@graded/core"
import * as fs from "node:fs"

/** One delivery, as the outside system saw it. */
export interface Delivery {
  readonly idempotencyKey: string
  readonly runId: string
  readonly callId: string
  readonly tool: string
  readonly payload: unknown
  readonly pid: number
}

/** What a decider decided, before it asked graded to carry it out. */
export interface Decision {
  readonly by: string
  readonly pid: number
  readonly proposal: string
  readonly runId: string | undefined
  readonly callId: string | undefined
  readonly tool: string
  readonly mode: "approve" | "edit" | "reject" | "retry"
  /** What the human approved (the stored payload, or their edit); none for a rejection or a retry. */
  readonly payload?: unknown
}

/** Appends one JSON line and fsyncs it: one `write` on an `O_APPEND` file, so lines of two processes do not mix. */
export const appendLine = (file: string, value: unknown): void => {
  const fd = fs.openSync(file, "a")
  try {
    fs.writeSync(fd, `${JSON.stringify(value)}\n`)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** A file's JSON lines, and any line that does not parse (a process killed inside its write). */
export const readLines = <A>(
  file: string
): { readonly lines: ReadonlyArray<A>; readonly torn: ReadonlyArray<string> } => {
  const lines: Array<A> = []
  const torn: Array<string> = []
  const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
  for (const line of text.split("\n")) {
    if (line === "") continue
    try {
      lines.push(JSON.parse(line) as A)
    } catch {
      torn.push(line)
    }
  }
  return { lines, torn }
}

const pause = (maxMillis: number) => Effect.sleep(Math.floor(Math.random() * maxMillis))

export const makeLedgerDesk = (ledger: string) => {
  const deliver = (
    tool: string,
    idempotencyKey: string,
    payload: { readonly runId: string; readonly callId: string }
  ) =>
    Effect.sync(() =>
      appendLine(
        ledger,
        {
          idempotencyKey,
          runId: payload.runId,
          callId: payload.callId,
          tool,
          payload,
          pid: process.pid
        } satisfies Delivery
      )
    ).pipe(Effect.andThen(pause(200)))
  const Read = Tool.read("ledger.read", {
    title: "Read an account",
    description: "Read the account a run settles.",
    input: Schema.Struct({ runId: Schema.String, callId: Schema.String }),
    output: Schema.Struct({ account: Schema.String, balance: Schema.Number }),
    run: ({ runId }) => Effect.as(pause(30), { account: `acct-${runId}`, balance: 100 })
  })
  const Write = Tool.write("ledger.write", {
    title: "Book an entry",
    description: "Book an entry on the account.",
    input: Schema.Struct({
      runId: Schema.String,
      callId: Schema.String,
      note: Schema.Trimmed.check(Schema.isNonEmpty())
    }),
    output: Schema.Struct({ booked: Schema.Boolean }),
    run: (input, { idempotencyKey }) => Effect.as(deliver("ledger.write", idempotencyKey, input), { booked: true })
  })
  const Send = Tool.send("ledger.send", {
    title: "Tell the customer",
    description: "Send the customer a message about the account.",
    input: Schema.Struct({
      runId: Schema.String,
      callId: Schema.String,
      text: Schema.Trimmed.check(Schema.isNonEmpty())
    }),
    payload: Schema.Struct({
      runId: Schema.String,
      callId: Schema.String,
      to: Schema.String,
      text: Schema.Trimmed.check(Schema.isNonEmpty())
    }),
    output: Schema.Struct({ sent: Schema.Boolean }),
    prepare: ({ callId, runId, text }) => Effect.as(pause(150), { runId, callId, to: `customer-of-${runId}`, text }),
    deliver: (confirmed) =>
      Effect.as(deliver("ledger.send", confirmed.idempotencyKey, confirmed.payload), { sent: true })
  })
  return Toolkit.make(Read, Write, Send)
}
