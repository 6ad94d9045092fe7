// OpenAI function definitions from Effect schemas, in the form strict mode
// accepts: every property required, optional ones nullable, no additional
// properties, no keywords strict mode rejects. A model that follows such a
// schema sends `null` for an optional field it leaves out; `absentNulls`
// turns those back into missing keys before decoding.
import { JSONSchema } from "effect"
import type { FunctionSchema, JsonSchema } from "../LanguageModel.js"
import type { Any } from "../Tool.js"
import { toWire } from "../Wire.js"

// Keywords OpenAI's strict mode refuses; the schema still enforces them when
// the arguments are decoded, and the model is told what was wrong.
const unsupported = new Set([
  "$schema",
  "$id",
  "title",
  "default",
  "examples",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
  "patternProperties",
  "propertyNames",
  "format",
  "pattern",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "contentMediaType",
  "contentEncoding",
  "not",
  "if",
  "then",
  "else"
])

type Node = { [key: string]: unknown }

const isNode = (u: unknown): u is Node => typeof u === "object" && u !== null && !Array.isArray(u)

const nullable = (schema: Node): Node => {
  if (typeof schema.type === "string" && schema.type !== "null" && schema.enum === undefined) {
    return { ...schema, type: [schema.type, "null"] }
  }
  return { anyOf: [schema, { type: "null" }] }
}

export const strict = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(strict)
  if (!isNode(schema)) return schema
  const out: Node = {}
  for (const [key, value] of Object.entries(schema)) {
    if (unsupported.has(key)) continue
    if (key === "properties" || key === "$defs") {
      const properties: Node = {}
      for (const [name, property] of Object.entries(value as Node)) properties[name] = strict(property)
      out[key] = properties
    } else {
      out[key] = strict(value)
    }
  }
  if (schema.type === "object" || isNode(schema.properties)) {
    const properties = (out.properties ?? {}) as Node
    const required = new Set(Array.isArray(schema.required) ? schema.required as Array<string> : [])
    for (const name of Object.keys(properties)) {
      if (!required.has(name)) properties[name] = nullable(properties[name] as Node)
    }
    out.type = "object"
    out.properties = properties
    out.required = Object.keys(properties)
    out.additionalProperties = false
  }
  return out
}

// Removes `null` where the original schema had an optional property, so the
// Effect schema sees a missing key, as it was written.
export const absentNulls = (value: unknown, schema: unknown, defs: Node): unknown => {
  if (!isNode(schema)) return value
  if (typeof schema.$ref === "string") {
    const target = defs[schema.$ref.replace("#/$defs/", "")]
    return absentNulls(value, target, defs)
  }
  if (Array.isArray(value) && isNode(schema.items)) return value.map((item) => absentNulls(item, schema.items, defs))
  if (Array.isArray(schema.anyOf) && value !== null) {
    // Only one branch can apply to an object cleanly; try the object branches.
    for (const branch of schema.anyOf) {
      if (isNode(branch) && isNode(branch.properties) && isNode(value)) return absentNulls(value, branch, defs)
    }
    return value
  }
  if (!isNode(value) || !isNode(schema.properties)) return value
  const required = new Set(Array.isArray(schema.required) ? schema.required as Array<string> : [])
  const out: Node = {}
  for (const [key, item] of Object.entries(value)) {
    if (item === null && !required.has(key) && key in schema.properties) continue
    out[key] = absentNulls(item, schema.properties[key], defs)
  }
  return out
}

export interface Compiled {
  readonly definition: FunctionSchema
  /** Prepares parsed arguments for decoding with the tool's input schema. */
  readonly normalize: (args: unknown) => unknown
}

const cache = new WeakMap<Any, Compiled>()

export const compile = (tool: Any): Compiled => {
  const cached = cache.get(tool)
  if (cached !== undefined) return cached
  const made = JSONSchema.make(tool.input) as unknown as Node
  const defs = (isNode(made.$defs) ? made.$defs : {}) as Node
  // OpenAI wants an object at the top, not a reference to one.
  const original: Node = typeof made.$ref === "string"
    ? { ...(defs[made.$ref.replace("#/$defs/", "")] as Node), $defs: defs }
    : made
  const compiled: Compiled = {
    definition: {
      type: "function",
      name: toWire(tool.name),
      description: tool.description,
      parameters: strict(original) as JsonSchema,
      strict: true
    },
    normalize: (args) => absentNulls(args, original, defs)
  }
  cache.set(tool, compiled)
  return compiled
}
