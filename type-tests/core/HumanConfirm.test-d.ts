import { Effect, type Layer, Schema } from "effect"
import { expectError, expectType } from "tsd"
import {
  HumanConfirm,
  type Invocation,
  type NeedsHumanConfirm,
  type SendCapability,
  Tool,
  type WriteCapability
} from "@graded/core"
import { KbSearch, SendReply, SubmitTicket, support } from "./fixtures.js"

const ui = HumanConfirm.scripted([])

// Rejected: a send tool. A send always asks a human; the message names the tool.

// error: HumanConfirm.autoApprove takes one write tool: chat.sendMessage is a send tool, and a send always asks a human
expectError(HumanConfirm.autoApprove("replies", SendReply, () => true))

// Rejected: a read tool, which asks no one.

// error: HumanConfirm.autoApprove takes one write tool: kb.search is a read tool, and a read asks no one
expectError(HumanConfirm.autoApprove("searches", KbSearch, () => true))

// Rejected: a tool typed by its grades, write or send: it may be the send.
declare const writeOrSend: typeof SubmitTicket | typeof SendReply

// error: HumanConfirm.autoApprove takes one write tool: chat.sendMessage is a send tool, and a send always asks a human
expectError(HumanConfirm.autoApprove("either", writeOrSend, () => true))

// Rejected: a tool whose grade the compiler does not know.
declare const anyTool: Tool.Any

// error: HumanConfirm.autoApprove takes one write tool: a tool typed as Tool.Any (its name and grade unknown to the compiler) is a
expectError(HumanConfirm.autoApprove("any", anyTool, () => true))

// Rejected: a tool found by name (toolkit.get), which may be undefined and is
// typed as any tool of the toolkit. graded's message leads the diagnostic.

// error: ^HumanConfirm.autoApprove takes one write tool: this one may be undefined (toolkit.get finds a tool by name
expectError(HumanConfirm.autoApprove("by-name", support.get("ticket.submit"), () => true))

// The send's message leads too, not "No overload matches this call".

// error: ^is not assignable to parameter of type '"HumanConfirm.autoApprove takes one write tool: chat.sendMessage is a send tool
expectError(HumanConfirm.autoApprove("replies-again", SendReply, () => true))

// A tool of type never (two tools merged) fits any parameter, so the compiler
// cannot refuse it here; autoApprove throws InvalidRule for it (autoApprove.test.ts).

// Accepted: a write tool; the predicate's input is that tool's decoded input,
// its context the invocation context.
const Escalate = Tool.write("ticket.escalate", {
  title: "Escalate",
  description: "Escalate a ticket.",
  input: Schema.Struct({ ticket: Schema.String, priority: Schema.Literals(["low", "high"]) }),
  output: Schema.Struct({ ok: Schema.Boolean }),
  run: () => Effect.succeed({ ok: true })
})
const low = HumanConfirm.autoApprove("low-priority", Escalate, (input, context) => {
  expectType<{ readonly ticket: string; readonly priority: "low" | "high" }>(input)
  expectType<Invocation.Context>(context)
  return input.priority === "low" && context.role === "support"
})
expectType<HumanConfirm.AutoApprove>(low)
const short = HumanConfirm.autoApprove("short-subjects", SubmitTicket, (input) => input.subject.length < 20)

// The predicate is checked against that input: a field the tool does not have.

// error: Property 'urgency' does not exist
expectError(HumanConfirm.autoApprove("urgent", Escalate, (input) => input.urgency === "low"))

// A predicate answers a boolean, not an Effect or a Promise.

// error: is not assignable to type 'boolean'
expectError(HumanConfirm.autoApprove("later", Escalate, () => Effect.succeed(true)))

// The layer takes rules and provides the same capabilities as before, and
// the human every write and send waits for.
expectType<Layer.Layer<WriteCapability | SendCapability | NeedsHumanConfirm<string>>>(
  HumanConfirm.layer(ui, { autoApprove: [low, short] })
)
expectType<Layer.Layer<WriteCapability | SendCapability | NeedsHumanConfirm<string>>>(HumanConfirm.layer(ui))

// Only rules: a plain predicate or a tool is not one.

// error: is not assignable to type 'AutoApprove'
expectError(HumanConfirm.layer(ui, { autoApprove: [() => true] }))

// The message type is the same text as the run-time message.
expectType<HumanConfirm.AutoApproveViolation<"x", "send">>(HumanConfirm.autoApproveViolation("x", "send"))

// Code generic in its write tool (a guideline that builds a rule) calls it as is.
export const ruleFor = <T extends HumanConfirm.WriteTool>(
  id: string,
  tool: T,
  when: (input: Tool.Input<T>) => boolean
): HumanConfirm.AutoApprove => HumanConfirm.autoApprove(id, tool, (input) => when(input))
