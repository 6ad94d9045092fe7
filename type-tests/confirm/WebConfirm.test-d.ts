import { Effect } from "effect"
import { expectError } from "tsd"
import { WebConfirm } from "@graded/confirm"

// Rejected: options that do not say who decides. The message says which
// options would, rather than "Property 'users' is missing".

// error: say who decides: give authenticate (your sign-in), users (one token per person) or singleUser: true
expectError(WebConfirm.layer({ port: 8080 }))

// error: say who decides: give authenticate (your sign-in), users (one token per person) or singleUser: true
expectError(WebConfirm.make({ host: "127.0.0.1", timeout: "5 minutes" }))

// Rejected: two ways at once; the message names the field that is one too many.

// error: Types of property 'users' are incompatible
expectError(WebConfirm.layer({ singleUser: true, users: { t: "alice" } }))

// Accepted: each way on its own, with the common settings; the sign-in hook's
// request is typed from the options.
WebConfirm.layer({ port: 8080, singleUser: true })
WebConfirm.layer({ users: { "a-token": "alice" }, timeout: "5 minutes" })
WebConfirm.layer({ authenticate: (request) => Effect.succeed(request.url) })
