// The tree of agents one run makes: the root loop and the sub-agents its
// tools run (Agent.tool), to any depth. What is shared over the tree (its
// budget, counted here) and what places an agent in it (its path, stamped on
// every audit entry) live in references only graded's code sets. A tool's
// code that finds them can spend the budget (stopping itself) or add a mark
// (making the run stricter); it can never give back what was spent or take a
// mark away: the values are frozen and their counters are closed over.
import { Context } from "effect"
import type * as Tool from "../Tool.js"
import { sealed } from "./seal.js"

/** A limit that stopped an agent: its own (rounds, calls per round) or the tree's. */
export type Limit = "round-limit" | "call-limit" | "budget-rounds" | "budget-calls"

/** One agent stopped by one limit; `agent` is its path from the root (empty for the root itself). */
export interface Stop {
  readonly agent: ReadonlyArray<string>
  readonly limit: Limit
}

/** The budget over every agent of the tree: model turns and tool calls, in all. */
export interface Budget {
  readonly rounds?: number | undefined
  readonly calls?: number | undefined
}

export interface Tree {
  readonly budget: Budget
  /** Counts one model turn; true when it is the last the tree may take (its calls are refused). */
  readonly turn: () => boolean
  /** Counts one tool call; false when the tree's calls are spent (the call is refused). */
  readonly call: () => boolean
}

export const makeTree = (budget: Budget): Tree => {
  let turns = 0
  let calls = 0
  const frozen = Object.freeze({ ...budget })
  return Object.freeze({
    budget: frozen,
    turn: () => {
      turns++
      return frozen.rounds !== undefined && turns >= frozen.rounds
    },
    call: () => {
      calls++
      return frozen.calls === undefined || calls <= frozen.calls
    }
  })
}

export const treeRef: Context.Reference<Tree | undefined> = sealed(
  Context.Reference<Tree | undefined>("@graded/core/Agent/tree", { defaultValue: () => undefined })
)

/** The path of the agent running here: the sub-agents' names from the root's tool down. */
export const pathRef: Context.Reference<ReadonlyArray<string>> = sealed(
  Context.Reference<ReadonlyArray<string>>("@graded/core/Agent/path", { defaultValue: () => Object.freeze([]) })
)

/**
 * What a sub-agent's run brings back into the run that called it, beside its
 * answer: the untrusted tools its model read (the caller's run is marked too:
 * the answer may carry what they said) and the limits that stopped agents
 * below. Set by the calling loop around each call; add-only.
 */
export interface Report {
  readonly add: (untrusted: ReadonlyArray<string>, stops: ReadonlyArray<Stop>) => void
}

export const reportRef: Context.Reference<Report | undefined> = sealed(
  Context.Reference<Report | undefined>("@graded/core/Agent/report", { defaultValue: () => undefined })
)

/** How a path reads in an audit entry and a message: `billing → refund.issue`. */
export const pathText = (path: ReadonlyArray<string>): string => path.join(" → ")

/** What Agent.tool made a sub-agent with: everything its inner run needs. */
export interface Spec {
  readonly toolkit: { readonly tools: ReadonlyArray<Tool.Any> }
  readonly instructions: string
  readonly output?: unknown
  readonly prompt?: ((input: any) => string) | undefined
  readonly maxRounds?: number | undefined
  readonly maxCallsPerRound?: number | undefined
  readonly model?: unknown
}

// The spec of each sub-agent graded made, by its tool: a field on a tool says
// what it claims, this says what Agent.tool made.
const specs = new WeakMap<object, Spec>()

export const registerInner = (tool: object, spec: Spec): void => {
  specs.set(tool, Object.freeze({ ...spec }))
}

/** The spec of a sub-agent made by Agent.tool; undefined for any other tool. */
export const innerOf = (tool: object): Spec | undefined => specs.get(tool)

/**
 * The tool a proposal made at `path` names: each step a sub-agent graded made
 * (innerOf, not a field a tool claims), its toolkit the next level. Names may
 * repeat between levels: only the path says which tool is meant.
 */
export const toolAt = (
  toolkit: { readonly tools: ReadonlyArray<Tool.Any> },
  path: ReadonlyArray<string> | undefined,
  name: string
): Tool.Any | undefined => {
  let level = toolkit
  for (const step of path ?? []) {
    const holder = level.tools.find((tool) => tool.name === step)
    const spec = holder === undefined ? undefined : innerOf(holder)
    if (spec === undefined) return undefined
    level = spec.toolkit
  }
  return level.tools.find((tool) => tool.name === name)
}
