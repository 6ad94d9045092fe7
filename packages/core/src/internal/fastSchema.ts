// Strict-mode parameters straight from a schema's AST, for the shapes most
// tools use: structs (nested, with optional fields) of strings, numbers and
// booleans, and arrays of them, described or not. Going through Effect's
// JSONSchema.make and then making the result strict costs several times more,
// and function schemas for a thousand fresh tools should take milliseconds.
// Anything else returns undefined and takes that general path; a property
// test keeps both paths giving the same text for every shape handled here.
import { SchemaAST as AST } from "effect"

type Node = { [key: string]: unknown }

// A keyword with no annotations of its own is the same small node in every
// definition: shared, and frozen so that no caller can change it for all.
const keyword = (type: string, builtIn: AST.AST) => ({ type, builtIn, plain: Object.freeze({ type }) as Node })

const keywords = {
  StringKeyword: keyword("string", AST.stringKeyword),
  NumberKeyword: keyword("number", AST.numberKeyword),
  BooleanKeyword: keyword("boolean", AST.booleanKeyword)
} as const

// Only a title and a description: anything else (an identifier, examples, a
// default, a JSON Schema override) is left to the general path.
const plain = (annotations: AST.Annotations): boolean => {
  for (const key of Object.getOwnPropertySymbols(annotations)) {
    if (key !== AST.TitleAnnotationId && key !== AST.DescriptionAnnotationId) return false
  }
  return Object.keys(annotations).length === 0
}

const describe = (node: Node, description: unknown): Node => {
  if (typeof description === "string") node.description = description
  return node
}

// `depth` counts as strict mode does: the root is 1, each property one more.
const strictOf = (ast: AST.AST, depth: number): Node | undefined => {
  // The common case first, and without allocating: a keyword as Effect made it.
  if (ast._tag in keywords) {
    const keyword = keywords[ast._tag as keyof typeof keywords]
    if (ast.annotations === keyword.builtIn.annotations) return keyword.plain
  }
  if (!plain(ast.annotations)) return undefined
  const description = ast.annotations[AST.DescriptionAnnotationId]
  switch (ast._tag) {
    case "StringKeyword":
    case "NumberKeyword":
    case "BooleanKeyword": {
      const keyword = keywords[ast._tag]
      const own = description !== keyword.builtIn.annotations[AST.DescriptionAnnotationId] ? description : undefined
      return describe({ type: keyword.type }, own)
    }
    case "TupleType": {
      if (ast.elements.length !== 0 || ast.rest.length !== 1 || !plain(ast.rest[0]!.annotations)) return undefined
      const items = strictOf(ast.rest[0]!.type, depth)
      return items === undefined ? undefined : describe({ type: "array", items }, description)
    }
    case "TypeLiteral": {
      // Deeper than strict mode allows: the general path says why.
      if (ast.indexSignatures.length > 0 || depth > 10) return undefined
      const properties: Node = {}
      const required: Array<string> = []
      for (const signature of ast.propertySignatures) {
        if (typeof signature.name !== "string" || !plain(signature.annotations)) return undefined
        if (signature.name === "__proto__") return undefined
        const type = signature.isOptional ? withoutUndefined(signature.type) : signature.type
        const property = type === undefined ? undefined : strictOf(type, depth + 1)
        if (property === undefined) return undefined
        properties[signature.name] = signature.isOptional ? nullable(property) : property
        required.push(signature.name)
      }
      return describe({ type: "object", required, properties, additionalProperties: false }, description)
    }
    default:
      return undefined
  }
}

// An optional field's type is `T | undefined`; the model sends null instead.
const withoutUndefined = (ast: AST.AST): AST.AST | undefined => {
  if (ast._tag !== "Union") return ast
  if (!plain(ast.annotations)) return undefined
  const kept = ast.types.filter((member) => member._tag !== "UndefinedKeyword")
  return kept.length === 1 ? kept[0] : undefined
}

// Copied then changed, keeping the key order the general path produces.
const nullable = (node: Node): Node => Object.assign({}, node, { type: [node.type, "null"] })

/** The strict parameters of an input schema, or undefined for the general path. */
export const fastStrict = (ast: AST.AST): Node | undefined => {
  if (ast._tag !== "TypeLiteral" || ast.propertySignatures.length === 0) return undefined
  return strictOf(ast, 1)
}
