// Policy, side by side in one run: `Check.run` (conflict detection) over a
// generated policy of 1,000 guidelines and 1,000 tools, with a known number
// of findings planted (the run fails if they are not found); and each turn's
// candidate set over the same tools: the registry's own gates
// (`registry.list`, `registry.candidates` without a guard) against
// `Policy.evaluate` and `registry.candidates` with the policy's guard in force
// (the run fails unless the policy offers what it should).
//
// graded runs from its TypeScript sources through tsx here when this runs
// alone, its core from the build under `pnpm bench` (see run.ts); the figures
// are milliseconds, where tsx's wrappers do not show.
//
// `pnpm --dir bench bench:policy` runs this alone and rewrites its section of
// docs/PERFORMANCE.md; `pnpm bench` runs it with the rest.
import { Guard, Registry, Tool, Toolkit } from "@graded/core"
import { Check, Condition, Guideline, Policy } from "@graded/policy"
import { Effect, Schema } from "effect"
import * as os from "node:os"
import { loadedFrom } from "./loaded.js"

const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!
// A young-generation collection before each sample: a full one would also
// throw away compiled code (see the Runtime section), and the sample would
// partly measure the JIT.
const gc = (globalThis as { gc?: (options?: { readonly type: "minor" | "major" }) => void }).gc
const load = () => os.loadavg().map((x) => x.toFixed(1)).join(", ")

/**
 * 1,000 guidelines over 1,000 tools and 10 roles: 900 authorize one tool each
 * for a role; 50 forbid, on a consent, a tool the same role is authorized
 * (conflicts); 25 forbid a tool for another role (no conflict); 10 repeat an
 * authorization with one more condition (near-duplicates); 10 authorize a
 * tool already authorized, for another role; 5 name a role nobody has
 * (unreachable).
 */
export const generatePolicy = () => {
  const roles = Array.from({ length: 10 }, (_, i) => `r${i}`)
  const tools = Array.from({ length: 1000 }, (_, i) => `desk.t${i}`)
  const make = (id: string, options: Omit<Guideline.Options<string, boolean>, "description">) =>
    Guideline.make(id, { description: `Guideline ${id}.`, ...options })
  const guidelines: Array<Guideline.Any> = []
  for (let i = 0; i < 900; i++) {
    guidelines.push(make(`g${i}`, { when: Condition.role(roles[i % 10]!), tools: [tools[i]!] }))
  }
  for (let j = 0; j < 50; j++) {
    guidelines.push(make(`f${j}`, {
      when: Condition.and(Condition.role(roles[j % 10]!), Condition.has("consents", `c${j}`)),
      forbids: [tools[j * 10 + j % 10]!]
    }))
  }
  for (let j = 0; j < 25; j++) {
    guidelines.push(
      make(`x${j}`, { when: Condition.role(roles[(j + 1) % 10]!), forbids: [tools[500 + j * 10 + j % 10]!] })
    )
  }
  for (let k = 1; k <= 10; k++) {
    guidelines.push(make(`d${k}`, {
      when: Condition.and(Condition.role(roles[k % 10]!), Condition.has("features", "beta")),
      tools: [tools[k]!]
    }))
  }
  for (let j = 0; j < 10; j++) {
    guidelines.push(make(`o${j}`, { when: Condition.role(roles[(j + 1) % 10]!), tools: [tools[100 + j]!] }))
  }
  for (let j = 0; j < 5; j++) guidelines.push(make(`u${j}`, { when: Condition.role("ceo"), tools: [tools[900 + j]!] }))
  const declared = { roles, consents: Array.from({ length: 50 }, (_, j) => `c${j}`), features: ["beta"] }
  return { tools, guidelines, declared, expected: { conflict: 50, "near-duplicate": 10, unreachable: 5 } }
}

/**
 * The same size, with one tool most contexts share: 200 guidelines authorize
 * `kb.search` (role r(i % 10) on page p(i % 5)) and 50 forbid it (role
 * r(j % 10) on a trial account), so 10,000 pairs share a tool; 750 more
 * authorize a tool each. Planted: every forbid meets the 20 authorizations of
 * its role (1,000 conflicts); guidelines of one role with the same tools
 * overlap (10 × 190 near-duplicate authorizations, 10 × 10 forbids).
 */
export const generateSharedTool = () => {
  const roles = Array.from({ length: 10 }, (_, i) => `r${i}`)
  const pages = Array.from({ length: 5 }, (_, i) => `p${i}`)
  const tools = ["kb.search", ...Array.from({ length: 999 }, (_, i) => `desk.t${i}`)]
  const make = (id: string, options: Omit<Guideline.Options<string, boolean>, "description">) =>
    Guideline.make(id, { description: `Guideline ${id}.`, ...options })
  const guidelines: Array<Guideline.Any> = []
  for (let i = 0; i < 200; i++) {
    guidelines.push(make(`search${i}`, {
      when: Condition.and(Condition.role(roles[i % 10]!), Condition.equals("page", pages[i % 5]!)),
      tools: ["kb.search"]
    }))
  }
  for (let j = 0; j < 50; j++) {
    guidelines.push(make(`no-search${j}`, {
      when: Condition.and(Condition.role(roles[j % 10]!), Condition.has("features", "trial")),
      forbids: ["kb.search"]
    }))
  }
  for (let i = 0; i < 750; i++) {
    guidelines.push(make(`g${i}`, { when: Condition.role(roles[i % 10]!), tools: [tools[i + 1]!] }))
  }
  const declared = { roles, pages, features: ["trial"] }
  return { tools, guidelines, declared, expected: { conflict: 1000, "near-duplicate": 1900 + 100 } }
}

/** Milliseconds: the median of the samples, and their least and greatest. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

const spread = (samples: ReadonlyArray<number>): Spread => ({
  median: median(samples),
  min: Math.min(...samples),
  max: Math.max(...samples)
})

const ms = (spread: Spread) => `${spread.median.toFixed(1)} ms (${spread.min.toFixed(1)}–${spread.max.toFixed(1)})`
const µs = (spread: Spread) =>
  `${(spread.median * 1000).toFixed(0)} µs (${(spread.min * 1000).toFixed(0)}–${(spread.max * 1000).toFixed(0)})`
const verdict = (met: boolean) => (met ? "met" : "**missed**")

export interface PolicyResult {
  readonly guidelines: number
  readonly tools: number
  readonly findings: number
  readonly check: Spread
  readonly sharedFindings: number
  readonly checkShared: Spread
  readonly turns: ReadonlyArray<{ readonly what: string; readonly perTurn: Spread }>
  readonly repetitions: number
  readonly loadBefore: string
  readonly loadAfter: string
}

export const turnRows = {
  list: "the registry's own gates: `registry.list(context)`",
  candidates: "`registry.candidates(context)`, no guard in force",
  evaluate: "`Policy.evaluate(policy, context)` alone",
  guarded: "`registry.candidates(context)` with the policy in force (its guard): the registry's gates, then the policy"
} as const

/** A toolkit of the generated policy's 1,000 tools: trivial read tools. */
const toolkitOf = (names: ReadonlyArray<string>) =>
  Toolkit.make(
    ...names.map((name, i) =>
      Tool.read(name, {
        title: "t",
        description: `Tool ${i}.`,
        input: Schema.Struct({ a: Schema.String }),
        output: Schema.String,
        run: ({ a }) => Effect.succeed(a)
      })
    )
  )

interface TurnCase {
  readonly what: string
  /** Runs `turns` turns' candidate-set evaluations. */
  readonly run: (turns: number) => void
}

/** Milliseconds per turn for every case, interleaved: each repetition runs every case once. */
const perTurn = (cases: ReadonlyArray<TurnCase>, turns: number, repetitions: number) => {
  for (const c of cases) c.run(Math.min(turns, 20)) // warm up
  const samples = cases.map(() => [] as Array<number>)
  for (let r = 0; r < repetitions; r++) {
    for (const [i, c] of cases.entries()) {
      gc?.({ type: "minor" })
      const start = performance.now()
      c.run(turns)
      samples[i]!.push((performance.now() - start) / turns)
    }
  }
  return cases.map((c, i) => ({ what: c.what, perTurn: spread(samples[i]!) }))
}

export const measurePolicy = async (
  options: { readonly repetitions: number; readonly log: (line: string) => void }
): Promise<PolicyResult> => {
  const loadBefore = load()
  const policies = [generatePolicy(), generateSharedTool()] as const
  // Warm up, and make sure the check finds what was planted.
  const found = policies.map(({ declared, expected, guidelines }) => {
    const findings = Check.run(guidelines, declared)
    const counts = Object.entries(expected)
    for (const [kind, count] of counts) {
      const got = findings.filter((f) => f.kind === kind).length
      if (got !== count) throw new Error(`Check.run found ${got} ${kind} findings, ${count} were planted`)
    }
    const total = counts.reduce((sum, [, count]) => sum + count, 0)
    if (findings.length !== total) throw new Error(`Check.run found ${findings.length} findings, ${total} were planted`)
    return findings.length
  })
  // Interleaved: each repetition checks both policies, so a noisy stretch falls on both.
  const samples = policies.map(() => [] as Array<number>)
  for (let r = 0; r < options.repetitions; r++) {
    for (const [i, { declared, guidelines }] of policies.entries()) {
      gc?.({ type: "minor" })
      const start = performance.now()
      Check.run(guidelines, declared)
      samples[i]!.push(performance.now() - start)
    }
  }
  const [check, checkShared] = samples.map(spread) as [Spread, Spread]
  const { guidelines, tools } = policies[0]
  options.log(`  Check.run, ${guidelines.length} guidelines / ${tools.length} tools: ${ms(check)}`)
  options.log(`  Check.run, the same size, one tool shared by 250 guidelines: ${ms(checkShared)}`)

  // Candidate sets per turn: the registry's own gates, then with the policy.
  const toolkit = toolkitOf(tools)
  const registry = Registry.make(toolkit)
  const policy = Policy.make(guidelines, { toolkit })
  const guard = Effect.runSync(Policy.guard(policy))
  const contexts = Array.from({ length: 10 }, (_, i) => ({
    autonomous: false,
    role: `r${i}`,
    consents: [`c${i}`],
    features: ["beta"]
  }))
  const turnCases: Array<TurnCase> = [
    {
      what: turnRows.list,
      run: (n) => {
        for (let i = 0; i < n; i++) registry.list(contexts[i % 10])
      }
    },
    {
      what: turnRows.candidates,
      run: (n) => {
        Effect.runSync(
          Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => registry.candidates(contexts[i % 10]), {
            discard: true
          })
        )
      }
    }
  ]
  turnCases.push(
    {
      what: turnRows.evaluate,
      run: (n) => {
        for (let i = 0; i < n; i++) Policy.evaluate(policy, contexts[i % 10]!)
      }
    },
    {
      what: turnRows.guarded,
      run: (n) => {
        Effect.runSync(
          Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => registry.candidates(contexts[i % 10]), {
            discard: true
          }).pipe(Guard.within(guard))
        )
      }
    }
  )
  // The policy narrows the set as written: role r3 with consent c3 is offered the tools of g3, g13, ..., g893 and
  // d3 (90 + 1), less t33, which f3 forbids on that consent.
  const offered = Effect.runSync(registry.candidates(contexts[3]).pipe(Guard.within(guard))).filter((l) => l.offered)
  const evaluated = Policy.evaluate(policy, contexts[3]!).offered
  if (offered.length !== 90 || evaluated.length !== 90 || offered.some((l) => !evaluated.includes(l.name))) {
    throw new Error(`the policy offered ${offered.length} tools (evaluate: ${evaluated.length}); 90 expected`)
  }
  const turns = perTurn(turnCases, 200, options.repetitions)
  for (const row of turns) options.log(`  ${row.what}: ${µs(row.perTurn)}`)
  return {
    guidelines: guidelines.length,
    tools: tools.length,
    findings: found[0]!,
    check,
    sharedFindings: found[1]!,
    checkShared,
    turns,
    repetitions: options.repetitions,
    loadBefore,
    loadAfter: load()
  }
}

// What the policy adds to a turn: the guarded candidate set against the same call with no guard (medians).
const addedByPolicy = (result: PolicyResult): string => {
  const median = (what: string) => result.turns.find((row) => row.what === what)!.perTurn.median
  const added = median(turnRows.guarded) - median(turnRows.candidates)
  return `| target | measured | verdict |
|---|---|---|
| the policy adds under 0.5 ms per turn (guarded candidate set less the same call with no guard) | ${
    (added * 1000).toFixed(0)
  } µs (\`Policy.evaluate\` alone: ${(median(turnRows.evaluate) * 1000).toFixed(0)} µs) | ${verdict(added < 0.5)} |`
}

export const policySection = (result: PolicyResult): string =>
  `## Policy

Written by \`pnpm --dir bench bench:policy\` (bench/policy.ts), and by \`pnpm bench\` with the rest. A generated policy
of ${result.guidelines.toLocaleString("en")} guidelines over ${
    result.tools.toLocaleString("en")
  } tools and 10 declared roles, with findings planted (50 conflicts, 10 near-duplicates,
5 unreachable guidelines; the run fails unless \`Check.run\` reports exactly those ${result.findings}). Medians of ${result.repetitions}
repetitions, least and greatest in brackets, a young-generation garbage collection before each; ${loadedFrom()}.
Load average (1, 5, 15 min) ${result.loadBefore} before, ${result.loadAfter} after.

| what | time | target |
|---|---|---|
| \`Check.run\`: conflicts, cycles, missing names, unreachable guidelines, near-duplicates | ${
    ms(result.check)
  } | under 1 s: ${verdict(result.check.median < 1000)} |
| \`Check.run\`, the same size with one tool shared by 250 guidelines (31,000 pairs; ${
    result.sharedFindings.toLocaleString("en")
  } findings) | ${ms(result.checkShared)} | under 1 s: ${verdict(result.checkShared.median < 1000)} |

Candidate sets, per turn: the 1,000 tools of the same policy as a toolkit of trivial read tools, a context a turn
(ten roles in turn, a consent, a feature), 200 turns a sample.

| what | per turn |
|---|---|
${result.turns.map((row) => `| ${row.what} | ${µs(row.perTurn)} |`).join("\n")}

${addedByPolicy(result)}

Where the time goes: \`Check.run\` solves one small satisfiability problem per guideline (is it reachable?) and per
pair of guidelines that share a tool (one authorizes it, the other forbids it) or share their whole tool sets
(near-duplicates); pairs are found through an index by tool, never by comparing every guideline with every other.
A pair whose conditions pin one path to disjoint values (\`role = "r1"\` and \`role = "r2"\`) is dropped before
solving. Each problem reads only the paths its two conditions name, with candidate values from the declared
vocabulary and the conditions' own literals. The second row is the hard case at this size: 250 guidelines name one
tool, so 10,000 pairs authorize and forbid it and 21,000 have the same tool set; 3,000 of them are findings, each
solved and put into words. On a loaded machine (see the load average above) the spread is wide; compare the two
rows with each other.

Where a turn's time goes. The guard keeps the evaluations of the last 64 contexts it judged (keyed by what
conditions can read: role, page, tenant, actor, the autonomous flag, features, consents, facts, and a model's
answers to text conditions), so the turns of a run, and runs of one role, do not evaluate the graph again; the
guarded row cycles through 10 roles, so it measures that case: the rest is the registry writing a \`Listing\` with
a gate and a reason for each of the 910 tools the policy leaves out. A context the guard has not seen costs about
the \`Policy.evaluate\` row once (every guideline's condition, and a reason for each tool left out). A first profile
found the listing's object spread (\`{ ...entry, offered: false }\`, about a microsecond a property on Node 20)
costing more than the evaluation; the entries are now written out. tsx's keep-names wrapper (\`__name\`) also runs on
every closure made per tool, a cost a compiled build does not have.
`

// Run alone: measure, print, and put the section into docs/PERFORMANCE.md.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { readFileSync, writeFileSync } = await import("node:fs")
  const path = await import("node:path")
  const { fileURLToPath } = await import("node:url")
  const repetitions = Number(process.env.BENCH_REPETITIONS ?? 5)
  console.log(`Policy, ${repetitions} repetitions (medians):`)
  const result = await measurePolicy({ repetitions, log: console.log })
  const section = policySection(result)
  console.log(section)
  const doc = path.join(path.dirname(fileURLToPath(import.meta.url)), "../docs/PERFORMANCE.md")
  const text = readFileSync(doc, "utf8")
  // Where run.ts puts it: before the notes on the peer rows.
  const found = text.indexOf("## Policy")
  const start = found !== -1 ? found : text.indexOf("## What the peer rows measure")
  const end = found === -1 ? start : text.indexOf("\n## ", found + 1) + 1
  writeFileSync(
    doc,
    start === -1
      ? `${text.trimEnd()}\n\n${section}`
      : end <= 0
      ? `${text.slice(0, start)}${section}`
      : `${text.slice(0, start)}${section}\n${text.slice(end)}`
  )
  console.log("wrote the Policy section of docs/PERFORMANCE.md")
}
