// McpImport's implementation: a foreign MCP server's tools as graded tools,
// under grades the importer declares. The server's annotations are recorded
// as claims and never change a grade.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import type { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv-provider.js"
import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation/types.js"
import { Effect, Result, Schema } from "effect"
import { Grade, Tool, Toolkit, Wire } from "@graded/core"
import { foreignValidator } from "./linearPatterns.js"

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

// The tags, for the classes and for the failure messages keyed by them.
const tags = {
  ServerError: "@graded/mcp/McpImport/ServerError",
  BadResult: "@graded/mcp/McpImport/BadResult",
  Unreachable: "@graded/mcp/McpImport/Unreachable",
  Changed: "@graded/mcp/McpImport/Changed"
} as const

export class ServerError extends Schema.TaggedError<ServerError>()(tags.ServerError, {
  tool: Schema.String,
  text: Schema.String
}) {
  override get message(): string {
    return `${this.tool}: the MCP server answered with an error: ${this.text}`
  }
}

export class BadResult extends Schema.TaggedError<BadResult>()(tags.BadResult, {
  tool: Schema.String,
  issue: Schema.String
}) {
  override get message(): string {
    return `${this.tool}: the MCP server returned a result its schema does not allow: ${this.issue}`
  }
}

export class Unreachable extends Schema.TaggedError<Unreachable>()(tags.Unreachable, {
  tool: Schema.String,
  reason: Schema.Literals(["closed", "timeout", "protocol"]),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.tool}: the MCP server could not be reached (${this.reason}): ${this.detail}`
  }
}

export class ImportFailed extends Schema.TaggedError<ImportFailed>()("@graded/mcp/McpImport/ImportFailed", {
  reason: Schema.String
}) {
  override get message(): string {
    return `Could not import the MCP server's tools: ${this.reason}`
  }
}

export class Changed extends Schema.TaggedError<Changed>()(tags.Changed, {
  tool: Schema.String,
  change: Schema.Literals(["removed", "input", "unlisted"]),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.tool}: the tool changed on its MCP server since it was imported (${this.change}): ${this.detail}`
  }
}

export type CallError = ServerError | BadResult | Unreachable | Changed

export const failureMessages = (name: string): Readonly<Record<string, string>> => ({
  [tags.ServerError]: `${name} failed on the MCP server.`,
  [tags.BadResult]: `${name} returned a result its schema does not allow; it was discarded.`,
  [tags.Unreachable]: `${name} could not be reached: its MCP server closed, timed out or broke the protocol.`,
  [tags.Changed]: `${name} changed on its MCP server since it was imported; the call was not made.`
})

// ---------------------------------------------------------------------------
// JSON Schema → Effect Schema
// ---------------------------------------------------------------------------

// Keywords the conversion understands; a node with any other keyword (a
// `pattern`, a `minimum`, a `$ref`, `anyOf`…) becomes `Schema.Any` carrying
// its JSON Schema, and the whole value is checked by AJV all the same.
const known = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "description",
  "title",
  "$schema"
])

type Json = { readonly [key: string]: unknown }

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

type AnySchema = Schema.Codec<any, any>

// Its JSON Schema is the foreign node itself. On `Schema.Any`, not `Unknown`:
// Effect 4's JSON Schema output drops the checks of an `Unknown`.
const opaque = (node: unknown): AnySchema =>
  Schema.Any.check(Schema.makeFilter(() => undefined, { toJsonSchema: () => isObject(node) ? node : {} }))

const ofType = (type: string, node: Json): AnySchema | undefined => {
  switch (type) {
    case "string":
      return Schema.String
    case "number":
      return Schema.Number
    case "integer":
      return Schema.Int
    case "boolean":
      return Schema.Boolean
    case "null":
      return Schema.Null
    case "array":
      return Schema.Array(node.items === undefined ? Schema.Unknown : convert(node.items))
    case "object": {
      const properties = isObject(node.properties) ? node.properties : {}
      const required = new Set(Array.isArray(node.required) ? node.required.map(String) : [])
      const fields: Record<string, AnySchema | Schema.optionalKey<AnySchema>> = {}
      for (const [key, value] of Object.entries(properties)) {
        const field = convert(value)
        // JSON has no `undefined`: a field not required may be absent, not undefined.
        fields[key] = required.has(key) ? field : Schema.optionalKey(field)
      }
      return node.additionalProperties === false
        ? Schema.Struct(fields) as AnySchema
        : Schema.StructWithRest(Schema.Struct(fields), [Schema.Record(Schema.String, Schema.Unknown)]) as AnySchema
    }
    default:
      return undefined
  }
}

/** One node of a JSON Schema as an Effect Schema, for the common subset; anything else is opaque. */
export const convert = (node: unknown): AnySchema => {
  if (!isObject(node)) return opaque(node)
  if (Object.keys(node).some((key) => !known.has(key))) return opaque(node)
  const annotate = (schema: AnySchema): AnySchema =>
    typeof node.description === "string" ? schema.annotate({ description: node.description }) : schema
  if (Array.isArray(node.enum)) {
    const values = node.enum
    if (values.length === 0 || node.type !== undefined && typeof node.type !== "string") return opaque(node)
    if (!values.every((v) => v === null || ["string", "number", "boolean"].includes(typeof v))) return opaque(node)
    const literals = values.filter((v): v is string | number | boolean => v !== null)
    const members: Array<AnySchema> = [
      ...(literals.length > 0 ? [Schema.Literals(literals)] : []),
      ...(values.includes(null) ? [Schema.Null] : [])
    ]
    return annotate(members.length === 1 ? members[0]! : Schema.Union(members))
  }
  const types = typeof node.type === "string" ? [node.type] : Array.isArray(node.type) ? node.type : undefined
  if (types === undefined || types.length === 0) return opaque(node)
  const members = types.map((type) => typeof type === "string" ? ofType(type, node) : undefined)
  if (members.some((member) => member === undefined)) return opaque(node)
  const schemas = members as Array<AnySchema>
  return annotate(schemas.length === 1 ? schemas[0]! : Schema.Union(schemas))
}

/** How deep a foreign schema may nest (objects and arrays): deeper, it is refused before anything recurses over it. */
export const maxSchemaDepth = 100

/** Whether a JSON value nests deeper than `limit`, and whether it names a schema (`$id`), walked without recursion. */
const survey = (value: unknown, limit: number): { readonly tooDeep: boolean; readonly named: boolean } => {
  const pending: Array<readonly [unknown, number]> = [[value, 1]]
  let named = false
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!
    if (typeof node !== "object" || node === null) continue
    if (depth > limit) return { tooDeep: true, named }
    if (!Array.isArray(node) && Object.hasOwn(node, "$id")) named = true
    for (const child of Object.values(node)) pending.push([child, depth + 1])
  }
  return { tooDeep: false, named }
}

export const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** A foreign JSON Schema made ready to check values: the exact check, and the Effect Schema built on it. */
export interface Compiled {
  /** What is wrong with a value, or undefined when the exact JSON Schema allows it. */
  readonly check: (value: unknown) => string | undefined
  /** The converted subset, refined by `check`. */
  readonly schema: AnySchema
}

/** Compiles a foreign JSON Schema, or says why it cannot be. */
export type Compile = (schema: unknown) => Result.Result<Compiled, string>

/**
 * A compiler for the schemas of one listing. AJV keeps what it compiled for as
 * long as it lives, by `$id` among others: one AJV per listing lets go of it
 * with the listing, and a schema that names itself gets an AJV of its own, so
 * no schema (of another server, or of an earlier listing) is taken for it.
 */
export const makeCompiler = (): Compile => {
  const shared = foreignValidator()
  const compiled = new WeakMap<object, Result.Result<Compiled, string>>()
  return (schema) => {
    if (!isObject(schema)) return Result.fail("the schema is not a JSON object")
    const known = compiled.get(schema)
    if (known !== undefined) return known
    const outcome = compileWith(shared, schema)
    compiled.set(schema, outcome)
    return outcome
  }
}

const compileWith = (shared: AjvJsonSchemaValidator, schema: Json): Result.Result<Compiled, string> => {
  const { named, tooDeep } = survey(schema, maxSchemaDepth)
  if (tooDeep) return Result.fail(`the schema nests deeper than ${maxSchemaDepth} levels`)
  try {
    const validate = (named ? foreignValidator() : shared).getValidator(schema as JsonSchemaType)
    const check = (value: unknown): string | undefined => {
      try {
        const verdict = validate(value)
        return verdict.valid ? undefined : verdict.errorMessage ?? "the value does not match the schema"
      } catch (error) {
        return `the value could not be checked: ${messageOf(error)}`
      }
    }
    // The check adds nothing to the JSON Schema: the converted subset says what it can.
    const refined = convert(schema).check(Schema.makeFilter(check, { toJsonSchema: () => ({}) }))
    return Result.succeed({ check, schema: refined })
  } catch (error) {
    // AJV refuses it: an unknown type, a $ref it cannot resolve, a pattern that is no regular expression
    // or one that needs backtracking (foreignValidator).
    return Result.fail(messageOf(error))
  }
}

/**
 * The Effect Schema for a tool's JSON Schema: the converted subset, and on top
 * the exact JSON Schema checked by the SDK's own AJV validator, so a keyword the
 * conversion does not know still holds. Throws when the schema cannot be compiled.
 */
export const fromJsonSchema = (schema: unknown): AnySchema =>
  Result.match(makeCompiler()(schema), {
    onFailure: (problem) => {
      throw new Error(`The JSON Schema cannot be compiled: ${problem}`)
    },
    onSuccess: (compiled) => compiled.schema
  })

// ---------------------------------------------------------------------------
// Calls
// ---------------------------------------------------------------------------

export interface CallOptions {
  readonly timeout?: number | undefined
}

const failureOf = (tool: string, error: unknown): CallError => {
  if (error instanceof McpError) {
    if (error.code === ErrorCode.ConnectionClosed) {
      return new Unreachable({ tool, reason: "closed", detail: error.message })
    }
    if (error.code === ErrorCode.RequestTimeout) {
      return new Unreachable({ tool, reason: "timeout", detail: error.message })
    }
    // The SDK client checks structured content against the listed output schema itself.
    if (/output schema|structured content/i.test(error.message)) return new BadResult({ tool, issue: error.message })
    return new Unreachable({ tool, reason: "protocol", detail: error.message })
  }
  const detail = error instanceof Error ? error.message : String(error)
  return /not connected|closed/i.test(detail)
    ? new Unreachable({ tool, reason: "closed", detail })
    : new Unreachable({ tool, reason: "protocol", detail })
}

const textOf = (content: unknown): string =>
  Array.isArray(content)
    ? content.flatMap((part) =>
      isObject(part) && part.type === "text" && typeof part.text === "string" ? [part.text] : []
    )
      .join("\n")
    : ""

/** Calls one tool of the server and checks what comes back. */
export const call = (
  client: Client,
  name: string,
  serverName: string,
  output: AnySchema | undefined,
  options: CallOptions,
  args: unknown,
  idempotencyKey?: string
): Effect.Effect<unknown, CallError> =>
  Effect.tryPromise({
    try: (signal) =>
      client.callTool(
        {
          name: serverName,
          arguments: args as Record<string, unknown>,
          ...(idempotencyKey !== undefined ? { _meta: { "graded/idempotencyKey": idempotencyKey } } : {})
        },
        undefined,
        { signal, ...(options.timeout !== undefined ? { timeout: options.timeout } : {}) }
      ),
    catch: (error) => failureOf(name, error)
  }).pipe(
    Effect.flatMap((result): Effect.Effect<unknown, CallError> => {
      if (!isObject(result)) return Effect.fail(new BadResult({ tool: name, issue: "the result is not an object" }))
      if (result.isError === true) return Effect.fail(new ServerError({ tool: name, text: textOf(result.content) }))
      if (output === undefined) return Effect.succeed(textOf(result.content))
      if (result.structuredContent === undefined) {
        return Effect.fail(
          new BadResult({ tool: name, issue: "no structured content, though the tool lists an output schema" })
        )
      }
      return Schema.decodeUnknownEffect(output)(result.structuredContent).pipe(
        Effect.mapError((error) => new BadResult({ tool: name, issue: error.message }))
      )
    })
  )

// ---------------------------------------------------------------------------
// The toolkit
// ---------------------------------------------------------------------------

export interface Claim {
  readonly tool: string
  readonly serverName: string
  readonly grade: Grade.Grade
  readonly graded: boolean
  readonly annotations: {
    readonly title?: string | undefined
    readonly readOnlyHint?: boolean | undefined
    readonly destructiveHint?: boolean | undefined
    readonly idempotentHint?: boolean | undefined
    readonly openWorldHint?: boolean | undefined
  }
}

export interface Mismatch {
  readonly tool: string
  readonly serverName: string
  readonly grade: Grade.Grade
  readonly claimed: "readOnlyHint"
  readonly message: string
}

export interface Skipped {
  readonly serverName: string
  readonly reason: string
}

export interface Report {
  readonly claims: ReadonlyArray<Claim>
  readonly mismatches: ReadonlyArray<Mismatch>
  readonly skipped: ReadonlyArray<Skipped>
}

export const reports = new WeakMap<object, Report>()

export interface Options extends CallOptions {
  readonly namespace?: string | undefined
}

const hints = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const

const claimText = (annotations: Claim["annotations"]): string => {
  const shown = hints.filter((hint) => annotations[hint] !== undefined).map((hint) => `${hint}=${annotations[hint]}`)
  return shown.length === 0 ? "" : `\n(Claimed by the MCP server, not verified: ${shown.join(", ")}.)`
}

export const mismatchMessage = (tool: string, grade: Grade.Grade): string =>
  `${tool}: the MCP server claims readOnlyHint, but the importer graded it ${grade}; the claim is not believed`

const grades = ["read", "write", "send"]

export type Listed = Awaited<ReturnType<Client["listTools"]>>["tools"][number]

/** How an imported tool reaches its server: by default, straight with the listing it was made from. */
export type Route = (
  name: string,
  listing: Listed,
  output: AnySchema | undefined
) => (args: unknown, idempotencyKey?: string) => Effect.Effect<unknown, CallError>

export const checkGrades = (
  gradesByName: { readonly [name: string]: Grade.Grade }
): Effect.Effect<void, ImportFailed> =>
  Effect.forEach(Object.entries(gradesByName), ([name, grade]) =>
    grades.includes(grade)
      ? Effect.void
      : Effect.fail(new ImportFailed({ reason: `${name} is graded '${String(grade)}': read, write or send` })), {
    discard: true
  })

/** The most pages a listing may take: past them, a server's cursor is taken to never end. */
export const maxPages = 100

/** The most tools a listing may hold, over all its pages. */
export const maxTools = 10_000

const listPage = (client: Client, cursor: string | undefined, options: CallOptions) =>
  Effect.tryPromise({
    // The signal ends the request when the import is interrupted.
    try: (signal) =>
      client.listTools(cursor === undefined ? undefined : { cursor }, {
        signal,
        ...(options.timeout !== undefined ? { timeout: options.timeout } : {})
      }),
    catch: (error) => new ImportFailed({ reason: messageOf(error) })
  })

/** Every tool the server lists, page by page, within `maxPages` and `maxTools`. */
export const list = (client: Client, options: CallOptions): Effect.Effect<Array<Listed>, ImportFailed> =>
  Effect.gen(function*() {
    const tools: Array<Listed> = []
    const cursors = new Set<string>()
    let cursor: string | undefined
    for (let pages = 1;; pages++) {
      const page = yield* listPage(client, cursor, options)
      tools.push(...page.tools)
      if (tools.length > maxTools) {
        return yield* new ImportFailed({ reason: `the server lists more than ${maxTools} tools (the limit)` })
      }
      cursor = page.nextCursor
      if (cursor === undefined) return tools
      if (cursors.has(cursor)) {
        return yield* new ImportFailed({ reason: `the server's listing repeats a cursor after page ${pages}` })
      }
      if (pages === maxPages) {
        return yield* new ImportFailed({ reason: `the server's listing runs past ${maxPages} pages (the limit)` })
      }
      cursors.add(cursor)
    }
  })

export const missingGraded = (
  gradesByName: { readonly [name: string]: Grade.Grade },
  listed: ReadonlyArray<Listed>
): ReadonlyArray<string> => Object.keys(gradesByName).filter((name) => !listed.some((tool) => tool.name === name))

export const toolkit = (
  client: Client,
  gradesByName: { readonly [name: string]: Grade.Grade },
  options: Options = {}
): Effect.Effect<Toolkit.Any, ImportFailed> =>
  Effect.gen(function*() {
    yield* checkGrades(gradesByName)
    const listed = yield* list(client, options)
    const missing = missingGraded(gradesByName, listed)
    if (missing.length > 0) {
      return yield* new ImportFailed({ reason: `the server does not list ${missing.join(", ")}` })
    }
    return yield* build(gradesByName, listed, options, (name, listing, output) => (args, key) =>
      call(client, name, listing.name, output, options, args, key))
  })

/** The graded tools of a listing, each reaching the server through `route`. */
export const build = (
  gradesByName: { readonly [name: string]: Grade.Grade },
  listed: ReadonlyArray<Listed>,
  options: Options,
  route: Route,
  compile: Compile = makeCompiler()
): Effect.Effect<Toolkit.Any, ImportFailed> =>
  Effect.gen(function*() {
    const namespace = options.namespace ?? "mcp"
    const tools: Array<Tool.Any> = []
    const claims: Array<Claim> = []
    const mismatches: Array<Mismatch> = []
    const skipped: Array<Skipped> = []
    for (const listing of listed) {
      const name = `${namespace}.${listing.name}`
      const graded = Object.hasOwn(gradesByName, listing.name)
      // A tool nobody graded whose name graded cannot carry is left out, and
      // reported: a server cannot block the import of its other tools with it.
      const problem = Wire.checkName(name)
      if (problem !== undefined && !graded) {
        skipped.push({ serverName: listing.name, reason: problem })
        continue
      }
      const schemas = compileListing(compile, listing)
      if (Result.isFailure(schemas)) {
        // As for a name: a tool nobody graded is left out; a graded one the importer counts on fails the import.
        if (!graded) {
          skipped.push({ serverName: listing.name, reason: schemas.failure })
          continue
        }
        return yield* new ImportFailed({ reason: `${listing.name}: ${schemas.failure}` })
      }
      const { input, output } = schemas.success
      // Unmapped: the safest grade, a send a human confirms.
      const grade: Grade.Grade = graded ? gradesByName[listing.name]! : "send"
      const annotations: Claim["annotations"] = { ...listing.annotations }
      claims.push({ tool: name, serverName: listing.name, grade, graded, annotations })
      if (annotations.readOnlyHint === true && Grade.isConfirmable(grade)) {
        mismatches.push({
          tool: name,
          serverName: listing.name,
          grade,
          claimed: "readOnlyHint",
          message: mismatchMessage(name, grade)
        })
      }
      const common = {
        title: listing.title ?? listing.annotations?.title ?? listing.name,
        description: `${listing.description ?? listing.name}${claimText(annotations)}`,
        input,
        output: output ?? Schema.String,
        // What a foreign server returns may carry instructions.
        untrusted: true,
        tags: ["mcp"],
        failureMessages: failureMessages(name)
      }
      const run = route(name, listing, output)
      const tool = yield* Effect.try({
        try: () => makeTool(name, grade, common, input, run),
        catch: (error) => new ImportFailed({ reason: messageOf(error) })
      })
      tools.push(tool)
    }
    const made = yield* Effect.try({
      try: () => (Toolkit.make as (...tools: ReadonlyArray<Tool.Any>) => Toolkit.Any)(...tools),
      catch: (error) => new ImportFailed({ reason: messageOf(error) })
    })
    reports.set(made, { claims, mismatches, skipped })
    return made
  }).pipe(
    // What a foreign server lists must never kill the importer: whatever it breaks fails the import.
    Effect.catchDefect((defect) =>
      Effect.fail(new ImportFailed({ reason: `the listing could not be imported: ${messageOf(defect)}` }))
    )
  )

/** A listing's input and output schemas compiled, or why one of them cannot be. */
export const compileListing = (
  compile: Compile,
  listing: Listed
): Result.Result<{ readonly input: AnySchema; readonly output: AnySchema | undefined }, string> =>
  Result.gen(function*() {
    const input = yield* Result.mapError(
      compile(listing.inputSchema),
      (why) => `its input schema cannot be compiled: ${why}`
    )
    const output = listing.outputSchema === undefined
      ? undefined
      : yield* Result.mapError(compile(listing.outputSchema), (why) => `its output schema cannot be compiled: ${why}`)
    return { input: input.schema, output: output?.schema }
  })

const makeTool = (
  name: string,
  grade: Grade.Grade,
  common: object,
  input: AnySchema,
  run: (args: unknown, key?: string) => Effect.Effect<unknown, CallError>
): Tool.Any =>
  grade === "read"
    ? Tool.read(name as "x.y", { ...common, run: (args: unknown) => run(args) } as any)
    : grade === "write"
    ? Tool.write(name as "x.y", {
      ...common,
      run: (args: unknown, delivery: Tool.Delivery) => run(args, delivery.idempotencyKey)
    } as any)
    : Tool.send(
      name as "x.y",
      {
        ...common,
        payload: input,
        // The human sees exactly the validated arguments the server will get.
        prepare: (args: unknown) => Effect.succeed(args),
        deliver: (confirmed: { payload: unknown; idempotencyKey: string }) =>
          run(confirmed.payload, confirmed.idempotencyKey)
      } as any
    )
