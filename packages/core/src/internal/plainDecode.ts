// A decoder for the inputs most tools take, in one pass: structs of strings,
// numbers, booleans and literals, refined or not (nested, in arrays, fields
// optional or not).
// Who may import this: the registry.
//
// `plainDecoder(ast)` returns undefined for any other shape. The function it
// returns gives the decoded value, or `notPlain` for an input it does not take
// as it is: then the caller decodes as before (what JSON cannot carry, the
// key check, Effect's decoder), which also names what is wrong. It takes an input
// only when the registry's own path (nulls in optional fields dropped, then
// Effect's strict decode) would succeed with an equal value, keys in the same
// order; where checking costs less that way it is stricter: plain objects
// and arrays only, no `__proto__` or symbol key, no hidden key where fields are optional, no null in an
// optional field, no number JSON cannot write (which the full path refuses). Each value is read once, so what is checked is what runs.
// A property test compares it with that path over random shapes and inputs.
import { Option, SchemaAST as AST } from "effect"

const absent: unique symbol = Symbol("notPlain")

// The options the registry's strict decode passes a refinement.
const strict = { onExcessProperty: "error" } as const

/** What a plain decoder gives for an input the full decoder must see. */
export const notPlain: typeof absent = absent

// The decoded value, or `absent` for an input left to the full decode.
type Step = (value: unknown) => unknown

// A number JSON can write: not Infinity, NaN or -0 (the registry refuses
// those on its full path, naming where they are).
const carried = (value: number): boolean => Number.isFinite(value) && (value !== 0 || 1 / value > 0)

const keywordSteps: Partial<Record<AST.AST["_tag"], Step>> = {
  StringKeyword: (value) => typeof value === "string" ? value : absent,
  NumberKeyword: (value) => typeof value === "number" && carried(value) ? value : absent,
  BooleanKeyword: (value) => typeof value === "boolean" ? value : absent
}

const plainPrototype = (value: object): boolean => {
  const prototype = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

interface Field {
  readonly name: string
  readonly step: Step
  readonly optional: boolean
  /** A required string, number or boolean, checked here without a call. */
  readonly type: "string" | "number" | "boolean" | undefined
}

const keywordTypes: Partial<Record<AST.AST["_tag"], Field["type"]>> = {
  StringKeyword: "string",
  NumberKeyword: "number",
  BooleanKeyword: "boolean"
}

// Whether any struct in `ast` has an optional field: only then does the
// null-dropping pass before the full decode change an input (it copies the
// enumerable keys only), so only then must a hidden key be looked for apart.
const anyOptional = (ast: AST.AST, depth = 0): boolean => {
  if (depth > 32) return true
  switch (ast._tag) {
    case "TypeLiteral":
      return ast.propertySignatures.some((signature) => signature.isOptional || anyOptional(signature.type, depth + 1))
    case "TupleType":
      return ast.rest.some((element) => anyOptional(element.type, depth + 1))
    case "Refinement":
      return anyOptional(ast.from, depth + 1)
    default:
      return false
  }
}

const stepOf = (ast: AST.AST, depth: number, hiddenMatters: boolean): Step | undefined => {
  if (depth > 32) return undefined
  const keyword = keywordSteps[ast._tag]
  if (keyword !== undefined) return keyword
  switch (ast._tag) {
    case "Literal": {
      const literal = ast.literal
      return (value) => value === literal ? value : absent
    }
    case "Union": {
      // A choice of literals (`Schema.Literal("a", "b")`).
      if (!ast.types.every((type) => type._tag === "Literal")) return undefined
      const literals = ast.types.map((type) => (type as AST.Literal).literal)
      return (value) => {
        for (let i = 0; i < literals.length; i++) if (value === literals[i]) return value
        return absent
      }
    }
    case "Refinement": {
      // The refinement's own predicate, on what `from` decoded, as the decoder
      // runs it; one that throws is left to the decoder.
      const from = stepOf(ast.from, depth + 1, hiddenMatters)
      if (from === undefined) return undefined
      return (value) => {
        const decoded = from(value)
        if (decoded === absent) return absent
        try {
          return Option.isNone(ast.filter(decoded, strict, ast)) ? decoded : absent
        } catch {
          return absent
        }
      }
    }
    case "TupleType": {
      // Arrays of one type only.
      if (ast.elements.length !== 0 || ast.rest.length !== 1) return undefined
      const item = stepOf(ast.rest[0]!.type, depth + 1, hiddenMatters)
      if (item === undefined) return undefined
      return (value) => {
        if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return absent
        const out = new Array(value.length)
        for (let i = 0; i < value.length; i++) {
          // A hole reads as undefined, which no plain item is.
          const decoded = item(value[i])
          if (decoded === absent) return absent
          out[i] = decoded
        }
        return out
      }
    }
    case "TypeLiteral": {
      // An empty struct takes any value that is not nullish: left to the decoder.
      if (ast.indexSignatures.length > 0 || ast.propertySignatures.length === 0) return undefined
      const fields: Array<Field> = []
      const allowed: { [name: string]: true } = Object.create(null)
      for (const signature of ast.propertySignatures) {
        const name = signature.name
        if (typeof name !== "string" || name === "__proto__" || name in allowed) return undefined
        allowed[name] = true
        // `Schema.optional(X)` is X | undefined, made optional.
        const type = signature.isOptional && signature.type._tag === "Union" ? optionalType(signature.type)
          : signature.type
        if (type === undefined) return undefined
        const step = stepOf(type, depth + 1, hiddenMatters)
        if (step === undefined) return undefined
        fields.push({
          name,
          optional: signature.isOptional,
          type: signature.isOptional ? undefined : keywordTypes[type._tag],
          // A null in an optional field is how strict mode says "absent": the
          // registry drops it before decoding, so it is left to that path.
          step: !signature.isOptional ? step
            : type !== signature.type
            ? (value) => value === undefined ? value : value === null ? absent : step(value)
            : (value) => value === null ? absent : step(value)
        })
      }
      return (value) => {
        if (typeof value !== "object" || value === null || Array.isArray(value) || !plainPrototype(value)) return absent
        // Only the struct's keys and no symbol: the strict decoder refuses any
        // other own key. Where fields are optional, all of them enumerable
        // too (a hidden one would be lost by the null-dropping pass).
        const names = hiddenMatters ? Object.keys(value) : Object.getOwnPropertyNames(value)
        for (let i = 0; i < names.length; i++) {
          if (allowed[names[i]!] !== true) return absent
        }
        if (hiddenMatters && Object.getOwnPropertyNames(value).length !== names.length) return absent
        if (Object.getOwnPropertySymbols(value).length > 0) return absent
        // Keys in the schema's order, as Effect's decoder writes them.
        const out: { [name: string]: unknown } = {}
        for (let i = 0; i < fields.length; i++) {
          const field = fields[i]!
          // Read once, as the decoder reads it: what is checked is what runs.
          if (field.type !== undefined) {
            const property = (value as { [name: string]: unknown })[field.name]
            if (typeof property !== field.type || field.type === "number" && !carried(property as number)) {
              return absent
            }
            out[field.name] = property
            continue
          }
          if (field.optional && !Object.hasOwn(value, field.name)) continue
          const decoded = field.step((value as { [name: string]: unknown })[field.name])
          if (decoded === absent) return absent
          out[field.name] = decoded
        }
        return out
      }
    }
    default:
      // Refinements, transformations, unions, classes, suspended schemas:
      // the full decoder.
      return undefined
  }
}

// The X of `X | undefined`, or undefined for any other union.
const optionalType = (union: AST.Union): AST.AST | undefined => {
  if (union.types.length !== 2) return undefined
  const [first, second] = union.types
  if (second!._tag === "UndefinedKeyword") return first
  return first!._tag === "UndefinedKeyword" ? second : undefined
}

/**
 * A one-pass decoder for `ast`, when it is a struct of the plain shapes: it
 * returns the decoded value, or `notPlain` for an input the full decoder must see.
 */
export const plainDecoder = (ast: AST.AST): Step | undefined => {
  const step = stepOf(ast, 0, anyOptional(ast))
  if (step === undefined) return undefined
  return (input) => {
    try {
      return step(input)
    } catch {
      // A getter that throws: the full decoder meets it as it always has.
      return absent
    }
  }
}
