/**
 * EmfWriter (observability/Emf.ts): each call says what changed since the previous one: a
 * histogram's new observations by bucket (the +Inf bucket at the largest value seen), a counter's
 * increase, a gauge's new value.
 */
import { Effect, Metric } from "effect"
import { describe, expect, it } from "vitest"
import { EmfWriter } from "../../src/observability/Emf.ts"

const histogram = Metric.histogram("h_seconds", { boundaries: [1, 2, 4] })
const counter = Metric.counter("c_total", { incremental: true })
const gauge = Metric.gauge("g")

const run = <A>(effect: Effect.Effect<A>) => Effect.runSync(Effect.provideService(effect, Metric.MetricRegistry, registry))
const registry: Metric.MetricRegistry = new Map()
const snapshot = () => run(Metric.snapshot)

const of = (lines: ReadonlyArray<string>, name: string) =>
  lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => name in l)?.[name]

describe("EmfWriter", () => {
  it("writes the observations, increases and values since the last call, nothing that did not change", () => {
    const writer = new EmfWriter("Test")
    run(Effect.all([Metric.update(histogram, 0.5), Metric.update(histogram, 3), Metric.update(histogram, 3.5), Metric.update(counter, 2), Metric.update(gauge, 7)]))
    const first = writer.lines(snapshot(), 1)
    expect(of(first, "h_seconds")).toEqual({ Values: [1, 4], Counts: [1, 2] })
    expect(of(first, "c_total")).toBe(2)
    expect(of(first, "g")).toBe(7)
    expect(JSON.parse(first[0]!)._aws.CloudWatchMetrics[0].Metrics).toContainEqual({ Name: "h_seconds", Unit: "Seconds" })

    run(Effect.all([Metric.update(histogram, 1.5), Metric.update(histogram, 9), Metric.update(counter, 1)]))
    const second = writer.lines(snapshot(), 2)
    expect(of(second, "h_seconds")).toEqual({ Values: [2, 9], Counts: [1, 1] })
    expect(of(second, "c_total")).toBe(1)
    expect(of(second, "g")).toBeUndefined()

    expect(writer.lines(snapshot(), 3)).toEqual([])
  })
})
