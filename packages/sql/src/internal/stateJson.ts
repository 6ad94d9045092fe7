// A run's state as column text and back, without Effect's codec when it would
// change nothing. A state is plain data: structs, arrays, unions, strings,
// numbers, booleans, literals and a tool's own values. Where Effect's decode
// and encode would give back what they were given (every key known, every
// value of its type, one union member that fits; keys may come in another
// order), the text is JSON.parse's and JSON.stringify's own; anything else goes
// through Effect's codec, which also names what is wrong. A resume reads a
// run's whole state and saves it whole, so this is most of what a long run's
// resume costs. test/stateJson.test.ts compares both ways on random states.
// Who may import this: runStore.ts only.
import { Effect, type ParseResult, Schema, SchemaAST as AST } from "effect"

type Check = (value: unknown) => boolean
// `fill`: the value is JSON.parse's own, and a required field missing from it
// that may be undefined is set so (as Effect's decode sets it).
type Same = (value: unknown, fill: boolean) => boolean

interface Node {
  /** Whether Effect's codec could accept `value` (it may say yes wrongly, never no wrongly). */
  readonly accepts: Check
  /** Whether Effect's codec gives back a value equal to `value`, key order aside (it may say no wrongly, never yes). */
  readonly same: Same
}

const plainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false
  const prototype = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

const leaf = (check: Check): Node => ({ accepts: check, same: check })

interface Field {
  readonly name: string
  readonly optional: boolean
  readonly node: Node
  /** A literal, or a union of literals: a tag. */
  readonly tag: boolean
}

const isTag = (ast: AST.AST): boolean =>
  ast._tag === "Literal" || (ast._tag === "Union" && ast.types.every((member) => member._tag === "Literal"))

// A struct of named fields: each present field of its type, each missing one
// optional, and no other key. Keys may come in any order (Effect's output
// has the schema's order; the JSON text means the same either way).
const struct = (fields: ReadonlyArray<Field>): Node => {
  // A union member's literal tag says no soonest: checked first.
  const byCost = [...fields].sort((a, b) => Number(b.tag) - Number(a.tag))
  const byName = new Map(fields.map((field) => [field.name, field]))
  const required = fields.filter((field) => !field.optional).length
  // A required field JSON left out because it was undefined (a tool's output
  // of nothing): Effect reads it as undefined and keeps the key.
  const filled = (value: Record<string, unknown>, fill: boolean) => {
    for (const field of fields) {
      if (field.optional || Object.hasOwn(value, field.name)) continue
      if (!field.node.same(undefined, false)) return false
      if (fill) value[field.name] = undefined
    }
    return true
  }
  return {
    accepts: (value) => {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return false
      const record = value as Record<string, unknown>
      for (const field of byCost) {
        if (!field.optional || Object.hasOwn(record, field.name)) {
          if (!field.node.accepts(record[field.name])) return false
        }
      }
      return true
    },
    same: (value, fill) => {
      if (!plainObject(value)) return false
      let requiredSeen = 0
      for (const key in value) {
        const field = byName.get(key)
        if (field === undefined || !Object.hasOwn(value, key) || !field.node.same(value[key], fill)) return false
        if (!field.optional) requiredSeen++
      }
      return requiredSeen === required || filled(value, fill)
    }
  }
}

// A record of string keys (no named fields beside it).
const record = (node: Node): Node => ({
  accepts: (value) => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) return false
    for (const key of Object.keys(value)) {
      if (!node.accepts((value as Record<string, unknown>)[key])) return false
    }
    return true
  },
  same: (value, fill) => {
    if (!plainObject(value)) return false
    for (const key in value) {
      if (key === "__proto__" || !Object.hasOwn(value, key) || !node.same(value[key], fill)) return false
    }
    return true
  }
})

const array = (node: Node): Node => ({
  accepts: (value) => {
    if (!Array.isArray(value)) return false
    for (let i = 0; i < value.length; i++) if (!node.accepts(value[i])) return false
    return true
  },
  same: (value, fill) => {
    if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return false
    for (let i = 0; i < value.length; i++) if (!node.same(value[i], fill)) return false
    return true
  }
})

// Effect tries a union's members in an order of its own; when exactly one
// member can take the value, that order does not matter.
const union = (members: ReadonlyArray<Node>): Node => ({
  accepts: (value) => members.some((member) => member.accepts(value)),
  same: (value, fill) => {
    let taker: Node | undefined
    for (const member of members) {
      if (!member.accepts(value)) continue
      if (taker !== undefined) return false
      taker = member
    }
    return taker !== undefined && taker.same(value, fill)
  }
})

const always: Node = leaf(() => true)

// The node for `ast`, or undefined for a shape this does not vouch for
// (refinements, transformations, declarations, tuples, symbols, ...).
const compile = (ast: AST.AST, made: Map<AST.AST, Node | undefined>): Node | undefined => {
  if (made.has(ast)) return made.get(ast)
  const node = nodeOf(ast, made)
  made.set(ast, node)
  return node
}

const nodeOf = (ast: AST.AST, made: Map<AST.AST, Node | undefined>): Node | undefined => {
  switch (ast._tag) {
    case "StringKeyword":
      return leaf((value) => typeof value === "string")
    case "NumberKeyword":
      return leaf((value) => typeof value === "number")
    case "BooleanKeyword":
      return leaf((value) => typeof value === "boolean")
    case "UndefinedKeyword":
      return leaf((value) => value === undefined)
    case "UnknownKeyword":
    case "AnyKeyword":
      return always
    case "Literal": {
      const literal = ast.literal
      return typeof literal === "bigint" ? undefined : leaf((value) => value === literal)
    }
    case "TupleType": {
      if (ast.elements.length !== 0 || ast.rest.length !== 1) return undefined
      const node = compile(ast.rest[0]!.type, made)
      return node && array(node)
    }
    case "Union": {
      const members = ast.types.map((member) => compile(member, made))
      return members.every((member) => member !== undefined) ? union(members as Array<Node>) : undefined
    }
    case "TypeLiteral": {
      if (ast.indexSignatures.length === 0) {
        if (ast.propertySignatures.length === 0) return undefined
        const fields: Array<Field> = []
        for (const signature of ast.propertySignatures) {
          const node = compile(signature.type, made)
          const name = signature.name
          // A name Object.prototype has (__proto__, toString, ...) reads
          // through to it where the key is missing: left to Effect.
          if (node === undefined || typeof name !== "string" || name in Object.prototype) {
            return undefined
          }
          fields.push({ name, optional: signature.isOptional, node, tag: isTag(signature.type) })
        }
        return struct(fields)
      }
      const [signature] = ast.indexSignatures
      if (ast.propertySignatures.length > 0 || ast.indexSignatures.length > 1) return undefined
      if (signature!.parameter._tag !== "StringKeyword") return undefined
      const node = compile(signature!.type, made)
      return node && record(node)
    }
    default:
      return undefined
  }
}

/** Encodes and decodes `schema`'s values as JSON text, the same as `Schema.parseJson(schema)`. */
export const stateJson = <A>(schema: Schema.Schema<A, A>) => {
  const codec = Schema.parseJson(schema)
  const decodeSlow = Schema.decodeUnknown(codec)
  const encodeSlow = Schema.encodeSync(codec)
  const node = compile(schema.ast, new Map())
  return {
    /** Whether `value` is one this codec passes straight to JSON (for tests). */
    vouches: (value: unknown): boolean => node !== undefined && node.same(value, false),
    decode: (text: string): Effect.Effect<A, ParseResult.ParseError> => {
      if (node !== undefined) {
        try {
          const value: unknown = JSON.parse(text)
          if (node.same(value, true)) return Effect.succeed(value as A)
        } catch {
          // Not JSON: Effect's decode says so.
        }
      }
      return decodeSlow(text)
    },
    encode: (value: A): string => {
      if (node !== undefined) {
        try {
          if (node.same(value, false)) return JSON.stringify(value)
        } catch {
          // A getter that throws, a bigint: Effect's encode decides.
        }
      }
      return encodeSlow(value)
    }
  }
}
