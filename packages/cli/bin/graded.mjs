#!/usr/bin/env node
// `graded` in this repository: the command from its TypeScript sources, and
// graded's packages from theirs, compiled on the fly by tsx. The published
// package's bin is the compiled dist/main.js instead (publishConfig.bin).
import { register } from "tsx/esm/api"

register()
await import("../src/main.ts")
