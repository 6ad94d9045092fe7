// OpenAI function definitions from Effect schemas. Strict mode accepts a
// subset of JSON Schema: every property required (optional ones nullable),
// `additionalProperties: false` on every object, an object at the root, and
// only a few keywords. Constraints strict mode cannot carry (lengths, ranges,
// patterns) move into the description, and decoding still enforces them. A
// schema that cannot be strict at all (a record, a tuple) is sent with
// `strict: false` rather than misdescribed.
import { builtOnce } from "./toolState.js"
import type { Schema } from "effect"
import type { FunctionSchema, JsonSchema } from "../LanguageModel.js"
import type { Any } from "../Tool.js"
import { toWire } from "../Wire.js"
import { fastStrict } from "./fastSchema.js"
import { documentOf } from "./jsonSchema.js"

type Node = { [key: string]: unknown }

// Told to the model in an open-world tool's description.
export const openWorldNote = "(Open world: what you pass to this tool is sent outside this system.)"

const isNode = (u: unknown): u is Node => typeof u === "object" && u !== null && !Array.isArray(u)

// An own property, whatever its name (`__proto__` included).
const setOwn = (node: Node, key: string, value: unknown) =>
  Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true })

// The keywords kept; everything else is dropped or becomes a hint.
const kept = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "anyOf",
  "$ref",
  "$defs",
  "description"
])

const hints: Record<string, (value: unknown) => string> = {
  minLength: (v) => `at least ${v} characters`,
  maxLength: (v) => `at most ${v} characters`,
  pattern: (v) => `matches /${v}/`,
  format: (v) => `format ${v}`,
  minimum: (v) => `at least ${v}`,
  maximum: (v) => `at most ${v}`,
  exclusiveMinimum: (v) => `more than ${v}`,
  exclusiveMaximum: (v) => `less than ${v}`,
  multipleOf: (v) => `a multiple of ${v}`,
  minItems: (v) => `at least ${v} items`,
  maxItems: (v) => `at most ${v} items`
}

const nullable = (schema: Node): Node => {
  if (typeof schema.type === "string" && schema.type !== "null" && schema.enum === undefined) {
    return { ...schema, type: [schema.type, "null"] }
  }
  if (Array.isArray(schema.enum) && !schema.enum.includes(null)) {
    const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type]
    return { ...schema, type: [...types, "null"], enum: [...schema.enum, null] }
  }
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: [...schema.anyOf, { type: "null" }] }
  return { anyOf: [schema, { type: "null" }] }
}

const strictNode = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(strictNode)
  if (!isNode(schema)) return schema
  const out: Node = {}
  const said: Array<string> = []
  for (const [key, value] of Object.entries(schema)) {
    if (key === "const") out.enum = [value]
    else if (key in hints) said.push(hints[key]!(value))
    else if (!kept.has(key)) continue
    else if (key === "properties" || key === "$defs") {
      const properties: Node = {}
      for (const [name, property] of Object.entries(value as Node)) setOwn(properties, name, strictNode(property))
      out[key] = properties
    } else if (key === "additionalProperties" && isNode(value)) out[key] = strictNode(value)
    else out[key] = strictNode(value)
  }
  if (said.length > 0) {
    const text = said.join(", ")
    const description = typeof out.description === "string" ? out.description : ""
    out.description = description.includes(text) ? description : `${description}${description ? " " : ""}(${text})`
  }
  if (schema.type === "object" || isNode(schema.properties)) {
    const properties = (out.properties ?? {}) as Node
    const required = new Set(Array.isArray(schema.required) ? schema.required as Array<string> : [])
    for (const name of Object.keys(properties)) {
      if (!required.has(name)) setOwn(properties, name, nullable(properties[name] as Node))
    }
    out.type = "object"
    out.properties = properties
    out.required = Object.keys(properties)
    if (!isNode(out.additionalProperties)) out.additionalProperties = false
  }
  return out
}

// What keeps a schema out of strict mode, with where it is.
export const strictViolations = (parameters: unknown): Array<string> => {
  const violations: Array<string> = []
  const visit = (node: unknown, path: string, depth: number) => {
    if (Array.isArray(node)) return node.forEach((item, i) => visit(item, `${path}[${i}]`, depth))
    if (!isNode(node)) return
    for (const key of Object.keys(node)) {
      if (!kept.has(key)) violations.push(`${path}: keyword '${key}' is not allowed`)
    }
    if (node.type === "object" || isNode(node.properties)) {
      if (depth > 10) violations.push(`${path}: nested deeper than 10 objects`)
      if (node.additionalProperties !== false) violations.push(`${path}: additionalProperties must be false`)
      const properties = isNode(node.properties) ? Object.keys(node.properties) : []
      const required = Array.isArray(node.required) ? node.required : []
      for (const name of properties) {
        if (!required.includes(name)) violations.push(`${path}.${name}: every property must be required`)
      }
    }
    if (node.items !== undefined && !isNode(node.items)) violations.push(`${path}: items must be one schema`)
    if (isNode(node.properties)) {
      for (const [name, child] of Object.entries(node.properties)) visit(child, `${path}.${name}`, depth + 1)
    }
    if (isNode(node.$defs)) { for (const [name, child] of Object.entries(node.$defs)) visit(child, `$defs.${name}`, 1) }
    if (node.items !== undefined) visit(node.items, `${path}[]`, depth)
    if (Array.isArray(node.anyOf)) node.anyOf.forEach((branch, i) => visit(branch, `${path}|${i}`, depth))
    if (isNode(node.additionalProperties)) visit(node.additionalProperties, `${path}{}`, depth)
  }
  if (!isNode(parameters) || parameters.type !== "object") violations.push("the root must be an object")
  else if (Array.isArray(parameters.anyOf)) violations.push("the root may not be anyOf")
  visit(parameters, "$", 1)
  return violations
}

// Removes `null` where the original schema had an optional property, so the
// Effect schema sees a missing key, as it was written.
const absentNulls = (value: unknown, schema: unknown, defs: Node): unknown => {
  if (!isNode(schema)) return value
  if (typeof schema.$ref === "string") return absentNulls(value, defs[schema.$ref.replace("#/$defs/", "")], defs)
  if (Array.isArray(value) && isNode(schema.items)) return value.map((item) => absentNulls(item, schema.items, defs))
  if (Array.isArray(schema.anyOf) && isNode(value)) {
    for (const branch of schema.anyOf) {
      const resolved = isNode(branch) && typeof branch.$ref === "string"
        ? defs[branch.$ref.replace("#/$defs/", "")]
        : branch
      if (isNode(resolved) && isNode(resolved.properties)) return absentNulls(value, resolved, defs)
    }
    return value
  }
  if (!isNode(value) || !isNode(schema.properties)) return value
  const required = new Set(Array.isArray(schema.required) ? schema.required as Array<string> : [])
  const out: Node = {}
  for (const [key, item] of Object.entries(value)) {
    if (item === null && !required.has(key) && key in schema.properties) continue
    setOwn(out, key, absentNulls(item, schema.properties[key], defs))
  }
  return out
}

const identity = <A>(a: A): A => a

// Whether any object in the schema has a property that is not required.
const hasOptional = (schema: unknown, defs: Node): boolean => {
  const seen = new Set<unknown>()
  const visit = (node: unknown): boolean => {
    if (Array.isArray(node)) return node.some(visit)
    if (!isNode(node) || seen.has(node)) return false
    seen.add(node)
    if (isNode(node.properties)) {
      const required = Array.isArray(node.required) ? node.required : []
      if (Object.keys(node.properties).some((name) => !required.includes(name))) return true
    }
    if (typeof node.$ref === "string" && visit(defs[node.$ref.replace("#/$defs/", "")])) return true
    return Object.values(node).some(visit)
  }
  return visit(schema)
}

export interface Compiled {
  readonly definition: FunctionSchema
  /** Why the definition is not strict; empty when it is. */
  readonly violations: ReadonlyArray<string>
  /** Prepares parsed arguments for decoding with the tool's input schema. */
  readonly normalize: (args: unknown) => unknown
}

// The general path: the schema's JSON Schema (jsonSchema.ts), made strict where it can be.
export const general = (input: Schema.Top) => {
  // An empty struct means "no arguments"; Effect decodes any value but null
  // with it, which no model needs and strict mode refuses.
  const ast = input.ast
  const empty = ast._tag === "Objects" && ast.propertySignatures.length === 0 && ast.indexSignatures.length === 0 &&
    ast.checks === undefined && ast.encoding === undefined
  const document = empty
    ? { schema: { type: "object", required: [], properties: {}, additionalProperties: false }, defs: {} }
    : documentOf(ast)
  const made = document.schema
  const defs = document.defs as Node
  // OpenAI wants an object at the top, not a reference to one.
  const original: Node = typeof made.$ref === "string"
    ? { ...(defs[made.$ref.replace("#/$defs/", "")] as Node), ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}) }
    : Object.keys(defs).length > 0
    ? { ...made, $defs: defs }
    : made
  const parameters = strictNode(original) as Node
  if (isNode(parameters.$defs) && Object.keys(parameters.$defs).length === 0) delete parameters.$defs
  return { original, defs, parameters, violations: strictViolations(parameters) }
}

/** The function schema a model is shown for `tool`, made the first time it is listed or called. */
export const compile = (tool: Any): Compiled =>
  builtOnce(tool, "compiled", () => {
    const fast = fastStrict(tool.input.ast)
    let slow = fast === undefined ? general(tool.input) : undefined
    const parameters = fast ?? slow!.parameters
    const violations = slow?.violations ?? []
    let normalizer: ((args: unknown) => unknown) | undefined
    const compiled: Compiled = {
      definition: {
        type: "function",
        name: toWire(tool.name),
        description: tool.openWorld === true ? `${tool.description} ${openWorldNote}` : tool.description,
        parameters: parameters as JsonSchema,
        strict: violations.length === 0
      },
      violations,
      normalize: (args) => {
        // Most inputs have no optional field: then there is no null to remove.
        // Decided on the first call, so listing cold tools does not pay for it.
        if (normalizer === undefined) {
          slow ??= general(tool.input)
          const { defs, original } = slow
          normalizer = hasOptional(original, defs) ? (value) => absentNulls(value, original, defs) : identity
        }
        return normalizer(args)
      }
    }
    return compiled
  })
