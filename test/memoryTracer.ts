// A Tracer that keeps every span it ended, as a test reads them: the tests of
// Audit.otel (core) and of the credit desk's traces look at the same record.
import { Tracer } from "effect"

export interface EndedSpan {
  readonly name: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly attributes: Record<string, unknown>
  readonly error: boolean
  /** The names of the span's events, in order. */
  readonly events: ReadonlyArray<string>
}

export const memoryTracer = (): { readonly tracer: Tracer.Tracer; readonly ended: Array<EndedSpan> } => {
  const ended: Array<EndedSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      const end = span.end.bind(span)
      span.end = (endTime, exit) => {
        end(endTime, exit)
        ended.push({
          name: span.name,
          spanId: span.spanId,
          parentSpanId: span.parent._tag === "Some" ? span.parent.value.spanId : undefined,
          attributes: Object.fromEntries(span.attributes),
          error: exit._tag === "Failure",
          events: span.events.map(([name]) => name)
        })
      }
      return span
    }
  })
  return { tracer, ended }
}
