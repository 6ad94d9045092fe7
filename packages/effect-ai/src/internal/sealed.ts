// This package's exported effects, layers and tags, sealed when it is
// loaded: a tool's code could import one and change it in place
// (Invocation.seal). Who may import this: the package's index, only.
import { Invocation } from "@graded/core"
import * as EffectAiModel from "../EffectAiModel.js"

Invocation.seal(EffectAiModel)
