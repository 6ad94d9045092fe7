// A model may answer with a name no gateway accepts ("ticket.submit", a
// thousand characters). The loop refuses the call, but the conversation still
// echoes the model's turn back; a strict gateway would reject the whole
// request for that name. So the echo carries a safe form of it: the call id,
// not the name, ties a result to its call. (The same rule as @graded/openai's; no package
// reaches into another's internal/.)
const pattern = /^[a-zA-Z0-9_-]{1,64}$/

export const wireSafe = (name: string): string =>
  pattern.test(name) ? name : (name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64) || "invalid_name")
