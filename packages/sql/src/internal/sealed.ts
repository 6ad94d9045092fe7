// This package's exported effects, layers and tags, sealed when it is
// loaded: a tool's code could import one and change it in place
// (Invocation.seal). Who may import this: the package's index, only.
import { Invocation } from "@graded/core"
import * as Sql from "../Sql.js"
import * as SqlAudit from "../SqlAudit.js"
import * as SqlFallbackStore from "../SqlFallbackStore.js"
import * as SqlMigrations from "../SqlMigrations.js"
import * as SqlProposalStore from "../SqlProposalStore.js"
import * as SqlRunStore from "../SqlRunStore.js"

Invocation.seal(Sql)
Invocation.seal(SqlAudit)
Invocation.seal(SqlFallbackStore)
Invocation.seal(SqlMigrations)
Invocation.seal(SqlProposalStore)
Invocation.seal(SqlRunStore)
