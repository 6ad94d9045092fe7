/**
 * @graded/openai: graded's LanguageModel over the official openai client.
 *
 * @since 0.1.0
 */
export * as OpenAiModel from "./OpenAiModel.js"

// Sealed when the package is loaded (internal/sealed.ts).
import "./internal/sealed.js"
