import { describe, expect, it } from "vitest"
import { Check, Condition, Guideline } from "@graded/policy"

const declared = { roles: ["support", "credit-officer"], consents: ["credit-check", "marketing"] }

const g = (id: string, options: Partial<Guideline.Options<string, boolean>> & { when: Condition.Condition }) =>
  Guideline.make(id, { description: `Guideline ${id}.`, ...options })

/** The example really triggers the finding: every named guideline's condition holds in it. */
const holdsIn = (finding: Check.Finding, ...conditions: ReadonlyArray<Condition.Condition>) => {
  expect(finding.example).toBeDefined()
  const matched = new Set(finding.texts ?? [])
  for (const condition of conditions) {
    expect(Condition.holds(condition, finding.example!, (text) => matched.has(text))).toBe(true)
  }
}

const supportRefunds = g("support-refunds", { when: Condition.role("support"), tools: ["refund.issue"] })
const noRefundsOnTrial = g("no-refunds-on-trial", {
  when: Condition.has("features", "trial"),
  forbids: ["refund.issue"]
})

describe("Check.run: conflicts", () => {
  it("finds a tool one guideline authorizes and another forbids where both match, with a context that matches both", () => {
    const findings = Check.run([supportRefunds, noRefundsOnTrial], declared)
    expect(findings).toHaveLength(1)
    const [finding] = findings
    expect(finding).toMatchObject({
      kind: "conflict",
      severity: "error",
      guidelines: ["support-refunds", "no-refunds-on-trial"],
      tool: "refund.issue"
    })
    holdsIn(finding!, supportRefunds.when, noRefundsOnTrial.when)
    expect(finding!.example).toEqual({ role: "support", features: ["trial"] })
    expect(finding!.message).toContain("\"support-refunds\"")
    expect(finding!.message).toContain("\"no-refunds-on-trial\"")
    expect(finding!.message).toContain("refund.issue")
    expect(finding!.message).toContain("role = \"support\", features has \"trial\"")
    expect(finding!.message).toContain("forbidding wins at run time")
  })

  it("reports nothing for guidelines whose roles never meet", () => {
    const officers = g("officer-no-refunds", { when: Condition.role("credit-officer"), forbids: ["refund.issue"] })
    expect(Check.run([supportRefunds, officers], declared)).toEqual([])
    // Not even with the roles left undeclared: one context has one role.
    expect(Check.run([supportRefunds, officers])).toEqual([])
  })

  it("a different priority turns the error into a warning that names the winner", () => {
    const higherForbid = g("no-refunds-on-trial", {
      when: Condition.has("features", "trial"),
      forbids: ["refund.issue"],
      priority: 5
    })
    const [forbidWins] = Check.run([supportRefunds, higherForbid], declared)
    expect(forbidWins).toMatchObject({ kind: "conflict", severity: "warning" })
    expect(forbidWins!.message).toContain(
      "\"no-refunds-on-trial\" has the higher priority and wins: refund.issue is withheld"
    )

    const higherAuthorize = g("support-refunds", {
      when: Condition.role("support"),
      tools: ["refund.issue"],
      priority: 9
    })
    const [authorizeWins] = Check.run([higherAuthorize, noRefundsOnTrial], declared)
    expect(authorizeWins).toMatchObject({ kind: "conflict", severity: "warning" })
    expect(authorizeWins!.message).toContain(
      "\"support-refunds\" has the higher priority and wins: refund.issue is offered"
    )
  })

  it("takes the conditions of required guidelines into account, transitively", () => {
    const officer = g("officer", { when: Condition.role("credit-officer"), tools: ["customer.read"] })
    const consented = g("consented", {
      when: Condition.has("consents", "credit-check"),
      tools: ["consent.read"],
      requires: ["officer"]
    })
    const scores = g("scores", { when: Condition.always, tools: ["credit.score"], requires: ["consented"] })
    const supportNoScores = g("support-no-scores", { when: Condition.role("support"), forbids: ["credit.score"] })
    // scores alone holds always, but it needs an officer: never a support agent.
    expect(Check.run([officer, consented, scores, supportNoScores], declared)).toEqual([])

    const noScoresWithoutMarketing = g("no-scores-without-marketing", {
      when: Condition.not(Condition.has("consents", "marketing")),
      forbids: ["credit.score"]
    })
    const findings = Check.run([officer, consented, scores, noScoresWithoutMarketing], declared)
    expect(findings).toHaveLength(1)
    expect(findings[0]).toMatchObject({ kind: "conflict", guidelines: ["scores", "no-scores-without-marketing"] })
    holdsIn(findings[0]!, officer.when, consented.when, scores.when, noScoresWithoutMarketing.when)
  })

  it("a natural-language condition may match or not: the example says which text a model matched", () => {
    const upset = g("upset-no-upsell", { when: Condition.text("the customer is upset"), forbids: ["offer.upsell"] })
    const sales = g("support-upsell", { when: Condition.role("support"), tools: ["offer.upsell"] })
    const [finding] = Check.run([sales, upset], declared)
    expect(finding).toMatchObject({ kind: "conflict", texts: ["the customer is upset"] })
    holdsIn(finding!, sales.when, upset.when)
    expect(finding!.message).toContain("a model matches \"the customer is upset\"")
  })

  it("facts, inputs and autonomous contexts are solved for too", () => {
    const big = g("big-transfers-blocked", {
      when: Condition.and(Condition.equals("facts.risk", "high"), Condition.equals("autonomous", true)),
      forbids: ["transfer.send"]
    })
    const transfers = g("transfers", {
      when: Condition.and(
        Condition.isIn("input.account.kind", ["savings", "checking"]),
        Condition.not(Condition.equals("facts.risk", "low"))
      ),
      tools: ["transfer.send"]
    })
    const [finding] = Check.run([transfers, big], { facts: { risk: ["low", "high"] } })
    expect(finding).toMatchObject({ kind: "conflict", tool: "transfer.send" })
    holdsIn(finding!, transfers.when, big.when)
    expect(finding!.example).toMatchObject({
      autonomous: true,
      facts: { risk: "high" },
      input: { account: { kind: "savings" } }
    })
  })

  it("sees through disguised overlaps: double negation, in-lists, an or whose second branch overlaps", () => {
    const disguised = g("disguised", {
      when: Condition.or(
        Condition.role("credit-officer"),
        Condition.and(
          Condition.not(Condition.not(Condition.isIn("role", ["support", "nobody"]))),
          Condition.not(Condition.has("consents", "marketing"))
        )
      ),
      forbids: ["refund.issue"]
    })
    const [finding] = Check.run([supportRefunds, disguised], declared)
    expect(finding).toMatchObject({ kind: "conflict", guidelines: ["support-refunds", "disguised"] })
    holdsIn(finding!, supportRefunds.when, disguised.when)
    // An empty or never holds: nothing to report but the guideline itself.
    const empty = g("empty", { when: Condition.or(), forbids: ["refund.issue"] })
    expect(Check.run([supportRefunds, empty], declared).map((f) => [f.kind, f.guidelines])).toEqual([
      ["unreachable", ["empty"]]
    ])
  })

  it("roles pinned to overlapping lists meet on the value they share; 1 and \"1\" are different values", () => {
    const a = g("a", { when: Condition.role("support", "auditor"), tools: ["ledger.read"] })
    const b = g("b", {
      when: Condition.and(Condition.role("auditor", "intern"), Condition.always),
      forbids: ["ledger.read"]
    })
    const [finding] = Check.run([a, b])
    expect(finding).toMatchObject({ kind: "conflict", example: { role: "auditor" } })
    const one = g("one", { when: Condition.equals("facts.tier", 1), tools: ["x.read"] })
    const oneText = g("one-text", { when: Condition.equals("facts.tier", "1"), forbids: ["x.read"] })
    expect(Check.run([one, oneText])).toEqual([])
  })

  it("a guideline that excludes the other, or a third one that excludes one of them, resolves the conflict where it matches", () => {
    const excluding = g("no-refunds-on-trial", {
      when: Condition.has("features", "trial"),
      forbids: ["refund.issue"],
      excludes: ["support-refunds"]
    })
    expect(Check.run([supportRefunds, excluding], declared)).toEqual([])

    // A third guideline that excludes the forbidding one wherever support works: no context is left.
    const supportOverrides = g("support-overrides", {
      when: Condition.role("support"),
      tools: ["ticket.read"],
      excludes: ["no-refunds-on-trial"]
    })
    expect(Check.run([supportRefunds, noRefundsOnTrial, supportOverrides], declared)).toEqual([])

    // Excluding only on one page leaves the other pages in conflict; the example is off that page.
    const onRefundPage = g("support-overrides", {
      when: Condition.equals("page", "refunds"),
      tools: ["ticket.read"],
      excludes: ["no-refunds-on-trial"]
    })
    const [finding] = Check.run([supportRefunds, noRefundsOnTrial, onRefundPage], declared)
    expect(finding).toMatchObject({ kind: "conflict", guidelines: ["support-refunds", "no-refunds-on-trial"] })
    holdsIn(finding!, supportRefunds.when, noRefundsOnTrial.when, Condition.not(onRefundPage.when))
  })
})

describe("Check.run: cycles and missing names", () => {
  it("names the guidelines of a requirement cycle in order", () => {
    const a = g("a", { when: Condition.always, tools: ["t.a"], requires: ["b"] })
    const b = g("b", { when: Condition.always, tools: ["t.b"], requires: ["c"] })
    const c = g("c", { when: Condition.always, tools: ["t.c"], requires: ["a"] })
    const free = g("free", { when: Condition.always, tools: ["t.free"], requires: ["a"] })
    const findings = Check.run([free, a, b, c])
    expect(findings).toHaveLength(1)
    expect(findings[0]).toMatchObject({ kind: "cycle", severity: "error" })
    expect([...findings[0]!.guidelines].sort()).toEqual(["a", "b", "c"])
    expect(findings[0]!.message).toMatch(/"(a|b|c)" requires "(a|b|c)" requires "(a|b|c)" requires "(a|b|c)"/)
  })

  it("reports requires and excludes that name no guideline", () => {
    const a = g("a", { when: Condition.always, tools: ["t.a"], requires: ["ghost"], excludes: ["phantom"] })
    const findings = Check.run([a])
    expect(findings.map((f) => [f.kind, f.severity, f.guidelines])).toEqual([
      ["missing", "error", ["a", "ghost"]],
      ["missing", "error", ["a", "phantom"]]
    ])
    expect(findings[0]!.message).toContain("\"a\" requires \"ghost\", which is not a guideline")
  })
})

describe("Check.run: unreachable guidelines", () => {
  it("a role outside the declared roles never matches; undeclared paths stay open", () => {
    const ceo = g("ceo-transfers", { when: Condition.role("ceo"), tools: ["transfer.send"] })
    const findings = Check.run([ceo], declared)
    expect(findings).toHaveLength(1)
    expect(findings[0]).toMatchObject({ kind: "unreachable", severity: "warning", guidelines: ["ceo-transfers"] })
    expect(findings[0]!.message).toContain("role \"ceo\" is not declared")
    // Without declared roles, "ceo" is as good a role as any.
    expect(Check.run([ceo])).toEqual([])
    // A page is open when only roles are declared.
    expect(Check.run([g("p", { when: Condition.equals("page", "anything"), tools: ["t"] })], declared)).toEqual([])
  })

  it("a condition that contradicts itself never matches, declared or not", () => {
    const both = g("both-roles", {
      when: Condition.and(Condition.role("support"), Condition.role("credit-officer")),
      tools: ["t"]
    })
    const notBoth = g("consent-and-not", {
      when: Condition.and(Condition.has("consents", "x"), Condition.not(Condition.has("consents", "x"))),
      tools: ["u"]
    })
    expect(Check.run([both, notBoth]).map((f) => [f.kind, f.guidelines])).toEqual([
      ["unreachable", ["both-roles"]],
      ["unreachable", ["consent-and-not"]]
    ])
  })

  it("a guideline requiring an unreachable one is unreachable too, and says which", () => {
    const ceo = g("ceo", { when: Condition.role("ceo"), tools: ["t.ceo"] })
    const after = g("after-ceo", { when: Condition.always, tools: ["t.after"], requires: ["ceo"] })
    const findings = Check.run([ceo, after], declared)
    expect(findings.map((f) => [f.kind, f.guidelines])).toEqual([
      ["unreachable", ["ceo"]],
      ["unreachable", ["after-ceo", "ceo"]]
    ])
    expect(findings[1]!.message).toContain("it requires \"ceo\", which can never match")
  })

  it("a declared consent list is closed too", () => {
    const odd = g("odd-consent", { when: Condition.has("consents", "telepathy"), tools: ["t"] })
    expect(Check.run([odd], declared).map((f) => f.kind)).toEqual(["unreachable"])
    const fine = g("fine-consent", { when: Condition.has("consents", "marketing"), tools: ["t"] })
    expect(Check.run([fine], declared)).toEqual([])
  })
})

describe("Check.run: near-duplicates", () => {
  it("same authorized and forbidden tools with conditions that can hold together: merge them", () => {
    const a = g("support-reads", { when: Condition.role("support"), tools: ["ticket.read", "customer.read"] })
    const b = g("tickets-page-reads", {
      when: Condition.equals("page", "tickets"),
      tools: ["customer.read", "ticket.read"]
    })
    const findings = Check.run([a, b], declared)
    expect(findings).toHaveLength(1)
    expect(findings[0]).toMatchObject({
      kind: "near-duplicate",
      severity: "warning",
      guidelines: ["support-reads", "tickets-page-reads"]
    })
    holdsIn(findings[0]!, a.when, b.when)
    expect(findings[0]!.message).toContain("merge them")
  })

  it("not for disjoint conditions, nor for different tool sets", () => {
    const a = g("support-reads", { when: Condition.role("support"), tools: ["ticket.read"] })
    const b = g("officer-reads", { when: Condition.role("credit-officer"), tools: ["ticket.read"] })
    const c = g("support-more", { when: Condition.role("support"), tools: ["ticket.read", "customer.read"] })
    expect(Check.run([a, b, c], declared)).toEqual([])
  })
})

describe("Check.run: bad input", () => {
  it("refuses a declared vocabulary that is not lists, naming the field", () => {
    expect(() => Check.run([supportRefunds], { roles: "support" } as never)).toThrow(Check.InvalidDeclared)
    expect(() => Check.run([supportRefunds], { roles: "support" } as never)).toThrow("declared roles: must be a list")
    expect(() => Check.run([supportRefunds], { facts: { risk: [{}] } } as never)).toThrow("declared facts.risk")
  })
})

describe("Check.format", () => {
  it("prints each finding with its severity, kind, guidelines and message, errors first, and a count", () => {
    const ceo = g("ceo-transfers", { when: Condition.role("ceo"), tools: ["transfer.send"] })
    const text = Check.format(Check.run([ceo, supportRefunds, noRefundsOnTrial], declared))
    const lines = text.trimEnd().split("\n")
    expect(lines[0]).toBe("error conflict: support-refunds, no-refunds-on-trial (refund.issue)")
    expect(lines[2]).toBe("warning unreachable: ceo-transfers")
    expect(lines.at(-1)).toBe("1 error, 1 warning")
    expect(Check.format([])).toMatch(/^No conflicts/)
  })
})

// A generated policy the size the benchmark uses: 1,000 guidelines over 1,000
// tools and 10 declared roles, with a known number of each finding planted.
const generated = () => {
  const roles = Array.from({ length: 10 }, (_, i) => `r${i}`)
  const guidelines: Array<Guideline.Any> = []
  // 900 authorizing guidelines, one tool each, role r(i % 10).
  for (let i = 0; i < 900; i++) guidelines.push(g(`g${i}`, { when: Condition.role(roles[i % 10]!), tools: [`t${i}`] }))
  // 50 conflicts: forbid, on a consent, a tool authorized for the same role.
  for (let j = 0; j < 50; j++) {
    guidelines.push(g(`f${j}`, {
      when: Condition.and(Condition.role(roles[j % 10]!), Condition.has("consents", `c${j}`)),
      forbids: [`t${j * 10 + j % 10}`]
    }))
  }
  // 25 forbids for another role than the one authorized: no conflict.
  for (let j = 0; j < 25; j++) {
    guidelines.push(g(`x${j}`, { when: Condition.role(roles[(j + 1) % 10]!), forbids: [`t${500 + j * 10 + j % 10}`] }))
  }
  // 10 near-duplicates of g1..g10: same tool, same role, one more condition
  // (t0 is forbidden by f0: a near-duplicate of g0 would conflict with it too).
  for (let k = 1; k <= 10; k++) {
    guidelines.push(g(`d${k}`, {
      when: Condition.and(Condition.role(roles[k % 10]!), Condition.has("features", "beta")),
      tools: [`t${k}`]
    }))
  }
  // 10 with the tool of g(100 + j) for another role: not near-duplicates.
  for (let j = 0; j < 10; j++) {
    guidelines.push(g(`o${j}`, { when: Condition.role(roles[(j + 1) % 10]!), tools: [`t${100 + j}`] }))
  }
  // 5 for a role nobody has.
  for (let j = 0; j < 5; j++) guidelines.push(g(`u${j}`, { when: Condition.role("ceo"), tools: [`t${900 + j}`] }))
  return {
    guidelines,
    declared: { roles, consents: Array.from({ length: 50 }, (_, j) => `c${j}`), features: ["beta"] }
  }
}

describe("Check.run at scale", () => {
  it("1,000 guidelines over 1,000 tools: exactly the planted findings", () => {
    const { declared, guidelines } = generated()
    expect(guidelines).toHaveLength(1000)
    const findings = Check.run(guidelines, declared)
    const count = (kind: Check.Kind) => findings.filter((f) => f.kind === kind).length
    expect(count("conflict")).toBe(50)
    expect(count("near-duplicate")).toBe(10)
    expect(count("unreachable")).toBe(5)
    expect(findings).toHaveLength(65)
    for (const finding of findings.filter((f) => f.kind === "conflict")) {
      const [a, b] = finding.guidelines.map((id) => guidelines.find((x) => x.id === id)!)
      holdsIn(finding, a!.when, b!.when)
      expect(finding.severity).toBe("error")
    }
    expect(findings.filter((f) => f.kind === "unreachable").map((f) => f.guidelines[0])).toEqual([
      "u0",
      "u1",
      "u2",
      "u3",
      "u4"
    ])
  })
})
