/**
 * The platform's metrics (Metrics.ts) as CloudWatch embedded metric format (EMF) lines, for hosts
 * whose logs CloudWatch reads (the Lambda shell writes them after each invocation; docs/operations.md
 * "Metrics"). Each call of `lines` says what changed since the previous one:
 * - a counter: the increase;
 * - a histogram: the observations since, as EMF's Values/Counts, each value the upper bound of its
 *   bucket (the precision Prometheus has), the +Inf bucket as the largest value seen;
 * - a gauge: its value, when it changed.
 * One line per set of labels, the labels being its dimensions; names and labels are the Prometheus
 * ones, so a dashboard reads the same names on both.
 */
import type { Metric } from "effect"

interface Previous {
  readonly count: number
  readonly buckets: ReadonlyArray<number>
  readonly value: number
}

const UNIT_SECONDS = /_seconds$/

/** Prometheus' label name for an attribute key (`gen_ai.request.model` -> `gen_ai_request_model`). */
const labelName = (key: string) => key.replace(/[^a-zA-Z0-9_]/g, "_")

const asNumber = (value: number | bigint): number => (typeof value === "bigint" ? Number(value) : value)

export class EmfWriter {
  private readonly previous = new Map<string, Previous>()
  private readonly namespace: string
  constructor(namespace: string) {
    this.namespace = namespace
  }

  /** The EMF lines (JSON text) for what changed since the last call. */
  lines(snapshot: ReadonlyArray<Metric.Metric.Snapshot>, nowMs: number): ReadonlyArray<string> {
    // Metric values by their set of labels.
    const groups = new Map<string, { dimensions: Record<string, string>; metrics: Array<{ name: string; value: unknown }> }>()
    const add = (dimensions: Record<string, string>, name: string, value: unknown) => {
      const key = JSON.stringify(Object.entries(dimensions).sort())
      let group = groups.get(key)
      if (group === undefined) groups.set(key, group = { dimensions, metrics: [] })
      group.metrics.push({ name, value })
    }
    for (const metric of snapshot) {
      const dimensions: Record<string, string> = {}
      for (const [key, value] of Object.entries(metric.attributes ?? {})) dimensions[labelName(key)] = value
      const series = `${metric.id}${JSON.stringify(Object.entries(dimensions).sort())}`
      const before = this.previous.get(series)
      if (metric.type === "Counter") {
        const count = asNumber((metric.state as Metric.CounterState<number | bigint>).count)
        const delta = count - (before?.count ?? 0)
        this.previous.set(series, { count, buckets: [], value: 0 })
        if (delta > 0) add(dimensions, metric.id, delta)
      } else if (metric.type === "Gauge") {
        const value = asNumber((metric.state as Metric.GaugeState<number | bigint>).value)
        this.previous.set(series, { count: 0, buckets: [], value })
        if (before === undefined || before.value !== value) add(dimensions, metric.id, value)
      } else if (metric.type === "Histogram") {
        const state = metric.state as Metric.HistogramState
        const cumulative = state.buckets.map(([, n]) => n)
        const values: Array<number> = []
        const counts: Array<number> = []
        let below = 0
        let belowBefore = 0
        state.buckets.forEach(([bound, n], i) => {
          const inBucket = n - below - ((before?.buckets[i] ?? 0) - belowBefore)
          below = n
          belowBefore = before?.buckets[i] ?? 0
          if (inBucket > 0 && Number.isFinite(bound)) {
            values.push(bound)
            counts.push(inBucket)
          }
        })
        // Observations above the last bound: at the largest value seen.
        const above = (state.count - below) - ((before?.count ?? 0) - belowBefore)
        if (above > 0) {
          values.push(state.max)
          counts.push(above)
        }
        this.previous.set(series, { count: state.count, buckets: cumulative, value: 0 })
        if (values.length > 0) add(dimensions, metric.id, { Values: values, Counts: counts })
      }
    }
    return [...groups.values()].map(({ dimensions, metrics }) =>
      JSON.stringify({
        _aws: {
          Timestamp: nowMs,
          CloudWatchMetrics: [{
            Namespace: this.namespace,
            Dimensions: [Object.keys(dimensions)],
            Metrics: metrics.map(({ name }) => ({ Name: name, Unit: UNIT_SECONDS.test(name) ? "Seconds" : "Count" }))
          }]
        },
        ...dimensions,
        ...Object.fromEntries(metrics.map(({ name, value }) => [name, value]))
      })
    )
  }
}
