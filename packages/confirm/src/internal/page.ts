// The confirm-card page: every card waiting for a decision, polled once a
// second from /api/requests. How a card is drawn and decided (text only,
// hidden characters as badges, cut cards only rejected, in-doubt cards, the
// token and who decides) is the shared card script's (cardScript.ts); this
// page lists the cards and keeps each one it has drawn, keyed by kind and id.
import { cardHeader, cardScript, cardStyles } from "./cardScript.js"

export const page = (nonce: string): string =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>graded: confirm</title>
<style nonce="${nonce}">
${cardStyles}
  main { max-width: 860px; margin: 20px auto; padding: 0 16px; }
  .empty { color: #71717a; }
</style>
</head>
<body>
${cardHeader("graded: waiting for a human")}
<main><div id="cards"><p class="empty">Nothing waits for a decision.</p></div></main>
<script nonce="${nonce}">
${cardScript}
const shown = new Map()
const refresh = async () => {
  const response = await api("/api/requests")
  if (!response.ok) { document.getElementById("cards").replaceChildren(el("p", { class: "empty", text: "Not authorized: open the URL the server printed." })); return }
  const { requests } = await response.json()
  const list = document.getElementById("cards")
  // A proposal that turns in doubt is a new card: keyed by kind and id.
  for (const card of requests) {
    if (!shown.has(key(card))) { shown.set(key(card), render(card, (record) => shown.set(key(card), record))); list.append(shown.get(key(card))) }
  }
  list.querySelector(".empty")?.remove()
  if (shown.size === 0) list.replaceChildren(el("p", { class: "empty", text: "Nothing waits for a decision." }))
}
whoami()
refresh()
setInterval(refresh, 1000)
</script>
</body>
</html>
`
