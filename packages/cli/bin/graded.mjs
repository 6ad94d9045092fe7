#!/usr/bin/env node
// The command is written in TypeScript, and so are the modules it loads:
// tsx compiles both on the fly.
import { register } from "tsx/esm/api"

register()
await import("../src/main.ts")
