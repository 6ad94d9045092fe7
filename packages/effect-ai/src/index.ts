/**
 * @graded/effect-ai: graded's LanguageModel over any effect/ai LanguageModel.
 *
 * @since 0.1.0
 */
export * as EffectAiModel from "./EffectAiModel.js"

// Sealed when the package is loaded (internal/sealed.ts).
import "./internal/sealed.js"
