// What `graded` (the CLI) loads to decide what an MCP client proposed: the
// support desk's tools, and the same SQLite file the server records in
// ($SUPPORT_DESK_DB, or graded.db in this folder). From this folder:
//   pnpm graded pending
//   pnpm graded decide p-1 approve
//   pnpm graded decide p-2 reject --reason "not now"
import { desk } from "@graded/example-support-desk/tools"
import { database, layer as stores } from "./store.js"

export const toolkit = desk

export const layer = stores(database())
