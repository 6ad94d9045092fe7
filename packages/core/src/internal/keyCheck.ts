// The strict key check ahead of a default decode. Under `onExcessProperty:
// "error"` Effect decodes every struct through its general parser (a generator
// per value) rather than its fast path; for the shapes most tools use, a set of
// allowed keys per struct, made once, finds the same keys. Who may import
// this: the registry.
//
// `excessKeyCheck(ast)` returns undefined for a shape it does not cover (the
// caller then decodes strictly, as before), or a function that says whether
// `input` has no key a struct of the schema would refuse. It is exact for the
// shapes it covers: it visits every value the decoder would check the keys of,
// so a default decode of an input it passes succeeds exactly when the strict
// decode does, with the same value. An input it fails, or one a default decode
// refuses, is decoded strictly, and that decode's error is the one reported.
import { SchemaAST as AST } from "effect"

type Check = (value: unknown) => boolean

// A schema no struct decoder runs on: no key of its input can be excess.
const leaf: Check = () => true

const leafTags = new Set<AST.AST["_tag"]>([
  "String",
  "Number",
  "Boolean",
  "BigInt",
  "Symbol",
  "Null",
  "Undefined",
  "Void",
  "Never",
  "Unknown",
  "Any",
  "ObjectKeyword",
  "Literal",
  "UniqueSymbol",
  "Enum",
  "TemplateLiteral"
])

const isNullish = (ast: AST.AST) => ast._tag === "Undefined" || ast._tag === "Null"

// Whether `value` is the record the struct decoder would read keys from.
const isRecord = (value: unknown): value is object =>
  typeof value === "object" && value !== null && !Array.isArray(value)

// The value the decoder reads for `name`, or `undefined` when it might read a
// different one (an accessor): such an input is decoded strictly.
const read = (value: object, name: string): { readonly value: unknown } | undefined => {
  const own = Object.getOwnPropertyDescriptor(value, name)
  if (own !== undefined) return "value" in own ? { value: own.value } : undefined
  const inherited = (value as Record<string, unknown>)[name]
  // An inherited object (a prototype's) is left to the strict decode.
  return typeof inherited === "object" && inherited !== null ? undefined : { value: inherited }
}

export const excessKeyCheck = (ast: AST.AST, depth = 0): Check | undefined => {
  // A transformation (a class, a date, a value decoded from a string) is decoded strictly.
  if (depth > 32 || ast.encoding !== undefined) return undefined
  // A check sees what was decoded, which is the same either way.
  if (leafTags.has(ast._tag)) return leaf
  switch (ast._tag) {
    case "Union": {
      // Leaves only, or one struct-like member made optional or nullable: the
      // struct is the only member an object can decode as.
      const inner = ast.types.filter((type) => !isNullish(type))
      const checks = inner.map((type) => excessKeyCheck(type, depth + 1))
      if (checks.every((check) => check === leaf)) return leaf
      if (inner.length !== 1 || checks[0] === undefined) return undefined
      const check = checks[0]
      return (value) => value === undefined || value === null || check(value)
    }
    case "Arrays": {
      const elements = ast.elements.map((element) => excessKeyCheck(element, depth + 1))
      const rest = ast.rest.map((element) => excessKeyCheck(element, depth + 1))
      if (elements.some((check) => check === undefined) || rest.some((check) => check === undefined)) return undefined
      if (elements.every((check) => check === leaf) && rest.every((check) => check === leaf)) return leaf
      // Arrays of one type (the usual case): every element against it.
      if (elements.length !== 0 || rest.length !== 1) return undefined
      const item = rest[0]!
      return (value) => {
        // Not an array: the decoder refuses it, whatever its keys.
        if (!Array.isArray(value)) return true
        for (let i = 0; i < value.length; i++) {
          const element = read(value, String(i))
          if (element === undefined || !item(element.value)) return false
        }
        return true
      }
    }
    case "Objects": {
      if (ast.indexSignatures.length > 0) return undefined
      // A lookup in an object without a prototype is faster than a Set here.
      const allowed: { [name: string]: true } = Object.create(null)
      const nested: Array<readonly [string, Check]> = []
      for (const signature of ast.propertySignatures) {
        if (typeof signature.name !== "string" || signature.name === "__proto__") return undefined
        allowed[signature.name] = true
        const check = excessKeyCheck(signature.type, depth + 1)
        if (check === undefined) return undefined
        if (check !== leaf) nested.push([signature.name, check])
      }
      return (value) => {
        // Not a record: the decoder refuses it, whatever its keys.
        if (!isRecord(value)) return true
        // The keys the strict decoder checks: own enumerable ones, and no
        // symbol, which no struct here allows.
        const names = Object.keys(value)
        for (let i = 0; i < names.length; i++) {
          if (allowed[names[i]!] !== true) return false
        }
        if (Object.getOwnPropertySymbols(value).length > 0) return false
        for (let i = 0; i < nested.length; i++) {
          const [name, check] = nested[i]!
          const property = read(value, name)
          if (property === undefined || !check(property.value)) return false
        }
        return true
      }
    }
    default:
      // Declarations (dates, options) and suspended schemas: decoded strictly.
      return undefined
  }
}
