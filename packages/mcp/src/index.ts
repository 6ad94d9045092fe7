/**
 * @graded/mcp: graded over the Model Context Protocol. Serve a toolkit whose
 * grades are enforced, not hinted; import a server's tools under grades the
 * importer declares.
 *
 * @since 0.1.0
 */
export * as McpImport from "./McpImport.js"
export * as McpServe from "./McpServe.js"

// Sealed when the package is loaded (internal/sealed.ts).
import "./internal/sealed.js"
