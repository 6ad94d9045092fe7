// This package's exported effects, layers and tags, sealed when it is
// loaded: a tool's code could import one and change it in place
// (Invocation.seal). With them the Effect modules it runs that Effect's index
// does not export, which core does not seal: effect/sql's and Reactivity's
// tags and effects, run by every statement graded's stores make, in the
// caller's fiber. Who may import this: the package's index, only.
import * as Reactivity from "effect/reactivity/Reactivity"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import * as SqlConnection from "effect/sql/SqlConnection"
import * as SqlError from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import { Invocation } from "@graded/core"
import * as Sql from "../Sql.js"
import * as SqlAudit from "../SqlAudit.js"
import * as SqlMigrations from "../SqlMigrations.js"
import * as SqlProposalStore from "../SqlProposalStore.js"
import * as SqlRunStore from "../SqlRunStore.js"

Invocation.seal(Reactivity)
Invocation.seal(Migrator)
Invocation.seal(SqlClient)
Invocation.seal(SqlConnection)
Invocation.seal(SqlError)
Invocation.seal(Statement)
Invocation.seal(Sql)
Invocation.seal(SqlAudit)
Invocation.seal(SqlMigrations)
Invocation.seal(SqlProposalStore)
Invocation.seal(SqlRunStore)
