import { describe, expect, it } from "@effect/vitest"
import { Data, Effect, Layer, Schema } from "effect"
import { Agent, Audit, LanguageModel, Plan, Registry, ScriptedModel, Tool, Toolkit, Wire } from "@graded/core"
import { Condition, Contract, Guideline, Policy, Review } from "@graded/policy"
import { contracts, guidelines, makeDesk } from "./creditDesk.js"

const { text } = ScriptedModel

class Declined extends Data.TaggedError("Declined")<{}> {}
class Timeout extends Data.TaggedError("Timeout")<{}> {}

const read = <const N extends string, I, IE>(name: N, input: Schema.Codec<I, IE>, extra: Partial<Tool.Options> = {}) =>
  Tool.read(name as Wire.ValidName<N>, {
    title: name,
    description: `The ${name} tool.`,
    input: input as Schema.Codec<I, unknown>,
    output: Schema.Boolean,
    ...extra,
    run: () => Effect.succeed(true)
  })

const questionsOf = (findings: ReadonlyArray<Review.Finding>, tool: string) =>
  findings.filter((finding) => finding.tool === tool).map((finding) => finding.question)

describe("Review: the four questions", () => {
  it("the credit desk passes: every tool answers all four", () => {
    const desk = makeDesk()
    expect(Review.run(desk.toolkit, { contracts: contracts(desk) })).toEqual([])
  })

  it("question 1: an input that admits arbitrary fields, anywhere in its schema", () => {
    const good = read("good.lookup", Schema.Struct({ customer: Schema.String, limit: Schema.optional(Schema.Number) }))
    const record = read("bad.record", Schema.Record(Schema.String, Schema.String))
    const nested = read(
      "bad.nested",
      Schema.Struct({ customer: Schema.String, meta: Schema.Struct({ extra: Schema.Unknown }) })
    )
    const rest = read(
      "bad.rest",
      Schema.StructWithRest(Schema.Struct({ customer: Schema.String }), [Schema.Record(Schema.String, Schema.Any)])
    )
    const inUnion = read(
      "bad.union",
      Schema.Union([
        Schema.Struct({ kind: Schema.Literal("a") }),
        Schema.Struct({ kind: Schema.Literal("b"), x: Schema.ObjectKeyword })
      ])
    )
    const inArray = read(
      "bad.array",
      Schema.Struct({ items: Schema.Array(Schema.Record(Schema.String, Schema.Number)) })
    )
    const findings = Review.run(Toolkit.make(good, record, nested, rest, inUnion, inArray))
    expect(questionsOf(findings, "good.lookup")).toEqual([])
    for (const tool of ["bad.record", "bad.nested", "bad.rest", "bad.union", "bad.array"]) {
      expect(questionsOf(findings, tool), tool).toContain(1)
    }
    const nestedFinding = findings.find((finding) => finding.tool === "bad.nested")!
    expect(nestedFinding).toMatchObject({ question: 1, title: "excess input" })
    expect(nestedFinding.message).toContain("input.meta.extra is unknown")
    expect(findings.find((finding) => finding.tool === "bad.array")!.message).toContain("input.items[*] is a record")
  })

  it("question 1: a sensitive field of a tag the tool does not carry, whatever its spelling", () => {
    const untagged = read("profile.update", Schema.Struct({ customer: Schema.String, date_of_birth: Schema.String }))
    const tagged = read("identity.verify", Schema.Struct({ customer: Schema.String, SSN: Schema.String }), {
      tags: ["pii"]
    })
    const custom = read("card.charge", Schema.Struct({ pan: Schema.String }), { tags: ["pii"] })
    const findings = Review.run(Toolkit.make(untagged, tagged, custom), { sensitive: { pci: ["pan"] } })
    expect(questionsOf(findings, "identity.verify")).toEqual([])
    expect(findings.filter((finding) => finding.tool === "profile.update")).toEqual([{
      tool: "profile.update",
      question: 1,
      title: "excess input",
      message: "profile.update takes input.date_of_birth, a sensitive field (pii), but does not carry the tag pii: " +
        "drop the field, or tag the tool so its calls are audited as such"
    }])
    // A tag of the options: pii does not cover a card number declared under pci.
    expect(findings.find((finding) => finding.tool === "card.charge")?.message).toContain("sensitive field (pci)")
  })

  it("question 2: a precondition a model would judge, on the input, or on a fact nothing records", () => {
    const desk = makeDesk()
    const { AccountBalance, CreditScore, KbSearch, LoanOffer } = desk.tools
    const findings = Review.run(desk.toolkit, {
      contracts: [
        // Good: a fact account.balance records, and a context path.
        Contract.make(CreditScore, {
          preconditions: [
            Contract.precondition(
              "not-frozen",
              Condition.equals("facts.account.frozen", false),
              "The account is frozen."
            ),
            Contract.precondition("consent", Condition.has("consents", "credit-check"), "We need consent.")
          ],
          failures: ["BureauDown"]
        }),
        Contract.make(LoanOffer, {
          preconditions: [
            Contract.precondition("income", Condition.equals("facts.income.verified", true), "Verify income.")
          ]
        }),
        Contract.make(KbSearch, {
          preconditions: [Contract.precondition("polite", Condition.text("the customer is polite"), "Be polite.")]
        }),
        Contract.make(AccountBalance, {
          preconditions: [Contract.precondition("own", Condition.equals("input.customer", "me"), "Only your own.")]
        })
      ]
    })
    expect(questionsOf(findings, "credit.score")).toEqual([])
    expect(findings.find((finding) => finding.tool === "loan.offer")).toEqual({
      tool: "loan.offer",
      question: 2,
      title: "precondition not evaluable",
      message: "loan.offer: precondition income reads facts.income.verified, a fact no tool of the toolkit records " +
        "and none declared (options.facts)"
    })
    expect(findings.find((finding) => finding.tool === "kb.search")?.message).toContain("has a text condition")
    expect(findings.find((finding) => finding.tool === "account.balance")?.message).toContain("reads input.customer")
    // A fact the app sets, declared, is evaluable.
    expect(
      questionsOf(
        Review.run(desk.toolkit, {
          contracts: [Contract.make(LoanOffer, {
            preconditions: [Contract.precondition("income", Condition.equals("facts.income.verified", true), "x")]
          })],
          facts: ["income.verified"]
        }),
        "loan.offer"
      )
    ).toEqual([])
  })

  it("question 3: a write or send without declared side effects, or without a required tag", () => {
    const desk = makeDesk()
    const Silent = Tool.write("note.add", {
      title: "Add a note",
      description: "Adds a note.",
      input: Schema.Struct({ text: Schema.String }),
      output: Schema.Boolean,
      sideEffects: ["  "],
      run: () => Effect.succeed(true)
    })
    const Mail = Tool.send("mail.send", {
      title: "Send mail",
      description: "Sends mail.",
      input: Schema.Struct({ text: Schema.String }),
      payload: Schema.Struct({ text: Schema.String }),
      output: Schema.Boolean,
      prepare: (input) => Effect.succeed(input),
      deliver: () => Effect.succeed(true)
    })
    const toolkit = Toolkit.make(...desk.toolkit.tools, Silent, Mail)
    const findings = Review.run(toolkit, {
      contracts: contracts(desk),
      requiredTags: { "credit.score": ["credit-bureau"], "loan.offer": ["credit-bureau"] }
    })
    expect(questionsOf(findings, "note.add")).toEqual([3])
    expect(questionsOf(findings, "mail.send")).toEqual([3])
    expect(findings.find((finding) => finding.tool === "mail.send")?.message).toBe(
      "mail.send is a send tool and declares no sideEffects: say what a call changes, so that every audit entry " +
        "of it says so"
    )
    // Writes and sends that declare them, and reads, pass.
    expect(questionsOf(findings, "ticket.submit")).toEqual([])
    expect(questionsOf(findings, "transfer.send")).toEqual([])
    expect(questionsOf(findings, "kb.search")).toEqual([])
    expect(questionsOf(findings, "credit.score")).toEqual([])
    expect(findings.find((finding) => finding.tool === "loan.offer")).toMatchObject({
      question: 3,
      message: expect.stringContaining("loan.offer must carry the tag credit-bureau")
    })
  })

  it("question 4: a declared failure without a fixed message", () => {
    const Pay = Tool.read("pay.quote", {
      title: "Quote",
      description: "A payment quote.",
      input: Schema.Struct({ amount: Schema.Number }),
      output: Schema.Number,
      failureMessages: { Declined: "The payment was declined.", Timeout: "" },
      run: ({ amount }): Effect.Effect<number, Declined | Timeout> =>
        amount > 100 ? Effect.fail(new Declined()) : amount < 0 ? Effect.fail(new Timeout()) : Effect.succeed(amount)
    })
    const desk = makeDesk()
    const findings = Review.run(Toolkit.make(Pay, desk.tools.CreditScore), {
      contracts: [
        Contract.make(Pay, { failures: ["Declined", "Timeout"] }),
        Contract.make(desk.tools.CreditScore, { failures: ["BureauDown"] })
      ]
    })
    expect(findings).toEqual([{
      tool: "pay.quote",
      question: 4,
      title: "failure without a fixed message",
      message: "pay.quote may fail with Timeout, and its failureMessages have no fixed text for it: a user would see " +
        "whatever the error says"
    }])
    // A precondition written as a literal, its message left out (the contract's check cast away).
    const literal = {
      tool: "pay.quote",
      preconditions: [{ id: "open", when: Condition.always, message: "" }],
      failures: []
    } as unknown as Contract.Contract
    expect(questionsOf(Review.run(Toolkit.make(Pay), { contracts: [literal] }), "pay.quote")).toEqual([4])
  })

  it("format names the tool, the question and its title; bad options are named", () => {
    const desk = makeDesk()
    const Silent = Tool.write("note.add", {
      title: "Add a note",
      description: "Adds a note.",
      input: Schema.Struct({ text: Schema.String }),
      output: Schema.Boolean,
      run: () => Effect.succeed(true)
    })
    const text = Review.format(Review.run(Toolkit.make(Silent)))
    expect(text).toContain("1 finding on 1 tool:")
    expect(text).toContain("note.add: question 3 (side effect not audited): note.add is a write tool")
    expect(Review.format([])).toBe("No findings: every tool passes the four questions.")
    expect(() => Review.run(desk.toolkit, { sensitive: "pii" as never })).toThrow(
      "review: sensitive must be an object of lists, by name"
    )
    expect(() => Review.run(Toolkit.make(Silent), { contracts: contracts(desk) })).toThrow(
      "review: a contract names credit.score, which is not in the toolkit"
    )
  })
})

describe("Review in a policy: a tool that fails is not offered in production", () => {
  // The credit desk, with an account note that takes any fields and a
  // guideline that authorizes it for support agents.
  const setup = () => {
    const desk = makeDesk()
    const ran = { notes: 0 }
    const AccountNote = Tool.read("account.notes", {
      title: "Account notes",
      description: "Notes on the account, filtered.",
      input: Schema.Struct({
        customer: Schema.String,
        filter: Schema.Record(Schema.String, Schema.String)
      }),
      output: Schema.Array(Schema.String),
      run: () => Effect.sync(() => (ran.notes++, ["note"]))
    })
    const toolkit = Toolkit.make(...desk.toolkit.tools, AccountNote)
    const notes = Guideline.make("notes", {
      description: "Support agents read account notes.",
      when: Condition.role("support"),
      tools: ["account.notes"]
    })
    const policy = Policy.make([...guidelines, notes], {
      toolkit,
      contracts: contracts(desk),
      testTenants: ["sandbox"]
    })
    return { ...desk, policy, ran, toolkit }
  }

  const offeredTo = (toolkit: Toolkit.Any, policy: Policy.Policy<any>, context: Record<string, unknown>) =>
    Effect.gen(function*() {
      const offered: Array<ReadonlyArray<string>> = []
      const model = ScriptedModel.layer([(request: LanguageModel.Request) => (
        offered.push(request.tools.map((tool) => tool.name)), text("ok")
      )])
      const audit = Audit.memory()
      yield* Agent.run({
        toolkit: Toolkit.readOnly(toolkit as Toolkit.Toolkit<ReadonlyArray<Tool.Any>>),
        prompt: "?",
        context
      })
        .pipe(Effect.provide(Layer.mergeAll(model, Policy.layer(policy), audit.layer)))
      const entry = audit.entries.find((e) => e.type === "offered")
      return { offered: offered[0]!, suppressed: entry?.type === "offered" ? entry.suppressed : [] }
    })

  it("Policy.review names the question and the tool", () => {
    const { policy } = setup()
    expect(Policy.review(policy)).toEqual([expect.objectContaining({ tool: "account.notes", question: 1 })])
  })

  it.effect("left out with the gate policy:review in production; offered in a test tenant", () =>
    Effect.gen(function*() {
      const { policy, toolkit } = setup()
      const production = yield* offeredTo(toolkit, policy, { role: "support" })
      expect(production.offered).toEqual(["kb__search", "account__balance"])
      expect(production.suppressed).toContainEqual({
        tool: "account.notes",
        gate: "policy:review",
        reason: expect.stringMatching(
          /^account\.notes failed the contract review: question 1 \(excess input\): account\.notes admits fields/
        )
      })
      const sandbox = yield* offeredTo(toolkit, policy, { role: "support", tenant: "sandbox" })
      expect(sandbox.offered).toEqual(["kb__search", "account__balance", "account__notes"])
      expect(sandbox.suppressed.map((s) => s.tool)).not.toContain("account.notes")
    }))

  it.effect("a direct call to the failing tool is refused and never runs; review: false turns the gate off", () =>
    Effect.gen(function*() {
      const { policy, ran, toolkit } = setup()
      const registry = Registry.make(toolkit)
      const input = { customer: "c-1", filter: { anything: "x" } }
      const refused = yield* registry.invoke("account.notes", input, { role: "support" }).pipe(
        Effect.provide(Policy.layer(policy))
      )
      expect(refused).toMatchObject({ ok: false, gate: "policy:review" })
      expect(ran.notes).toBe(0)
      // The tenant is the context's, set by the app: a claimed tenant in the input does nothing.
      const claimed = yield* registry.invoke("account.notes", { ...input, filter: { tenant: "sandbox" } }, {
        role: "support"
      }).pipe(Effect.provide(Policy.layer(policy)))
      expect(claimed).toMatchObject({ ok: false, gate: "policy:review" })
      expect(ran.notes).toBe(0)
      const off = Policy.make(policy.guidelines, { toolkit, contracts: policy.contracts, review: false })
      expect(Policy.review(off)).toEqual(Policy.review(policy))
      const allowed = yield* registry.invoke("account.notes", input, { role: "support" }).pipe(
        Effect.provide(Policy.layer(off))
      )
      expect(allowed.ok).toBe(true)
      expect(ran.notes).toBe(1)
    }))

  it("the findings cannot be edited to lift the gate or change the manifest", () => {
    const { policy } = setup()
    const findings = Policy.review(policy) as Array<Review.Finding>
    expect(() => findings.splice(0)).toThrow(TypeError)
    expect(() => Object.assign(findings[0]!, { tool: "kb.search" })).toThrow(TypeError)
    expect(Policy.evaluate(policy, { role: "support" }).left.get("account.notes")).toMatchObject({ kind: "review" })
    expect(Policy.manifest(policy).find((row) => row.tool === "account.notes")?.production).toBe(
      "off (review: Q1 excess input)"
    )
  })

  it("review options reach the policy: a field declared sensitive keeps an untagged tool out", () => {
    const { policy, toolkit } = setup()
    const strict = Policy.make(policy.guidelines, {
      toolkit,
      contracts: policy.contracts,
      review: { sensitive: { pii: ["customer"] } }
    })
    const context = { role: "credit-officer", consents: ["credit-check"], facts: { "credit.band": "good" } }
    // The same context offers loan.offer under the default review...
    expect(Policy.evaluate(policy, context).offered).toContain("loan.offer")
    // ...but loan.offer takes a customer and carries no pii tag; credit.score carries it.
    const evaluation = Policy.evaluate(strict, context)
    expect(evaluation.offered).toContain("credit.score")
    expect(evaluation.offered).toContain("account.balance")
    expect(evaluation.left.get("loan.offer")).toMatchObject({ kind: "review" })
    expect([...new Set(Policy.review(strict).map((finding) => finding.tool))]).toEqual(["loan.offer", "account.notes"])
  })
})

describe("Review.plan: a composed contract, reviewed as a whole", () => {
  // A loan application as a sequence of atomic tools: score the customer,
  // quote the loan the score allows, then file the application.
  const loanDesk = () => {
    const desk = makeDesk()
    const Quote = Tool.read("loan.quote", {
      title: "Quote a loan",
      description: "The loan a customer with this band may get.",
      input: Schema.Struct({ customer: Schema.String }),
      output: Schema.Struct({ amount: Schema.Number }),
      facts: { "loan.quoted": () => true },
      run: () => Effect.succeed({ amount: 5000 })
    })
    const Apply = Tool.write("loan.apply", {
      title: "Apply for a loan",
      description: "Files the loan application.",
      input: Schema.Struct({ customer: Schema.String, amount: Schema.Number }),
      output: Schema.Struct({ id: Schema.String }),
      sideEffects: ["files a loan application"],
      run: () => Effect.succeed({ id: "L-1" })
    })
    const toolkit = Toolkit.make(...desk.toolkit.tools, Quote, Apply)
    const planContracts = [
      ...contracts(desk),
      Contract.make(Quote, {
        preconditions: [Contract.precondition("scored", Condition.equals("facts.credit.band", "good"), "Score first.")]
      }),
      Contract.make(Apply, {
        preconditions: [Contract.precondition("quoted", Condition.equals("facts.loan.quoted", true), "Quote first.")]
      })
    ]
    const LoanApplication = Plan.make("loan-application", {
      input: Schema.Struct({ customer: Schema.String }),
      writes: [Apply],
      steps: ({ customer }, step) =>
        Effect.gen(function*() {
          yield* step.read("score", desk.tools.CreditScore, { customer })
          const quote = yield* step.read("quote", Quote, { customer })
          return yield* step.write("apply", Apply, { customer, amount: quote.amount })
        })
    })
    return { desk, toolkit, planContracts, LoanApplication, Quote, Apply }
  }

  it("the steps in order pass: each precondition reads a fact an earlier step records", () => {
    const { Apply, LoanApplication, Quote, desk, planContracts, toolkit } = loanDesk()
    expect(
      Review.plan(LoanApplication, toolkit, { contracts: planContracts, steps: [desk.tools.CreditScore, Quote, Apply] })
    ).toEqual([])
  })

  it("out of order: the step that reads a fact before it is recorded is named, with the step that records it", () => {
    const { Apply, LoanApplication, Quote, desk, planContracts, toolkit } = loanDesk()
    const findings = Review.plan(LoanApplication, toolkit, {
      contracts: planContracts,
      steps: [Quote, desk.tools.CreditScore, Apply]
    })
    expect(findings).toEqual([{
      tool: "loan.quote",
      question: 2,
      title: "precondition not evaluable",
      plan: "loan-application",
      step: 1,
      message: "plan loan-application, step 1: loan.quote: precondition scored reads facts.credit.band, a fact " +
        "recorded only by step 2 (credit.score), not before step 1"
    }])
    // The toolkit-wide review does not see the order: every fact is recorded by some tool.
    expect(Review.run(toolkit, { contracts: planContracts })).toEqual([])
  })

  it("a step's own review fails the plan; a plan that hides a declared write or names an unknown step is refused", () => {
    const { Apply, LoanApplication, desk, planContracts, toolkit } = loanDesk()
    const Careless = Tool.write("loan.apply", {
      ...Apply,
      sideEffects: undefined,
      run: () => Effect.succeed({ id: "x" })
    })
    const carelessKit = Toolkit.make(...desk.toolkit.tools, Careless)
    const findings = Review.plan(LoanApplication, carelessKit, {
      contracts: [...contracts(desk)],
      steps: ["credit.score", "loan.apply"]
    })
    expect(findings.map((finding) => [finding.step, finding.tool, finding.question])).toEqual([[2, "loan.apply", 3]])
    expect(() => Review.plan(LoanApplication, toolkit, { contracts: planContracts, steps: ["credit.score"] })).toThrow(
      "plan loan-application declares the write tool loan.apply, which is not among its steps"
    )
    expect(() => Review.plan(LoanApplication, toolkit, { steps: ["credit.scor", "loan.apply"] })).toThrow(
      "plan loan-application: step 1 names credit.scor, which is not in the toolkit"
    )
    expect(() => Review.plan(LoanApplication, toolkit, { steps: [] })).toThrow("name its steps, in order")
  })
})

describe("Policy.review question 5: a guard open on an absent fact", () => {
  const transfers = (when: Condition.Condition) =>
    Policy.make([
      ...guidelines.filter((guideline) => guideline.id !== "transfers"),
      Guideline.make("transfers", { description: "Transfers.", when, tools: ["transfer.send"] })
    ], { toolkit: makeDesk().toolkit, contracts: contracts(makeDesk()) })

  it("flags a guideline that authorizes a send while the fact it reads was never recorded, and turns the send off", () => {
    const policy = transfers(
      Condition.or(Condition.role("manager"), Condition.equals("facts.account.frozen", false))
    )
    expect(Policy.review(policy)).toEqual([expect.objectContaining({
      tool: "transfer.send",
      question: 5,
      title: "guard open on an absent fact",
      message: expect.stringMatching(
        /guideline transfers authorizes transfer.send .* with facts.account.frozen never recorded, in role = "manager"/
      )
    })])
    const looked = { role: "manager", facts: { "account.frozen": false } }
    expect(Policy.evaluate(policy, looked).left.get("transfer.send")).toMatchObject({ kind: "review" })
  })

  it("passes \"unless frozen\" written as the fact recorded false, and a forbid over the fact", () => {
    const policy = transfers(Condition.and(Condition.role("manager"), Condition.equals("facts.account.frozen", false)))
    expect(Policy.review(policy)).toEqual([])
    // Unknown is not false: `not frozen` authorizes nothing until the account is looked up.
    const negated = transfers(
      Condition.and(Condition.role("manager"), Condition.not(Condition.equals("facts.account.frozen", true)))
    )
    expect(Policy.review(negated)).toEqual([])
    expect(Policy.evaluate(negated, { role: "manager" }).offered).not.toContain("transfer.send")
    expect(Policy.evaluate(negated, { role: "manager", facts: { "account.frozen": false } }).offered).toContain(
      "transfer.send"
    )
  })
})
