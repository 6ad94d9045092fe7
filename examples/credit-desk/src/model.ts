// Which model the demo talks to: OpenAI (or any compatible server) when
// OPENAI_API_KEY is set, the scripted model otherwise.
import type { Layer } from "effect"
import type { LanguageModel } from "@graded/core"
import { OpenAiModel } from "@graded/openai"

export interface Choice {
  /** Undefined means the scripted model. */
  readonly layer: Layer.Layer<LanguageModel.LanguageModel> | undefined
  readonly name: string
}

export const fromEnv = (env: Record<string, string | undefined>): Choice => {
  const apiKey = env.OPENAI_API_KEY
  if (apiKey === undefined || apiKey === "") return { layer: undefined, name: "scripted (no API key needed)" }
  const model = env.OPENAI_MODEL ?? "gpt-4o-mini"
  const api = env.OPENAI_API === "responses" ? "responses" : "chat"
  const baseURL = env.OPENAI_BASE_URL
  return {
    layer: OpenAiModel.layer({ apiKey, baseURL, model, api }),
    name: `${model} over the ${api === "chat" ? "Chat Completions" : "Responses"} API at ${baseURL ?? "api.openai.com"}`
  }
}
