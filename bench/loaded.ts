// Where this process loads graded from: its TypeScript sources (through
// tsx), or, under `pnpm bench`'s module hook (gradedBuild.mjs), its core's build.
export const loadedFrom = (): string =>
  import.meta.resolve("@graded/core").endsWith("/dist/index.js")
    ? "graded's core runs from its compiled build here (as `pnpm bench` loads it), its other packages from their TypeScript sources (through tsx)"
    : "graded runs from its TypeScript sources here (through tsx)"
