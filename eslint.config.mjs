// Lint and format as the Effect monorepo does: the recommended rules of ESLint
// and typescript-eslint, and dprint (through @effect/eslint-plugin) for the
// layout, with Effect's dprint settings. `pnpm lint` checks both and writes
// nothing; `pnpm format` rewrites the layout only (`--fix-type layout`).
import effect from "@effect/eslint-plugin"
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  {
    // Build output, generated files and scratch folders, as in .gitignore.
    ignores: ["**/dist/", "bench/.generated/", ".examples/", ".artifacts/", "coverage/", "type-tests/.scale-*/"]
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  effect.configs.dprint,
  {
    files: ["**/*.ts", "**/*.mjs"],
    rules: {
      // The deliberately wide slot of `Tool.Any`, `Plan.Any` and `infer` patterns, and JSON bodies in tests;
      // STYLE.md keeps `any` out of public signatures, which review checks.
      "@typescript-eslint/no-explicit-any": "off",
      // `{}` is a type-level idiom here: `{} extends Record<S, 1>` (is S a literal?), `interface Any extends Tool<...> {}`,
      // `Data.TaggedError(...)<{}>` (no fields), and the type tests' empty inputs and requirements.
      "@typescript-eslint/no-empty-object-type": "off",
      // `export declare namespace Audit { ... }` holds a module's type extractors, as in Effect.
      "@typescript-eslint/no-namespace": "off",
      // `pipe() { return pipeArguments(this, arguments) }` is Effect's Pipeable idiom.
      "prefer-rest-params": "off",
      // A leading `_` names what is dropped on purpose: `{ confirmPayload: _, ...result }`.
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@effect/dprint": ["error", {
        config: {
          // Effect's settings.
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force",
          // Ours: `a ? x` chains keep one line per case, a conditional type that breaks puts
          // `?` and `:` first on their lines, unions fill their lines, imports stay as written.
          "conditionalExpression.linePerExpression": false,
          "conditionalType.operatorPosition": "nextLine",
          "unionAndIntersectionType.preferHanging": true,
          "module.sortImportDeclarations": "maintain",
          "module.sortExportDeclarations": "maintain",
          "importDeclaration.sortNamedImports": "maintain",
          "exportDeclaration.sortNamedExports": "maintain"
        }
      }]
    }
  }
)
