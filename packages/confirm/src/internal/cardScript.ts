// The card script and styles, shared by every page that shows cards (the
// confirm page, page.ts; the chat page, chatPage.ts): one home for how a card
// is drawn and decided. Everything from the server is put on the page with
// textContent, never innerHTML: a payload is shown as the text it is. Every
// character that hides or reorders text (or is a control) is drawn as a badge
// where it stands (`visible`): the page's set is `Printable.escape`'s own
// pattern (Printable.escapedSource), so the page marks exactly what the server
// flags, in the card and in a person's edit alike. A card whose `hidden` list
// is not empty is flagged; a field the server cut says how much it shows, and
// such a card offers only Reject. An in-doubt delivery (it stopped and may
// have gone out) is a card of its own, marked as such with its delivery key,
// offering Mark done (with a note) and Retry; a cut one offers Mark done only.
// The token travels in the URL fragment (never sent to a server or a
// Referer) and then in an Authorization header (`api`), which a browser never
// adds on its own, so another site cannot make decisions. The header says who
// decides (`whoami`): the signed-in person, or, in single-user mode, the name
// typed there, which a decision needs (no default). A decided card keeps only
// its title and record; Edit, Reject and Mark done open a form that Cancel
// closes.
// The script needs the header's `#by` input and `#who` span (`cardHeader`),
// and runs under the page's CSP nonce. Imported by page.ts and chatPage.ts.
import { Printable } from "@graded/core"

/** The header both pages share: the title, who decides, the single-user name field. */
export const cardHeader = (title: string, extra = ""): string =>
  `<header><h1>${title}</h1>${extra}<span id="who"></span><input id="by" aria-label="your name" placeholder="your name (required)" hidden></header>`

/** The styles of the header, the cards, their forms and badges. */
export const cardStyles =
  `  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; background: #f4f4f5; color: #18181b; }
  header { padding: 12px 16px; background: #18181b; color: #fafafa; display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: center; }
  header h1 { font-size: 16px; margin: 0; flex: 1 1 auto; }
  header input#by { width: 180px; max-width: 100%; flex: 0 1 auto; }
  .card { background: #fff; border: 1px solid #d4d4d8; border-radius: 8px; padding: 14px 16px; margin-bottom: 16px; }
  .card h2 { font-size: 16px; margin: 0 0 4px; }
  .grade { display: inline-block; font-size: 12px; font-weight: 700; padding: 1px 8px; border-radius: 10px; margin-right: 8px; }
  .grade.send { background: #fee2e2; color: #991b1b; } .grade.write { background: #fef3c7; color: #92400e; }
  .meta { color: #52525b; font-size: 13px; margin-bottom: 8px; }
  pre.payload { background: #fafafa; border: 1px solid #e4e4e7; padding: 10px; max-height: 260px; overflow: auto; white-space: pre-wrap; word-break: break-word; }
  .actions { display: flex; gap: 8px; flex-wrap: wrap; margin-top: 8px; }
  button { font: inherit; padding: 6px 14px; border-radius: 6px; border: 1px solid #a1a1aa; background: #fff; cursor: pointer; }
  button.approve { background: #166534; color: #fff; border-color: #166534; }
  button.reject { background: #991b1b; color: #fff; border-color: #991b1b; }
  .status { font-weight: 600; margin-top: 8px; } .status.error { color: #991b1b; }
  label { display: block; font-size: 13px; margin: 6px 0 2px; } input, textarea { font: inherit; width: 100%; box-sizing: border-box; padding: 5px 8px; }
  .hidden-char { font: 12px ui-monospace, monospace; background: #7c2d12; color: #fff; border-radius: 3px; padding: 0 3px; margin: 0 1px; }
  .flag { background: #fff7ed; border: 1px solid #c2410c; color: #7c2d12; font-weight: 600; padding: 6px 10px; border-radius: 6px; margin: 8px 0; }
  .cut { background: #eff6ff; border: 1px solid #1d4ed8; color: #1e3a8a; padding: 6px 10px; border-radius: 6px; margin: 8px 0; }
  .why { color: #52525b; font-size: 13px; margin-top: 6px; }
  button:disabled { opacity: 0.45; cursor: not-allowed; }
  header #who { color: #d4d4d8; overflow-wrap: anywhere; }
  .card.decided { padding: 8px 16px; } .card.decided .status { margin: 0; }
  .card.in-doubt { border: 2px solid #b45309; }
  .doubt { background: #fffbeb; border: 1px solid #b45309; color: #78350f; font-weight: 600; padding: 6px 10px; border-radius: 6px; margin: 8px 0; }
  .key { font: 13px ui-monospace, monospace; color: #3f3f46; }
  button.done { background: #1e3a8a; color: #fff; border-color: #1e3a8a; }`

/**
 * The card script. It defines token, by, singleUser, el, count, hides,
 * visible, api, editor, previewed, route, key, render(card, decided) (a card's
 * node; decided(record) is called once the card is decided and replaced by
 * its record; the node's settle(message) does that for a decision made
 * elsewhere) and whoami() (asks /api/me, sets up the header, and returns
 * what it said).
 */
export const cardScript = `const token = new URLSearchParams(location.hash.slice(1)).get("token") || ""
const by = document.getElementById("by")
by.value = localStorage.getItem("graded.by") || ""
by.addEventListener("change", () => localStorage.setItem("graded.by", by.value))
let singleUser = false
const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag)
  for (const [key, value] of Object.entries(props)) {
    if (key === "text") node.textContent = value
    else if (key === "class") node.className = value
    else node.setAttribute(key, value)
  }
  for (const child of children) if (child) node.append(child)
  return node
}
const count = (n) => n.toLocaleString("en-US")

// Characters that hide or reorder text, and controls: Printable's own pattern.
const hiding = () => new RegExp(${JSON.stringify(Printable.escapedSource)}, "gu")
const hides = (text) => hiding().test(text)
// Each UTF-16 unit as \\uXXXX, as Printable writes it.
const escaped = (char) => Array.from({ length: char.length }, (_, i) => String.fromCharCode(92) + "u" + char.charCodeAt(i).toString(16).toUpperCase().padStart(4, "0")).join("")
// Text as nodes: each such character becomes a visible badge where it stands.
const visible = (text) => {
  const nodes = []
  let at = 0
  for (const found of text.matchAll(hiding())) {
    if (found.index > at) nodes.push(document.createTextNode(text.slice(at, found.index)))
    const char = found[0]
    nodes.push(el("span", { class: "hidden-char", title: "U+" + char.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + ": a character that hides or reorders text", text: escaped(char) }))
    at = found.index + char.length
  }
  if (at < text.length || nodes.length === 0) nodes.push(document.createTextNode(text.slice(at)))
  return nodes
}
const api = (path, init = {}) => fetch(path, { ...init, headers: { ...(init.headers || {}), authorization: "Bearer " + token, "content-type": "application/json" } })

// An edit form from the payload's JSON Schema: one field per property, or
// the whole payload as JSON when the shape is not a flat object.
const editor = (card) => {
  const defs = (card.schema && card.schema.$defs) || {}
  const resolve = (node) => node && node.$ref ? defs[node.$ref.split("/").pop()] : node
  const schema = resolve(card.schema)
  const properties = schema && schema.type === "object" && schema.properties
    ? Object.fromEntries(Object.entries(schema.properties).map(([name, property]) => [name, resolve(property) || {}]))
    : undefined
  const flat = properties && Object.values(properties).every((p) => ["string", "number", "integer", "boolean"].includes(p.type))
  const form = el("form", { class: "edit" })
  const read = []
  if (flat && card.payload && typeof card.payload === "object") {
    for (const [name, property] of Object.entries(properties)) {
      // Text that holds a line break, or is long, is edited as lines: an input box would drop its line breaks.
      const text = String(card.payload[name] ?? "")
      const input = property.type === "string" && (/[\\r\\n]/.test(text) || text.length > 60)
        ? el("textarea", { name, rows: String(Math.min(12, Math.max(4, text.split("\\n").length + 1))) }) : el("input", { name })
      input.value = card.payload[name] === undefined ? "" : String(card.payload[name])
      form.append(el("label", { text: name }), input)
      read.push(() => [name, property.type === "string" ? input.value : property.type === "boolean" ? input.value === "true" : Number(input.value)])
    }
    return previewed(form, () => Object.fromEntries(read.map((f) => f())))
  }
  const area = el("textarea", { name: "json", rows: "8" })
  area.value = JSON.stringify(card.payload, null, 2)
  form.append(el("label", { text: "payload (JSON)" }), area)
  return previewed(form, () => JSON.parse(area.value))
}

// What approving the edit would send, as the card shows a payload: an input
// box draws hidden and reordering characters as they act, the preview as badges.
const previewed = (form, value) => {
  const flag = el("div", { class: "flag", role: "alert", hidden: "", text: "This edit contains characters that hide or reorder text. Each is shown as a badge below." })
  const preview = el("pre", { class: "payload preview" })
  const update = () => {
    let text
    try { text = JSON.stringify(value(), null, 2) } catch (error) { text = "not JSON: " + error.message }
    flag.hidden = !hides(text)
    preview.replaceChildren(...visible(text))
  }
  form.append(el("label", { text: "You will approve:" }), flag, preview)
  form.addEventListener("input", update)
  update()
  return { form, value }
}

const route = (card) => card.kind === "in-doubt" ? "/api/proposals/" + encodeURIComponent(card.id) + "/in-doubt"
  : (card.kind === "proposal" ? "/api/proposals/" : "/api/requests/") + encodeURIComponent(card.id) + "/decision"

const key = (card) => (card.kind || "request") + ":" + card.id

const render = (card, decided = () => {}) => {
  const status = el("div", { class: "status" })
  const decide = async (body) => {
    // In single-user mode the decider is who typed their name: none is recorded for them.
    if (singleUser && !by.value.trim()) { status.className = "status error"; status.textContent = "Type your name at the top of the page first: it is recorded with your decision."; by.focus(); return }
    status.className = "status"
    status.textContent = "sending…"
    const response = await api(route(card), {
      method: "POST",
      headers: { "x-graded-csrf": card.csrf },
      body: JSON.stringify(singleUser ? { by: by.value, ...body } : body)
    })
    const answer = await response.json().catch(() => ({ error: "no answer" }))
    if (response.ok) settled(answer.message)
    else { status.className = "status error"; status.textContent = answer.error }
  }
  const actions = el("div", { class: "actions" })
  // Back to the card as it was: the form goes, nothing is sent.
  const cancel = (form) => {
    const button = el("button", { type: "button", text: "Cancel" })
    button.addEventListener("click", () => { form.replaceWith(actions); status.textContent = "" })
    return button
  }
  // A decided card keeps its record only: its payload, form and handlers are let go.
  // Told twice (the decision's own answer, and the stream saying it was decided), the record is drawn once; its own answer says it best.
  let record = null
  const settled = (message) => {
    if (record) { record.querySelector(".status").textContent = message; return }
    record = el("section", { class: "card decided", "data-id": card.id, "data-tool": card.tool },
      el("h2", {}, el("span", { class: "grade " + card.grade, text: card.grade }), el("span", {}, ...visible(card.title))),
      el("div", { class: "status", text: message }))
    node.replaceWith(record)
    decided(record)
  }
  const approve = el("button", { class: "approve", type: "button", text: "Approve" })
  const edit = el("button", { type: "button", text: "Edit" })
  const reject = el("button", { class: "reject", type: "button", text: "Reject" })
  approve.addEventListener("click", () => decide({ action: "approve" }))
  edit.addEventListener("click", () => {
    const { form, value } = editor(card)
    const save = el("button", { class: "approve", type: "submit", text: "Approve edited" })
    form.append(el("div", { class: "actions" }, save, cancel(form)))
    form.addEventListener("submit", (event) => {
      event.preventDefault()
      let payload
      try { payload = value() } catch (error) { status.className = "status error"; status.textContent = "not JSON: " + error.message; return }
      decide({ action: "edit", payload })
    })
    status.textContent = ""
    actions.replaceWith(form)
  })
  reject.addEventListener("click", () => {
    const form = el("form", { class: "reject-form" })
    const reason = el("input", { name: "reason", placeholder: "why not?" })
    form.append(el("label", { text: "reason" }), reason, el("div", { class: "actions" }, el("button", { class: "reject", type: "submit", text: "Reject with this reason" }), cancel(form)))
    form.addEventListener("submit", (event) => { event.preventDefault(); decide({ action: "reject", reason: reason.value }) })
    actions.replaceWith(form)
  })
  if (card.kind === "in-doubt") {
    // Sends nothing: a person checked the outside system and says it went out.
    const done = el("button", { class: "done", type: "button", text: "Mark done" })
    const retry = el("button", { class: "approve", type: "button", text: "Retry" })
    done.addEventListener("click", () => {
      const form = el("form", { class: "done-form" })
      const note = el("input", { name: "note", placeholder: "what you checked (optional)" })
      form.append(el("label", { text: "note" }), note, el("div", { class: "actions" }, el("button", { class: "done", type: "submit", text: "Mark done with this note" }), cancel(form)))
      form.addEventListener("submit", (event) => { event.preventDefault(); decide({ action: "mark-done", note: note.value }) })
      actions.replaceWith(form)
    })
    retry.addEventListener("click", () => decide({ action: "retry" }))
    actions.append(done, retry)
    if (card.cut.length > 0) { retry.disabled = true; actions.append(el("div", { class: "why", text: "Retry is off: this card does not show all of what would go out again. Mark it done if it went out." })) }
  } else actions.append(approve, edit, reject)
  // A card that did not show all of itself can be rejected, not approved: the server refuses the same.
  const why = card.kind === "in-doubt" || card.cut.length === 0 ? null
    : el("div", { class: "why", text: "Approve and Edit are off: this card does not show all of what would run. Reject it, or have it made smaller." })
  if (why) { approve.disabled = true; edit.disabled = true; actions.append(why) }
  const doubt = card.kind !== "in-doubt" ? null
    : el("div", { class: "doubt", role: "alert", text: "This delivery stopped and may have gone out. Check before you retry: a retry goes out with the same delivery key." })
  const about = [card.runId ? "run " + card.runId : "", card.expiresAt ? "decide before " + new Date(card.expiresAt).toLocaleString() : ""].filter(Boolean).join(" · ")
  const flag = card.hidden.length === 0 ? null
    : el("div", { class: "flag", role: "alert", text: "This card contains characters that hide or reorder text: " + card.hidden.join(" ") + ". Each is shown as a badge where it stands." })
  const cuts = card.cut.map((cut) => el("div", { class: "cut", text: cut.total === 0
    ? "The payload cannot be shown as JSON."
    : "The " + cut.field + " is cut: showing " + count(cut.shown) + " of " + count(cut.total) + " characters." }))
  const node = el("section", { class: "card" + (card.kind ? " " + card.kind : ""), "data-id": card.id, "data-tool": card.tool },
    el("h2", {}, el("span", { class: "grade " + card.grade, text: card.grade }), el("span", {}, ...visible(card.title))),
    el("div", { class: "meta" }, ...visible((card.path ? card.path.join(" → ") + " → " : "") + card.tool + " · " + (card.actor || "unknown actor") + " · " + new Date(card.createdAt).toLocaleString())),
    about ? el("div", { class: "meta run" }, ...visible(about)) : null,
    doubt,
    card.deliveryKey ? el("div", { class: "key" }, ...visible("delivery key: " + card.deliveryKey)) : null,
    el("div", {}, ...visible(card.description)),
    flag,
    ...cuts,
    el("pre", { class: "payload" }, ...visible(card.shown)),
    actions, status)
  // A decision made elsewhere (the confirm page, another tab), as the page is told it.
  node.settle = (message) => { if (!record) settled(message) }
  return node
}
// Who decides: the signed-in person, or (single-user mode) the name typed in the header.
const whoami = async () => {
  const response = await api("/api/me")
  if (!response.ok) return undefined
  const me = await response.json()
  singleUser = me.singleUser === true
  if (singleUser) by.hidden = false
  else document.getElementById("who").textContent = "Deciding as " + me.by + " (signed in)"
  return me
}
`
