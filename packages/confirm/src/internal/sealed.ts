// This package's exported effects, layers and tags, sealed when it is
// loaded: a tool's code could import one and change it in place
// (Invocation.seal). With them the Effect modules it runs that Effect's index
// does not export, which core does not seal: effect/http's tags and effects
// (the router's), run when WebConfirm's layer is built, in whichever fiber
// builds it. Who may import this: the package's index, only.
import * as Http from "effect/http"
import { Invocation } from "@graded/core"
import * as TerminalConfirm from "../TerminalConfirm.js"
import * as WebConfirm from "../WebConfirm.js"

Invocation.seal(Http)
Invocation.seal(TerminalConfirm)
Invocation.seal(WebConfirm)
