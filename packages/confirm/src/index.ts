/**
 * @graded/confirm: HumanConfirm user interfaces.
 *
 * @since 0.1.0
 */
export * as TerminalConfirm from "./TerminalConfirm.js"
export * as WebConfirm from "./WebConfirm.js"

// Sealed when the package is loaded (internal/sealed.ts).
import "./internal/sealed.js"
