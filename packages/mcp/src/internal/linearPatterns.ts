// The JSON Schema validator for foreign schemas. A foreign server's `pattern`
// (and `patternProperties`) would otherwise run on JavaScript's backtracking
// engine, where `^(a+)+$` against 30 a's and a `!` blocks the process for
// seconds: here every pattern runs on RE2's linear-time engine instead. A
// pattern RE2 cannot run (a lookaround, a back-reference) is refused where the
// schema is compiled, so the tool is skipped or the import fails, naming it.
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv-provider.js"
import { Ajv } from "ajv"
import addFormats from "ajv-formats"
import { RE2JS } from "re2js"

// AJV keys the patterns of one schema by `toString()`: each must give its own.
const linear = (pattern: string): { test: (s: string) => boolean; toString: () => string } => {
  try {
    const compiled = RE2JS.compile(pattern)
    return { test: (s) => compiled.test(s), toString: () => `re2:${pattern}` }
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error)
    throw new Error(
      `the pattern ${JSON.stringify(pattern)} is not a regular expression graded runs in linear time (${why})`
    )
  }
}

/** A validator with the MCP SDK's settings, its patterns run in linear time. */
export const foreignValidator = (): AjvJsonSchemaValidator => {
  const ajv = new Ajv({
    strict: false,
    validateFormats: true,
    validateSchema: false,
    allErrors: true,
    // `code` names the engine in AJV's standalone output, which graded never makes.
    code: { regExp: Object.assign(linear, { code: "re2js" }) }
  })
  addFormats.default(ajv)
  return new AjvJsonSchemaValidator(ajv)
}
