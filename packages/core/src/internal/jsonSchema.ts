// JSON Schema of what a model writes for a schema: the encoded side of its
// AST (a `NumberFromString` field is a string), with `$defs` for named and
// recursive schemas, and each check's constraint as a keyword (`minLength`,
// `pattern`, `type: "integer"`). Effect's `Schema.toJsonSchemaDocument`
// describes the schema's JSON codec instead, which is not what graded
// decodes with: a `Number` there is also "Infinity" as a string, an optional
// field also null, a length a guess in code points. The model receives this,
// made strict (functionSchema.ts); the decoder stays the authority.
// Who may import this: internal/functionSchema.ts.
import { SchemaAST as AST } from "effect"

export type Node = { [key: string]: unknown }

export interface Document {
  readonly schema: Node
  readonly defs: Node
}

// The schema a node of type `type` gets from each of its checks.
const checked = (ast: AST.AST, node: Node): Node => {
  if (ast.checks === undefined) return node
  const flat = (checks: ReadonlyArray<AST.Check<any>>): Array<AST.Filter<any>> =>
    checks.flatMap((check) => check._tag === "FilterGroup" ? flat(check.checks) : [check])
  const array = node.type === "array"
  for (const filter of flat(ast.checks)) {
    const annotations = filter.annotations
    const representation = annotations?.representation as
      | { readonly id?: unknown; readonly payload?: any }
      | undefined
    const payload = representation?.payload
    switch (representation?.id) {
      // Lengths as Effect counts them (UTF-16 units), which its own JSON
      // Schema halves into code points: the model is told the real bound.
      case "effect/schema/isMinLength":
        node[array ? "minItems" : "minLength"] = payload.minLength
        break
      case "effect/schema/isMaxLength":
        node[array ? "maxItems" : "maxLength"] = payload.maxLength
        break
      case "effect/schema/isBetweenLength":
        node[array ? "minItems" : "minLength"] = payload.minimum
        node[array ? "maxItems" : "maxLength"] = payload.maximum
        break
      // Whatever its flags: the pattern is a hint, the decoder checks it.
      case "effect/schema/isPattern":
        node.pattern = payload.source
        break
      case "effect/schema/isInt":
        node.type = "integer"
        break
      default: {
        const made = annotations?.toJsonSchema?.({ type: node.type as any, schemas: [] })
        const keywords = (Array.isArray(made) ? made[0] : made) as Node | undefined
        // The type is the node's own; combinators are left to the decoder.
        for (const [key, value] of Object.entries(keywords ?? {})) {
          if (key !== "type" && key !== "allOf" && key !== "anyOf" && key !== "oneOf") node[key] = value
        }
      }
    }
  }
  return node
}

// What a node says of itself: its last check's annotations, as Effect reads
// them, or its own.
const descriptionOf = (ast: AST.AST): string | undefined => {
  const description = AST.resolveDescription(ast) ?? ast.annotations?.description
  return typeof description === "string" ? description : undefined
}

const identifierOf = (ast: AST.AST): string | undefined => {
  const identifier = AST.resolveIdentifier(ast) ?? ast.annotations?.identifier
  return typeof identifier === "string" ? identifier : undefined
}

type Literal = string | number | boolean

const isJsonLiteral = (ast: AST.AST): ast is AST.Literal =>
  ast._tag === "Literal" && typeof ast.literal !== "bigint" && ast.checks === undefined &&
  ast.encoding === undefined && ast.annotations === undefined

// Literals one enum per JSON type, in the order first met.
const enums = (literals: ReadonlyArray<Literal>): Array<Node> => {
  const byType = new Map<string, Array<Literal>>()
  for (const literal of literals) {
    const type = typeof literal
    const values = byType.get(type)
    if (values === undefined) byType.set(type, [literal])
    else if (!values.includes(literal)) values.push(literal)
  }
  return [...byType].map(([type, values]) => ({ type, enum: values }))
}

const escapeRegExp = (text: string) => text.replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")

// A number as a template literal reads it (Effect's own pattern).
const finite = "[+-]?(?:\\d+(?:\\.\\d+)?|\\.\\d+)(?:[Ee][+-]?\\d+)?"

const templatePattern = (ast: AST.TemplateLiteral): string =>
  "^" + ast.parts.map((part) =>
    part._tag === "Literal" ? escapeRegExp(String(part.literal))
      : part._tag === "Number" ? `(?:${finite})`
      : "[\\s\\S]*?"
  ).join("") + "$"

// Members of nested unions, as one list; `undefined` is no JSON value.
const members = (ast: AST.Union): Array<AST.AST> =>
  ast.types.flatMap((member) =>
    member._tag === "Undefined" || member._tag === "Void" ? []
      : member._tag === "Union" && member.annotations === undefined && member.checks === undefined &&
          member.encoding === undefined
      ? members(member)
      : [member]
  )

/** The type a property holds when present: an optional field's `undefined` is its absence. */
export const presentType = (type: AST.AST): AST.AST => {
  if (!AST.isOptional(type) || type._tag !== "Union" || type.encoding !== undefined) return type
  const present = type.types.filter((member) => member._tag !== "Undefined")
  return present.length === 1 && type.annotations === undefined && type.checks === undefined ? present[0]! : type
}

/** The JSON Schema of the values a model writes for `ast`, with the definitions it refers to. */
export const documentOf = (root: AST.AST): Document => {
  const defs: Node = {}
  const names = new Map<AST.AST, string>()
  const taken = new Set<string>()

  const reference = (ast: AST.AST, identifier: string | undefined): Node => {
    let name = names.get(ast)
    if (name === undefined) {
      const base = identifier ?? "Schema"
      name = base
      for (let i = 2; taken.has(name); i++) name = `${base}${i}`
      taken.add(name)
      names.set(ast, name)
      // Reserved first: a schema that refers to itself finds its name.
      defs[name] = {}
      defs[name] = body(ast)
    }
    return { $ref: `#/$defs/${name}` }
  }

  const go = (ast: AST.AST): Node => {
    if (ast._tag === "Suspend") {
      const target = ast.thunk()
      return reference(target, identifierOf(target))
    }
    const identifier = identifierOf(ast)
    return identifier === undefined ? body(ast) : reference(ast, identifier)
  }

  const described = (node: Node, ast: AST.AST): Node => {
    const description = descriptionOf(ast)
    if (description !== undefined) node.description = description
    return node
  }

  const objects = (ast: AST.Objects): Node => {
    const required: Array<string> = []
    const properties: Node = {}
    for (const signature of ast.propertySignatures) {
      if (typeof signature.name !== "string") continue
      const property = go(presentType(signature.type))
      const key = signature.type.context?.annotations?.description
      if (typeof key === "string") property.description = key
      Object.defineProperty(properties, signature.name, {
        value: property,
        enumerable: true,
        writable: true,
        configurable: true
      })
      if (!AST.isOptional(signature.type)) required.push(signature.name)
    }
    const node: Node = { type: "object", required, properties, additionalProperties: false }
    const index = ast.indexSignatures[0]
    if (index !== undefined) {
      const value = go(index.type)
      const parameter = index.parameter
      if (parameter._tag === "String" && parameter.checks === undefined) node.additionalProperties = value
      else {
        const pattern = parameter._tag === "TemplateLiteral"
          ? templatePattern(parameter)
          : (checked(parameter, { type: "string" }).pattern as string | undefined)
        if (pattern === undefined) node.additionalProperties = value
        else node.patternProperties = { [pattern]: value }
      }
    }
    return node
  }

  const arrays = (ast: AST.Arrays): Node => {
    if (ast.elements.length === 0 && ast.rest.length === 1) return { type: "array", items: go(ast.rest[0]!) }
    const node: Node = { type: "array" }
    const minimum = ast.elements.filter((element) => !AST.isOptional(element)).length
    if (minimum > 0) node.minItems = minimum
    node.items = ast.elements.map((element) => go(presentType(element)))
    node.additionalItems = ast.rest.length === 0 ? false : go(ast.rest[0]!)
    return node
  }

  const union = (ast: AST.Union): Node => {
    const literals: Array<Literal> = []
    const others: Array<Node> = []
    let literalsAt = -1
    for (const member of members(ast)) {
      if (isJsonLiteral(member)) {
        if (literalsAt === -1) literalsAt = others.length
        literals.push(member.literal as Literal)
      } else others.push(go(member))
    }
    if (literalsAt !== -1) others.splice(literalsAt, 0, ...enums(literals))
    return others.length === 1 ? { ...others[0]! } : { anyOf: others }
  }

  const body = (ast: AST.AST): Node => {
    // The model writes the encoded form; what the decoded side says of
    // itself (a description) is what the field means.
    if (ast.encoding !== undefined) {
      const node = body(AST.toEncoded(ast))
      const description = descriptionOf(ast)
      if (description !== undefined) node.description = description
      return node
    }
    switch (ast._tag) {
      case "String":
        return described(checked(ast, { type: "string" }), ast)
      case "Number":
        return described(checked(ast, { type: "number" }), ast)
      case "Boolean":
        return described(checked(ast, { type: "boolean" }), ast)
      case "Null":
        return described({ type: "null" }, ast)
      case "Literal":
        return described(
          typeof ast.literal === "bigint" ? { type: "string", enum: [String(ast.literal)] } : enums([ast.literal])[0]!,
          ast
        )
      case "Enum": {
        const values = ast.enums.map(([, value]) => value)
        const groups = enums(values)
        return described(groups.length === 1 ? groups[0]! : { anyOf: groups }, ast)
      }
      case "TemplateLiteral":
        return described(checked(ast, { type: "string", pattern: templatePattern(ast) }), ast)
      case "Union":
        return described(union(ast), ast)
      case "Arrays":
        return described(checked(ast, arrays(ast)), ast)
      case "Objects":
        return described(checked(ast, objects(ast)), ast)
      case "ObjectKeyword":
        return described({ anyOf: [{ type: "object" }, { type: "array" }] }, ast)
      case "Suspend":
        return go(ast)
      default:
        // Unknown, Any, a declaration (a Date, an Option) and values no JSON
        // holds: nothing the model is told narrows them.
        return described({}, ast)
    }
  }

  return { schema: go(root), defs }
}
