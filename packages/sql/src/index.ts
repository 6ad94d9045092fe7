/**
 * @graded/sql: graded's proposal queue, supervised runs, audit and policy fallback queue on effect/sql, in SQLite or PostgreSQL.
 * The fallback queue is `@graded/sql/SqlFallbackStore` (it needs @graded/policy, an optional peer).
 *
 * @since 0.1.0
 */
export * as Sql from "./Sql.js"
export * as SqlAudit from "./SqlAudit.js"
export * as SqlMigrations from "./SqlMigrations.js"
export * as SqlProposalStore from "./SqlProposalStore.js"
export * as SqlRunStore from "./SqlRunStore.js"

// Sealed when the package is loaded (internal/sealed.ts).
import "./internal/sealed.js"
