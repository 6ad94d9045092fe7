// The chat page: a conversation with the app's agent. A message is sent with
// fetch (`POST /api/chat`, the token from the URL fragment in an
// Authorization header and the chat's CSRF value from /api/me in
// `x-graded-csrf`), and the answer is read as Server-Sent Events from the
// response's body, as it arrives: text grows the assistant's bubble, calls
// and refusals are small lines, and a write or send the run proposes is the
// confirm page's own card, drawn in the conversation where it was proposed by
// the shared card script (cardScript.ts) and decided on its route; the run
// goes on once it is decided, into the same turn. Everything the server
// sends (the model's text, tool names, reasons) is put on the page as text,
// through `visible`, never as HTML. The answer each run ends with is added to
// the conversation the next message sends; a message whose run failed is not.
// A card decided elsewhere (the confirm page) is replaced by its record as
// the server tells it (`card-decided`). With a durable chat the page keeps
// its run's id (localStorage) and, reopened, resumes it (`POST
// /api/chat/resume`): the server tells the conversation so far, then goes on.
import { cardHeader, cardScript, cardStyles } from "./cardScript.js"
import { maxContent, maxMessages } from "./chat.js"

export const chatPage = (nonce: string): string =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>graded: chat</title>
<style nonce="${nonce}">
${cardStyles}
  header a { color: #d4d4d8; }
  main { max-width: 860px; margin: 0 auto; padding: 16px 16px 0; }
  .empty { color: #71717a; }
  #conversation { display: flex; flex-direction: column; gap: 12px; padding-bottom: 12px; }
  .turn { display: flex; flex-direction: column; gap: 6px; }
  .turn.user { align-items: flex-end; }
  .turn.assistant { align-items: flex-start; }
  .bubble { max-width: 80%; padding: 8px 12px; border-radius: 12px; white-space: pre-wrap; overflow-wrap: anywhere; }
  .bubble.user { background: #1e3a8a; color: #fff; border-bottom-right-radius: 4px; }
  .bubble.assistant { background: #fff; border: 1px solid #d4d4d8; border-bottom-left-radius: 4px; }
  .turn.user.unanswered .bubble { opacity: 0.6; }
  .turn.assistant[data-state="streaming"] > .bubble.assistant:last-child::after { content: "\\258D"; margin-left: 2px; color: #71717a; }
  .event { font-size: 13px; color: #52525b; padding: 0 4px; overflow-wrap: anywhere; }
  .event.refused { color: #9a3412; } .event.error { color: #991b1b; font-weight: 600; }
  .inline-card { width: 100%; box-sizing: border-box; } .inline-card .card { margin: 0; }
  #composer { position: sticky; bottom: 0; background: #f4f4f5; border-top: 1px solid #e4e4e7; padding: 12px 0 16px; display: flex; gap: 8px; align-items: flex-end; }
  #composer textarea { flex: 1 1 auto; resize: vertical; min-height: 44px; }
</style>
</head>
<body>
${cardHeader("graded: support chat", `<a id="to-confirm" href="/">confirm page</a>`)}
<main>
<div id="conversation" role="log" aria-live="polite"><p class="empty">Ask the agent. What it would write or send waits here for your decision.</p></div>
<form id="composer"><textarea id="message" rows="2" maxlength="${maxContent}" aria-label="your message" placeholder="Write a message (Enter sends, Shift+Enter is a new line)"></textarea><button class="approve" type="submit" id="send" disabled>Send</button></form>
</main>
<script nonce="${nonce}">
${cardScript}
const maxContent = ${maxContent}
const maxMessages = ${maxMessages}
const conversation = document.getElementById("conversation")
const composer = document.getElementById("composer")
const message = document.getElementById("message")
const sendButton = document.getElementById("send")
// The confirm page, for the same person: the token stays in the fragment.
document.getElementById("to-confirm").href = "/" + location.hash
// What the model is shown of the conversation: the person's messages and the agent's answers.
const history = []
let chatCsrf = ""
let busy = false

const note = (turn, kind, text) => {
  const node = el("div", { class: "event " + kind }, ...visible(text))
  turn.append(node)
  return node
}
const toBottom = () => window.scrollTo(0, document.body.scrollHeight)

// The events of an answer, from its body as it arrives: each a "data:" line
// of JSON, blocks apart by an empty line; comments (keep-alives) are skipped.
async function* events(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += value
    let at
    while ((at = buffer.indexOf("\\n\\n")) !== -1) {
      const block = buffer.slice(0, at)
      buffer = buffer.slice(at + 2)
      const data = block.split("\\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(line.startsWith("data: ") ? 6 : 5)).join("\\n")
      if (data === "") continue
      let event
      try { event = JSON.parse(data) } catch { continue }
      yield event
    }
  }
}

// The run a durable chat answers with, kept so a reopened page goes on with it.
const runKey = "graded.chat.run"
let durable = false

// A message of the conversation as the page draws it: the person's, or the agent's.
const said = (role, content) => el("div", { class: "turn " + role }, el("div", { class: "bubble " + role }, ...visible(content)))

// A card in the conversation decided elsewhere (the confirm page, another tab): its record, with who decided.
const decidedElsewhere = (id, message) => {
  for (const node of conversation.querySelectorAll("section.card:not(.decided)")) if (node.dataset.id === id && node.settle) node.settle(message)
}

// One answer: the person's new message (text), or, resuming (text null), the
// run the page had, told from the conversation so far.
const answer = async (text, request) => {
  conversation.querySelector(".empty")?.remove()
  const mine = text === null ? null : said("user", text)
  const turn = el("div", { class: "turn assistant", "data-state": "streaming" })
  if (mine) conversation.append(mine)
  conversation.append(turn)
  toBottom()
  // The text since the last call, card or line: one bubble, drawn again as it grows.
  let bubble = null
  let saying = ""
  const calls = new Map()
  const apart = () => { bubble = null }
  const fail = (reason) => {
    turn.dataset.state = "failed"
    mine?.classList.add("unanswered")
    note(turn, "error", reason)
  }
  try {
    const response = await request()
    if (!response.ok) {
      const refused = await response.json().catch(() => ({}))
      // A run the server does not know as this person's: the page forgets it.
      if (text === null) { localStorage.removeItem(runKey); turn.remove(); return }
      return fail(refused.error || "the server answered " + response.status)
    }
    for await (const event of events(response)) {
      switch (event.type) {
        case "run":
          localStorage.setItem(runKey, event.runId)
          break
        case "history":
          // What was said so far, before this answer; the model is shown it with the next message.
          for (const message of event.messages) turn.before(said(message.role, message.content))
          history.splice(0, history.length, ...event.messages)
          break
        case "text":
          if (bubble === null) { bubble = el("div", { class: "bubble assistant" }); saying = ""; turn.append(bubble) }
          saying += event.delta
          bubble.replaceChildren(...visible(saying))
          break
        case "call-start":
          apart()
          calls.set(event.id, note(turn, "call", "calling " + event.tool + "\u2026"))
          break
        case "call": {
          apart()
          const line = event.ok ? "used " + event.tool : event.tool + " did not run (" + event.code + "): " + event.message
          const started = calls.get(event.id)
          // In place when nothing came after the call's start; otherwise (a card, its decision) after them.
          if (started && started === turn.lastElementChild) { started.replaceChildren(...visible(line)); if (!event.ok) started.className = "event refused" }
          else {
            if (started) started.replaceChildren(...visible("called " + event.tool))
            note(turn, event.ok ? "call" : "refused", line)
          }
          break
        }
        case "refused":
          apart()
          note(turn, "refused", "refused " + event.tool + " (" + event.gate + "): " + event.reason)
          break
        case "pending":
          apart()
          note(turn, "pending", event.tool + " waits for a person's decision")
          break
        case "card":
          apart()
          turn.append(el("div", { class: "inline-card" }, render(event.card)))
          break
        case "card-decided":
          decidedElsewhere(event.id, event.message)
          break
        case "decided":
          apart()
          note(turn, "decided", event.tool + ": " + event.status + (event.by ? " (decided by " + event.by + ")" : ""))
          break
        case "end": {
          apart()
          turn.dataset.state = "done"
          if (text !== null) history.push({ role: "user", content: text })
          const last = history[history.length - 1]
          const known = last && last.role === "assistant" && last.content === event.answer
          if (typeof event.answer === "string" && event.answer !== "" && !known) history.push({ role: "assistant", content: event.answer.slice(0, maxContent) })
          if (event.stopped !== "answer") note(turn, "stopped", "the run stopped: " + event.stopped)
          break
        }
        case "error":
          apart()
          fail(event.message)
          break
      }
      toBottom()
    }
    if (turn.dataset.state === "streaming") fail("the connection closed before the answer was complete")
  } catch (error) {
    fail("the connection failed: " + error.message)
  }
}

const chatBody = (fields) => JSON.stringify(singleUser && by.value.trim() ? { by: by.value, ...fields } : fields)
const ask = (text) => answer(text, () => api("/api/chat", {
  method: "POST",
  headers: { "x-graded-csrf": chatCsrf },
  body: chatBody({ messages: [...history, { role: "user", content: text }].slice(-maxMessages) })
}))
const resume = (runId) => answer(null, () => api("/api/chat/resume", {
  method: "POST",
  headers: { "x-graded-csrf": chatCsrf },
  body: chatBody({ runId })
}))

const busyWith = async (work) => {
  busy = true
  sendButton.disabled = true
  try { await work() } finally { busy = false; sendButton.disabled = false; message.focus() }
}

composer.addEventListener("submit", async (event) => {
  event.preventDefault()
  const text = message.value
  if (busy || text.trim() === "") return
  message.value = ""
  await busyWith(() => ask(text))
})
// Enter sends; Shift+Enter is a new line.
message.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); composer.requestSubmit() }
})
whoami().then((me) => {
  if (me === undefined) { conversation.replaceChildren(el("p", { class: "empty", text: "Not authorized: open the URL the server printed." })); return }
  chatCsrf = me.chatCsrf || ""
  durable = me.chatDurable === true
  const kept = durable ? localStorage.getItem(runKey) : null
  if (kept) busyWith(() => resume(kept))
  else sendButton.disabled = false
})
</script>
</body>
</html>
`
