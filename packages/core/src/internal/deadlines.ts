// Who may import this: ProposalStore.ts (the memory store's deadlines), and
// graded's own modules for `millisOf`.
import { Duration } from "effect"

/**
 * The milliseconds of a lease or an expiry as graded counts them: Effect 3
 * read a negative or NaN duration as zero, and Effect 4 keeps its sign; a
 * deadline is never set before now.
 */
export const millisOf = (input: Duration.Input): number => {
  const millis = Duration.toMillis(Duration.fromInputUnsafe(input))
  return millis > 0 ? millis : 0
}

// A deadline for each proposal that has one (ISO text, compared as text as
// the stores compare it), in a binary min-heap. A proposal whose deadline
// changes or goes gets a new entry or none, and its old entry stays in the
// heap until it comes to the top, where it is dropped for not being the
// proposal's current one; the heap is rebuilt from the current entries when
// more than half of it is stale, so it stays within twice their number.
export const deadlines = () => {
  interface Entry {
    readonly until: string
    readonly id: string
  }
  const current = new Map<string, Entry>()
  let heap: Array<Entry> = []
  const up = (index: number) => {
    const entry = heap[index]!
    while (index > 0) {
      const parent = (index - 1) >> 1
      if (heap[parent]!.until <= entry.until) break
      heap[index] = heap[parent]!
      index = parent
    }
    heap[index] = entry
  }
  const down = (index: number) => {
    const entry = heap[index]!
    for (;;) {
      let child = 2 * index + 1
      if (child >= heap.length) break
      if (child + 1 < heap.length && heap[child + 1]!.until < heap[child]!.until) child++
      if (entry.until <= heap[child]!.until) break
      heap[index] = heap[child]!
      index = child
    }
    heap[index] = entry
  }
  const pop = () => {
    const top = heap[0]!
    const last = heap.pop()!
    if (heap.length > 0) {
      heap[0] = last
      down(0)
    }
    return top
  }
  return {
    set: (id: string, until: string | undefined) => {
      const entry = current.get(id)
      if (entry?.until === until) return
      if (until === undefined) current.delete(id)
      else {
        const added = { until, id }
        current.set(id, added)
        heap.push(added)
        up(heap.length - 1)
      }
      if (heap.length > 64 && heap.length > 2 * current.size) {
        heap = [...current.values()]
        for (let index = (heap.length >> 1) - 1; index >= 0; index--) down(index)
      }
    },
    // The ids whose current deadline has lapsed, each taken out of the heap.
    takeUntil: (lapsed: (until: string) => boolean): Array<string> => {
      const ids: Array<string> = []
      while (heap.length > 0 && lapsed(heap[0]!.until)) {
        const entry = pop()
        if (current.get(entry.id) === entry) {
          current.delete(entry.id)
          ids.push(entry.id)
        }
      }
      return ids
    }
  }
}
