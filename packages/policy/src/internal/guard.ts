// The policy as a core Guard: it screens each offer and admits each call.
import { Effect, Option } from "effect"
import type { Guard, Invocation, LanguageModel, Tool } from "@graded/core"
import { type Compiled, decide, evaluateAll, type Evaluation, type Left, textsIn } from "./policy.js"

/** Counts a fallback run against its quota and queues it for review; a verdict when refused. */
export type FallbackGate = (
  tool: Tool.Any,
  input: unknown
) => Effect.Effect<Guard.Verdict | undefined>

const verdict = (left: Left): Guard.Verdict => ({ gate: `policy:${left.kind}`, reason: left.reason })

const question = (text: string, conversation: ReadonlyArray<LanguageModel.Message>): Array<LanguageModel.Message> => [
  {
    role: "system",
    content: "You decide whether a condition holds in a conversation. Answer with exactly one word: yes or no."
  },
  {
    role: "user",
    // Only what the people said: a tool's result is data, not a voice that
    // can make a condition hold, and the model's own words may repeat one.
    content: `Condition: ${text}\n\nConversation:\n${
      conversation.flatMap((message) => message.role === "user" ? [`user: ${message.content}`] : []).join("\n")
    }`
  }
]

const maxScreenings = 64

// What a condition can read, and the model's answers, as one string.
const keyOf = (context: Invocation.Context, matched: ReadonlyMap<string, boolean>): string =>
  JSON.stringify([
    context.role,
    context.page,
    context.tenant,
    context.actor,
    context.autonomous,
    context.features,
    context.consents,
    context.facts,
    matched.size === 0 ? 0 : [...matched]
  ])

// Answers kept per trace so that the calls of a turn are judged as the offer
// was; the oldest traces go first.
const maxTraces = 1_000

export const make = (
  compiled: Compiled,
  model: Option.Option<LanguageModel.LanguageModel.Service>,
  fallbackGate: FallbackGate | undefined
): Guard.Guard => {
  const texts = textsIn(compiled)
  const answers = new Map<string, ReadonlyMap<string, boolean>>()
  const none: ReadonlyMap<string, boolean> = new Map()

  const ask = (conversation: ReadonlyArray<LanguageModel.Message>) =>
    Option.match(model, {
      // No model in scope: a text condition does not hold.
      onNone: () => Effect.succeed(none),
      onSome: (service) =>
        Effect.map(
          Effect.forEach(texts, (text) =>
            service.generate({ messages: question(text, conversation), tools: [] }).pipe(
              Effect.map((response) =>
                [text, response.text?.trim().toLowerCase().replace(/[.!]$/, "") === "yes"] as const
              ),
              // A model that fails or answers anything else matches nothing.
              Effect.orElseSucceed(() => [text, false] as const)
            )),
          (pairs) => new Map(pairs) as ReadonlyMap<string, boolean>
        )
    })

  const remember = (traceId: string | undefined, matched: ReadonlyMap<string, boolean>) => {
    if (traceId === undefined) return
    answers.delete(traceId)
    answers.set(traceId, matched)
    if (answers.size > maxTraces) answers.delete(answers.keys().next().value!)
  }

  // The evaluation is a function of what the conditions read and of the
  // model's answers: the last contexts' results are kept, so the turns of a
  // run (and runs of one role) do not evaluate the whole graph again.
  const screened = new Map<
    string,
    { readonly left: ReadonlyMap<string, Guard.Verdict>; readonly guidelines: Evaluation["active"] }
  >()
  const screenings = (context: Invocation.Context, matched: ReadonlyMap<string, boolean>) => {
    const key = keyOf(context, matched)
    let found = screened.get(key)
    if (found === undefined) {
      const evaluation = evaluateAll(compiled, context, matched)
      const left = new Map<string, Guard.Verdict>()
      for (const [name, why] of evaluation.left) left.set(name, verdict(why))
      found = { left, guidelines: evaluation.active }
      screened.set(key, found)
      if (screened.size > maxScreenings) screened.delete(screened.keys().next().value!)
    }
    return found
  }

  // Every tool of the policy's toolkit is judged; the registry reads the
  // verdicts of the tools its own gates passed.
  const screen: Guard.Guard["screen"] = ({ context, conversation }) =>
    Effect.map(
      texts.length > 0 && conversation !== undefined ? ask(conversation) : Effect.succeed(none),
      (matched) => {
        remember(context.traceId, matched)
        return screenings(context, matched)
      }
    )

  const admit: Guard.Guard["admit"] = ({ context, input, tool }) => {
    const matched = (context.traceId !== undefined ? answers.get(context.traceId) : undefined) ?? none
    const left = decide(compiled, tool, context as Invocation.Context, matched)
    if (left === undefined) return Effect.succeed(undefined)
    if (
      compiled.fallback !== undefined && compiled.fallback.tools.includes(tool.name) && left.kind !== "forbidden" &&
      evaluateAll(compiled, context, matched).fallback
    ) {
      // No store to count the quota in: the fallback does not run.
      return fallbackGate === undefined
        ? Effect.succeed({
          gate: "policy:fallback",
          reason: `${tool.name} may run only as a counted fallback, and no fallback store is in scope`
        })
        : fallbackGate(tool, input)
    }
    return Effect.succeed(verdict(left))
  }

  return { name: "policy", screen, admit }
}
