// This package's exported effects, layers and tags, sealed when it is
// loaded, and those of effect/cli, which it runs (Effect's index does not
// export it, so core does not seal it): a tool's code the CLI loads could
// import one and change it in place for the CLI's later work in the human's
// fiber (Invocation.seal). Who may import this: the package's index, only.
import { Invocation } from "@graded/core"
import * as EffectCli from "effect/cli"
import * as Cli from "../Cli.js"

Invocation.seal(EffectCli)
Invocation.seal(Cli)
