// What `graded` (the CLI) loads for this desk: the toolkit, the quick-ticket
// plan, and the services behind them. Try, from this folder:
//   pnpm graded list --autonomous
//   pnpm graded invoke chat.sendMessage '{"text":"Hello"}'
//   pnpm graded plan quick-ticket
import { Layer } from "effect"
import { ScriptedModel, Toolkit } from "@graded/core"
import * as Desk from "./desk.js"
import { fromEnv } from "./model.js"
import { FillFields, OpenForm, QuickTicket } from "./quickTicket.js"
import { desk } from "./tools.js"

export const toolkit = Toolkit.make(...desk.tools, OpenForm, FillFields)

export const plans = [QuickTicket]

const model = fromEnv(process.env).layer ??
  ScriptedModel.layer([ScriptedModel.text("Invoice shows the old VAT number again")])

export const layer = Layer.merge(Desk.layer({ tickets: [], messages: [], form: undefined }), model)
