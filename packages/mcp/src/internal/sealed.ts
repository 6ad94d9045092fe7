// This package's exported effects, layers and tags, sealed when it is
// loaded: a tool's code could import one and change it in place
// (Invocation.seal). Who may import this: the package's index, only.
import { Invocation } from "@graded/core"
import * as McpImport from "../McpImport.js"
import * as McpServe from "../McpServe.js"

Invocation.seal(McpImport)
Invocation.seal(McpServe)
