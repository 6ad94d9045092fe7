// Duplicate names hidden in unions of literal names, and names whose
// segments are short enough while their wire form (`.` becomes `__`) is not.
import { Effect, Schema } from "effect"
import { expectError, expectType } from "tsd"
import { Tool, Toolkit } from "@graded/core"
import { KbSearch } from "./fixtures.js"

const plain = {
  title: "t",
  description: "d",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.succeed("x")
}

declare const XorY: Tool.Tool<"a.x" | "a.y", "read", {}, string, never, never>
declare const Y: Tool.Tool<"a.y", "read", {}, string, never, never>
declare const YorZ: Tool.Tool<"a.y" | "a.z", "read", {}, string, never, never>
declare const Z: Tool.Tool<"a.z", "read", {}, string, never, never>
declare const cond: boolean

// Rejected: a union of names that repeats a name seen before or after it.

// error: Tool name 'a.y' is used by more than one tool in this toolkit
expectError(Toolkit.make(XorY, Y))

// error: Tool name 'a.y' is used by more than one tool in this toolkit
expectError(Toolkit.make(Y, XorY))

// error: Tool name 'a.y' is used by more than one tool in this toolkit
expectError(Toolkit.make(XorY, Z, YorZ))

// Rejected: a tool chosen at run time repeats the name of another.

// error: Tool name 'kb.search' is used by more than one tool in this toolkit
expectError(Toolkit.make(KbSearch, cond ? KbSearch : Z))

// Rejected: every segment is at most 64 characters, but the wire form is longer.

// error: Tool name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b' is too long: its wire form must fit in 64 characters
expectError(Tool.read("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b", plain))

// error: Tool name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b' is too long: its wire form must fit in 64 characters
expectError(Tool.write("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b", plain))

// error: Tool name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b' is too long: its wire form must fit in 64 characters
expectError(Tool.read("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b", plain))

// error: Tool name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbb.cccccccccc' is too long: its wire form must fit in 64 characters
expectError(Tool.read("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbb.cccccccccc", plain))

declare const LongDomain: Tool.Tool<
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b",
  "read",
  {},
  string,
  never,
  never
>

// error: Tool name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b' is too long
expectError(Toolkit.make(KbSearch, LongDomain))

// Accepted: wire forms of exactly 64 characters.
expectType<"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b">(
  Tool.read("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b", plain).name
)
expectType<"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbb.cccccccccc">(
  Tool.read("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbb.cccccccccc", plain).name
)

// Accepted: unions of names that do not overlap.
expectType<Toolkit.Toolkit<readonly [typeof XorY, typeof Z]>>(Toolkit.make(XorY, Z))
