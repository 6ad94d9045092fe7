// This package's exported effects, layers and tags, sealed when it is
// loaded: a tool's code could import one and change it in place
// (Invocation.seal). Who may import this: the package's index, only.
import { Invocation } from "@graded/core"
import * as Check from "../Check.js"
import * as Condition from "../Condition.js"
import * as Fallback from "../Fallback.js"
import * as Guideline from "../Guideline.js"
import * as Contract from "../Contract.js"
import * as Policy from "../Policy.js"
import * as Review from "../Review.js"
import * as Manifest from "../Manifest.js"

Invocation.seal(Check)
Invocation.seal(Condition)
Invocation.seal(Fallback)
Invocation.seal(Guideline)
Invocation.seal(Contract)
Invocation.seal(Policy)
Invocation.seal(Review)
Invocation.seal(Manifest)
