// Strict-mode parameters straight from a schema's AST, for the shapes most
// tools use: structs (nested, with optional fields) of strings, numbers and
// booleans, and arrays of them, described or not. The general path (the
// JSON Schema of jsonSchema.ts, then made strict) copies every node twice,
// and function schemas for a thousand fresh tools should take milliseconds.
// Anything else returns undefined and takes that general path; a property
// test keeps both paths giving the same text for every shape handled here.
import type { SchemaAST as AST } from "effect"
import { presentType } from "./jsonSchema.js"

type Node = { [key: string]: unknown }

// A keyword with no annotations of its own is the same small node in every
// definition: shared, and frozen so that no caller can change it for all.
const keywords = {
  String: Object.freeze({ type: "string" }) as Node,
  Number: Object.freeze({ type: "number" }) as Node,
  Boolean: Object.freeze({ type: "boolean" }) as Node
} as const

// Only a title and a description: anything else (an identifier, examples, a
// default, a JSON Schema override) is left to the general path.
const plain = (annotations: AST.AST["annotations"]): boolean => {
  if (annotations === undefined) return true
  for (const key of Reflect.ownKeys(annotations)) {
    if (key !== "title" && key !== "description") return false
  }
  return true
}

// No checks, no encoding, and annotations the general path would only take a description from.
const simple = (ast: AST.AST): boolean =>
  ast.checks === undefined && ast.encoding === undefined && plain(ast.annotations) &&
  plain(ast.context?.annotations)

const describe = (node: Node, description: unknown): Node => {
  if (typeof description === "string") node.description = description
  return node
}

// `depth` counts as strict mode does: the root is 1, each property one more.
const strictOf = (ast: AST.AST, depth: number): Node | undefined => {
  if (!simple(ast)) return undefined
  const description = ast.annotations?.description
  switch (ast._tag) {
    case "String":
    case "Number":
    case "Boolean":
      // The common case, without allocating.
      return description === undefined ? keywords[ast._tag] : describe({ type: keywords[ast._tag].type }, description)
    case "Arrays": {
      if (ast.elements.length !== 0 || ast.rest.length !== 1) return undefined
      const items = strictOf(ast.rest[0]!, depth)
      return items === undefined ? undefined : describe({ type: "array", items }, description)
    }
    case "Objects": {
      // Deeper than strict mode allows: the general path says why.
      if (ast.indexSignatures.length > 0 || depth > 10) return undefined
      const properties: Node = {}
      const required: Array<string> = []
      for (const signature of ast.propertySignatures) {
        if (typeof signature.name !== "string" || signature.name === "__proto__") return undefined
        const optional = signature.type.context?.isOptional === true
        const type = optional ? presentType(signature.type) : signature.type
        // A union left is not `T | undefined` alone.
        if (type._tag === "Union" || !plain(signature.type.context?.annotations)) return undefined
        const property = strictOf(type, depth + 1)
        if (property === undefined) return undefined
        const key = signature.type.context?.annotations?.description
        const own = typeof key === "string" ? describe({ ...property }, key) : property
        properties[signature.name] = optional ? nullable(own) : own
        required.push(signature.name)
      }
      return describe({ type: "object", required, properties, additionalProperties: false }, description)
    }
    default:
      return undefined
  }
}

// Copied then changed, keeping the key order the general path produces.
const nullable = (node: Node): Node => Object.assign({}, node, { type: [node.type, "null"] })

/** The strict parameters of an input schema, or undefined for the general path. */
export const fastStrict = (ast: AST.AST): Node | undefined => {
  if (ast._tag !== "Objects" || ast.propertySignatures.length === 0) return undefined
  return strictOf(ast, 1)
}
