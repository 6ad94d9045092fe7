// How many cases a property test tries. `pnpm test` tries each suite's own
// count; GRADED_PROPERTY_SCALE multiplies every count (.ci/run sets it higher,
// to search further on every landing). A failing property prints its seed.
const scale = (() => {
  const value = process.env.GRADED_PROPERTY_SCALE
  const parsed = value === undefined || value === "" ? 1 : Number(value)
  if (!Number.isFinite(parsed) || parsed <= 0) {
    throw new Error(`GRADED_PROPERTY_SCALE must be a positive number, not ${JSON.stringify(value)}`)
  }
  return parsed
})()

/** `count` cases times GRADED_PROPERTY_SCALE (at least 1). */
export const propertyRuns = (count: number): number => Math.max(1, Math.round(count * scale))
