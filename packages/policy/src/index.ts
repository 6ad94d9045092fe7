/**
 * @graded/policy: rules before calls. Guidelines decide which tools a context
 * may see and call; contracts add preconditions the system checks; the
 * manifest, conflict checks and an audited fallback keep the rules governed.
 *
 * @since 0.1.0
 */
export * as Check from "./Check.js"
export * as Condition from "./Condition.js"
export * as Fallback from "./Fallback.js"
export * as Guideline from "./Guideline.js"
export * as Contract from "./Contract.js"
export * as Policy from "./Policy.js"
export * as Review from "./Review.js"
export * as Manifest from "./Manifest.js"

// Sealed when the package is loaded (internal/sealed.ts).
import "./internal/sealed.js"
