// The confirm-card page. Everything from the server is put on the page with
// textContent, never innerHTML: a payload is shown as the text it is. The
// script runs under a CSP nonce; the token travels in the URL fragment (never
// sent to a server or a Referer) and then in an Authorization header, which a
// browser never adds on its own, so another site cannot make decisions.
export const page = (nonce: string): string =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>graded: confirm</title>
<style nonce="${nonce}">
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; background: #f4f4f5; color: #18181b; }
  header { padding: 12px 20px; background: #18181b; color: #fafafa; display: flex; gap: 16px; align-items: center; }
  header h1 { font-size: 16px; margin: 0; flex: 1; white-space: nowrap; }
  header label { margin: 0; color: #d4d4d8; } header input#by { width: 180px; flex: none; }
  main { max-width: 860px; margin: 20px auto; padding: 0 16px; }
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
  .empty { color: #71717a; }
</style>
</head>
<body>
<header><h1>graded: waiting for a human</h1><label for="by">Deciding as</label><input id="by" value="web-user"></header>
<main><div id="cards"><p class="empty">Nothing waits for a decision.</p></div></main>
<script nonce="${nonce}">
const token = new URLSearchParams(location.hash.slice(1)).get("token") || ""
const by = document.getElementById("by")
by.value = localStorage.getItem("graded.by") || by.value
by.addEventListener("change", () => localStorage.setItem("graded.by", by.value))
const shown = new Map()
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
      const input = property.type === "string" && String(card.payload[name] ?? "").length > 60 ? el("textarea", { name, rows: "4" }) : el("input", { name })
      input.value = card.payload[name] === undefined ? "" : String(card.payload[name])
      form.append(el("label", { text: name }), input)
      read.push(() => [name, property.type === "string" ? input.value : property.type === "boolean" ? input.value === "true" : Number(input.value)])
    }
    return { form, value: () => Object.fromEntries(read.map((f) => f())) }
  }
  const area = el("textarea", { name: "json", rows: "8" })
  area.value = JSON.stringify(card.payload, null, 2)
  form.append(el("label", { text: "payload (JSON)" }), area)
  return { form, value: () => JSON.parse(area.value) }
}

const render = (card) => {
  const status = el("div", { class: "status" })
  const decide = async (body) => {
    status.className = "status"
    status.textContent = "sending…"
    const response = await api((card.kind === "proposal" ? "/api/proposals/" : "/api/requests/") + encodeURIComponent(card.id) + "/decision", {
      method: "POST",
      headers: { "x-graded-csrf": card.csrf },
      body: JSON.stringify({ by: by.value, ...body })
    })
    const answer = await response.json().catch(() => ({ error: "no answer" }))
    if (response.ok) { status.textContent = answer.message; node.querySelectorAll("button").forEach((b) => b.disabled = true) }
    else { status.className = "status error"; status.textContent = answer.error }
  }
  const actions = el("div", { class: "actions" })
  const approve = el("button", { class: "approve", type: "button", text: "Approve" })
  const edit = el("button", { type: "button", text: "Edit" })
  const reject = el("button", { class: "reject", type: "button", text: "Reject" })
  approve.addEventListener("click", () => decide({ action: "approve" }))
  edit.addEventListener("click", () => {
    const { form, value } = editor(card)
    const save = el("button", { class: "approve", type: "submit", text: "Approve edited" })
    form.append(el("div", { class: "actions" }, save))
    form.addEventListener("submit", (event) => {
      event.preventDefault()
      let payload
      try { payload = value() } catch (error) { status.className = "status error"; status.textContent = "not JSON: " + error.message; return }
      decide({ action: "edit", payload })
    })
    actions.replaceWith(form)
  })
  reject.addEventListener("click", () => {
    const form = el("form", { class: "reject-form" })
    const reason = el("input", { name: "reason", placeholder: "why not?" })
    form.append(el("label", { text: "reason" }), reason, el("div", { class: "actions" }, el("button", { class: "reject", type: "submit", text: "Reject with this reason" })))
    form.addEventListener("submit", (event) => { event.preventDefault(); decide({ action: "reject", reason: reason.value }) })
    actions.replaceWith(form)
  })
  actions.append(approve, edit, reject)
  const node = el("section", { class: "card" + (card.kind === "proposal" ? " proposal" : ""), "data-id": card.id, "data-tool": card.tool },
    el("h2", {}, el("span", { class: "grade " + card.grade, text: card.grade }), el("span", { text: card.title })),
    el("div", { class: "meta", text: card.tool + " · " + (card.actor || "unknown actor") + " · " + new Date(card.createdAt).toLocaleString() }),
    el("div", { text: card.description }),
    el("pre", { class: "payload", text: JSON.stringify(card.payload, null, 2) }),
    actions, status)
  return node
}

const refresh = async () => {
  const response = await api("/api/requests")
  if (!response.ok) { document.getElementById("cards").replaceChildren(el("p", { class: "empty", text: "Not authorized: open the URL the server printed." })); return }
  const { requests } = await response.json()
  const list = document.getElementById("cards")
  for (const card of requests) if (!shown.has(card.id)) { shown.set(card.id, render(card)); list.append(shown.get(card.id)) }
  list.querySelector(".empty")?.remove()
  if (shown.size === 0) list.replaceChildren(el("p", { class: "empty", text: "Nothing waits for a decision." }))
}
refresh()
setInterval(refresh, 1000)
</script>
</body>
</html>
`
