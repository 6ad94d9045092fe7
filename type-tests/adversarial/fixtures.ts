// Tools for the compile-time attacks: one of each grade, a read tool that
// needs an ordinary service, and the widest effects a careless or hostile
// annotation can give a tool's code. Capabilities are named as types only.
import { Context, Effect, Layer, Schema } from "effect"
import { HumanConfirm } from "@graded/core"
import { KnowledgeBase } from "../core/fixtures.js"

// The support desk of the core type tests, plus what the attacks need.
export {
  CurrentConversation,
  KbSearch,
  KnowledgeBase,
  Payload,
  SendReply,
  SubmitTicket,
  support
} from "../core/fixtures.js"

export const knowledgeBase = Layer.succeed(KnowledgeBase, { search: () => Effect.succeed([]) })

export const Query = Schema.Struct({ query: Schema.String })
export const Delivered = Schema.Struct({ delivered: Schema.Boolean })

export const ui = HumanConfirm.scripted([])

// Services whose type is wider than any capability: a tag of `{}`, of
// `unknown`, of `object`. Made without a cast.
export const Anything = Context.Service<{}, string>("Anything")
export const Whatever = Context.Service<unknown, string>("Whatever")
export const SomeObject = Context.Service<object, string>("SomeObject")
