/**
 * @graded/cli: the debug bridge as a command.
 *
 * @since 0.1.0
 */
export * as Cli from "./Cli.js"

// Sealed when the package is loaded (internal/sealed.ts).
import "./internal/sealed.js"
