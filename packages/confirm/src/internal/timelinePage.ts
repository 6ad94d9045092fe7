// The run timeline page (`/runs`): the runs the audit holds, filtered by
// state, actor and tool, and for one run its rounds: the candidate set the
// model was shown with what was left out and why, then the calls, results,
// refusals, cards with their decisions and who made them, deliveries and what
// is in doubt. Behind the confirm page's sign-in (the token in the fragment,
// sent as an Authorization header by the card script's `api`); everything
// from the server is put on the page with textContent, never innerHTML.
// Imported by internal/api.ts.
import { cardHeader, cardScript, cardStyles } from "./cardScript.js"

export const timelinePage = (nonce: string): string =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>graded: runs</title>
<style nonce="${nonce}">
${cardStyles}
  main { max-width: 980px; margin: 20px auto; padding: 0 16px; }
  .empty { color: #71717a; }
  form.filters { display: flex; gap: 8px; flex-wrap: wrap; align-items: end; margin-bottom: 12px; }
  form.filters label { margin: 0; } form.filters input, form.filters select { width: 180px; }
  table { border-collapse: collapse; width: 100%; background: #fff; }
  th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid #e4e4e7; font-size: 14px; vertical-align: top; overflow-wrap: anywhere; }
  th, .state, td.num { white-space: nowrap; } td.num { text-align: right; }
  .state { font-size: 12px; font-weight: 700; padding: 1px 8px; border-radius: 10px; background: #e4e4e7; }
  .state.waiting { background: #fef3c7; } .state.answered, .state.finished { background: #dcfce7; } .state.cancelled, .state.round-limit { background: #fee2e2; }
  .offer { margin: 6px 0; } .tool { font: 13px ui-monospace, monospace; background: #f4f4f5; border: 1px solid #e4e4e7; border-radius: 4px; padding: 0 4px; margin-right: 4px; }
  ul.left-out { margin: 4px 0 8px; padding-left: 20px; color: #7c2d12; font-size: 14px; }
  ul.steps { list-style: none; margin: 8px 0 0; padding: 0; }
  ul.steps li { padding: 4px 8px; border-left: 3px solid #d4d4d8; margin: 2px 0; font-size: 14px; overflow-wrap: anywhere; }
  li.refused, li.failed { border-color: #991b1b; background: #fef2f2; } li.decided { border-color: #1d4ed8; background: #eff6ff; }
  li.delivered, li.completed { border-color: #166534; } li.in-doubt { border-color: #b45309; background: #fffbeb; }
  .at { color: #71717a; font-size: 12px; margin-right: 6px; }
  a.back { display: inline-block; margin-bottom: 10px; }
</style>
</head>
<body>
${cardHeader("graded: runs")}
<main id="main"><p class="empty">Loading…</p></main>
<script nonce="${nonce}">
${cardScript}
const main = document.getElementById("main")
const fragment = () => new URLSearchParams(location.hash.slice(1))
const link = (extra) => "#" + new URLSearchParams({ token, ...extra }).toString()
const denied = () => main.replaceChildren(el("p", { class: "empty", text: "Not authorized: open the URL the server printed." }))
const time = (at) => el("span", { class: "at", text: at.slice(11, 23) })
// Only the view asked for last is drawn: an answer that comes after the
// person moved on (a slow list, then a run) is dropped.
let asked = 0
const list = async (mine) => {
  const chosen = fragment()
  const query = new URLSearchParams({ state: chosen.get("state") || "", actor: chosen.get("actor") || "", tool: chosen.get("tool") || "" })
  const response = await api("/api/runs?" + query)
  if (mine !== asked) return
  if (!response.ok) return denied()
  const { states, runs } = await response.json()
  if (mine !== asked) return
  const state = el("select", { id: "state", "aria-label": "state" }, el("option", { value: "", text: "any state" }), ...states.map((s) => el("option", { value: s, text: s })))
  state.value = query.get("state")
  const actor = el("input", { id: "actor", "aria-label": "actor", placeholder: "actor" }); actor.value = query.get("actor")
  const tool = el("input", { id: "tool", "aria-label": "tool", placeholder: "tool" }); tool.value = query.get("tool")
  const filters = el("form", { class: "filters" },
    el("label", {}, state), el("label", {}, actor), el("label", {}, tool), el("button", { type: "submit", id: "apply", text: "Filter" }))
  filters.addEventListener("submit", (event) => { event.preventDefault(); location.hash = link({ state: state.value, actor: actor.value, tool: tool.value }) })
  const rows = runs.map((run) => el("tr", { class: "run" },
    el("td", {}, el("a", { href: link({ run: run.trace }), text: run.trace || "(no trace id)" })),
    el("td", {}, el("span", { class: "state " + run.state, text: run.state })),
    el("td", { text: run.actor || "" }),
    el("td", { text: run.tools.join(", ") }),
    el("td", { class: "num", text: String(run.refusals) }), el("td", { class: "num", text: String(run.decisions) }), el("td", { class: "num", text: String(run.inDoubt) }),
    el("td", { text: run.last.replace("T", " ").slice(0, 19) })))
  const table = el("table", {}, el("thead", {}, el("tr", {}, ...["run", "state", "actor", "tools", "refusals", "decisions", "in doubt", "last"].map((h) => el("th", { text: h })))), el("tbody", {}, ...rows))
  main.replaceChildren(filters, runs.length === 0 ? el("p", { class: "empty", text: "No run matches." }) : table)
}
const stepNode = (s) => {
  const extra = s.type === "decided" ? " (" + s.decision + (s.edited ? ", edited" : "") + ", by " + s.by + ")"
    : s.type === "delivered" && s.key ? " (key " + s.key + ")" : ""
  return el("li", { class: "step " + s.type }, time(s.at), el("span", { class: "line", text: s.line + extra }))
}
const roundNode = (round) => {
  const parts = [el("h2", { text: "Round " + round.round + (round.tokens ? " · " + round.tokens.input + " in / " + round.tokens.output + " out tokens" : "") })]
  if (round.offer) {
    parts.push(el("div", { class: "offer" }, el("strong", { text: "Offered: " }), ...(round.offer.tools.length ? round.offer.tools.map((t) => el("span", { class: "tool", text: t })) : [el("span", { text: "nothing" })])))
    if (round.offer.leftOut.length) {
      parts.push(el("div", { class: "offer" }, el("strong", { text: "Left out:" })))
      parts.push(el("ul", { class: "left-out" }, ...round.offer.leftOut.map((left) => el("li", {}, el("span", { class: "tool", text: left.tool }), el("span", { text: "[" + left.gate + "] " + left.reason })))))
    }
    if (round.offer.guidelines.length) parts.push(el("div", { class: "meta", text: "Guidelines matched: " + round.offer.guidelines.join(", ") }))
  }
  parts.push(el("ul", { class: "steps" }, ...round.steps.map(stepNode)))
  return el("section", { class: "card round" }, ...parts)
}
const detail = async (trace, mine) => {
  const response = await api("/api/runs?" + new URLSearchParams({ trace }))
  if (mine !== asked) return
  if (response.status === 401) return denied()
  const back = el("a", { class: "back", href: link({}), text: "← all runs" })
  if (!response.ok) return main.replaceChildren(back, el("p", { class: "empty", text: "No such run." }))
  const { run, rounds } = await response.json()
  if (mine !== asked) return
  const head = el("div", { class: "card" }, el("h2", { text: "Run " + (run.trace || "(no trace id)") }),
    el("div", { class: "meta" }, el("span", { class: "state " + run.state, text: run.state }), el("span", { text: "  " + (run.actor || "") + " · " + run.started + " → " + run.last })))
  main.replaceChildren(back, head, ...rounds.map(roundNode))
}
const show = () => { const mine = ++asked; const run = fragment().get("run"); return run === null ? list(mine) : detail(run, mine) }
whoami()
show()
window.addEventListener("hashchange", show)
</script>
</body>
</html>
`
