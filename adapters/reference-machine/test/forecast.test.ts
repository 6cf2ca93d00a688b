import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fit, holt, inverseNormal, MAX_HISTORY, project } from "../src/ForecastModel.ts"
import { startReferenceMachine } from "../src/ReferenceMachine.ts"
import type { ReferenceMachine } from "../src/ReferenceMachine.ts"
import { assertValid } from "./openaiSchema.ts"
import { post } from "./support.ts"

let machine: ReferenceMachine

beforeAll(async () => {
  machine = await startReferenceMachine({ port: 0 })
})
afterAll(() => machine.close())

const forecast = (body: Record<string, unknown>) => post(machine, "/v1/forecasts", { model: "ref-forecast", ...body })

/** A seeded pseudo-random generator (mulberry32). */
const rng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const expectMonotone = (quantiles: Array<Array<number>>) => {
  for (let level = 1; level < quantiles.length; level++) {
    quantiles[level]!.forEach((v, step) => expect(v).toBeGreaterThanOrEqual(quantiles[level - 1]![step]!))
  }
}

describe("the inverse normal", () => {
  it("matches known quantiles", () => {
    expect(inverseNormal(0.5)).toBeCloseTo(0, 9)
    expect(inverseNormal(0.975)).toBeCloseTo(1.959963985, 7)
    expect(inverseNormal(0.1)).toBeCloseTo(-1.281551566, 7)
    expect(inverseNormal(0.001)).toBeCloseTo(-3.090232306, 6)
    expect(inverseNormal(0.9999)).toBeCloseTo(3.719016485, 6)
  })
})

describe("POST /v1/forecasts", () => {
  it("continues a straight line", async () => {
    const history = Array.from({ length: 30 }, (_, i) => 5 + 2 * i)
    const r = await forecast({ history, horizon: 6 })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ object: "forecast", model: "ref-forecast", history_used: 30, quantile_levels: [0.1, 0.5, 0.9] })
    r.body.point.forEach((p: number, h: number) => expect(p).toBeCloseTo(5 + 2 * (30 + h), 9))
    expect(r.body.quantiles).toHaveLength(3)
    expect(r.body.quantiles[1]).toEqual(r.body.point)
    expect(Number.isInteger(r.body.generation_time_ms)).toBe(true)
  })

  it("keeps a constant series constant", async () => {
    const r = await forecast({ history: Array(20).fill(42), horizon: 10, quantiles: [0.05, 0.5, 0.95] })
    expect(r.body.point).toEqual(Array(10).fill(42))
    for (const q of r.body.quantiles) expect(q).toEqual(Array(10).fill(42))
  })

  it("works from two values", async () => {
    const r = await forecast({ history: [10, 12], horizon: 3 })
    expect(r.status).toBe(200)
    expect(r.body.point).toEqual([14, 16, 18])
  })

  it("gives monotone quantiles whose spread grows with the horizon on a noisy series", async () => {
    const rand = rng(7)
    const history = Array.from({ length: 200 }, (_, i) => 100 + 0.5 * i + 10 * Math.sin(i / 5) + (rand() - 0.5) * 8)
    const r = await forecast({ history, horizon: 64, quantiles: [0.9, 0.1, 0.5, 0.025, 0.975] })
    expect(r.status).toBe(200)
    expect(r.body.quantile_levels).toEqual([0.025, 0.1, 0.5, 0.9, 0.975])
    expect(r.body.point).toHaveLength(64)
    expectMonotone(r.body.quantiles)
    const width = (h: number) => r.body.quantiles[4][h] - r.body.quantiles[0][h]
    expect(width(0)).toBeGreaterThan(0)
    for (let h = 1; h < 64; h++) expect(width(h)).toBeGreaterThanOrEqual(width(h - 1))
    // roughly the level of the series at its end, with its upward drift
    expect(r.body.point[0]).toBeGreaterThan(150)
    expect(r.body.point[0]).toBeLessThan(230)
  })

  it("uses the most recent 512 values", async () => {
    const history = [...Array(300).fill(1000), ...Array.from({ length: MAX_HISTORY }, (_, i) => i)]
    const r = await forecast({ history, horizon: 1 })
    expect(r.body.history_used).toBe(MAX_HISTORY)
    expect(r.body.point[0]).toBeCloseTo(MAX_HISTORY, 6)
  })

  it("is answered at /forecasts too", async () => {
    const r = await post(machine, "/forecasts", { model: "ref-forecast", history: [1, 2, 3], horizon: 2, frequency_seconds: 60 })
    expect(r.status).toBe(200)
    expect(r.body.frequency_seconds).toBe(60)
  })

  it("refuses bad bodies with the spec's codes", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ history: [1], horizon: 1 }, "invalid_history"],
      [{ history: [1, "2"], horizon: 1 }, "invalid_history"],
      [{ horizon: 1 }, "invalid_history"],
      [{ history: [1, 2], horizon: 0 }, "invalid_horizon"],
      [{ history: [1, 2], horizon: 65 }, "invalid_horizon"],
      [{ history: [1, 2], horizon: 1.5 }, "invalid_horizon"],
      [{ history: [1, 2], horizon: 1, quantiles: [0, 0.5] }, "invalid_input"],
      [{ history: [1, 2], horizon: 1, quantiles: [1] }, "invalid_input"],
      [{ history: [1, 2], horizon: 1, frequency_seconds: 0 }, "invalid_input"]
    ]
    for (const [body, code] of cases) {
      const r = await forecast(body)
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe(code)
      assertValid("ErrorResponse", r.body)
    }
    const wrong = await post(machine, "/v1/forecasts", { model: "ref-chat", history: [1, 2], horizon: 1 })
    expect(wrong.body.error.code).toBe("wrong_endpoint")
  })

  it("fits the grid point with the least one-step squared error", () => {
    const rand = rng(3)
    const y = Array.from({ length: 80 }, (_, i) => 20 + i * 0.3 + (rand() - 0.5) * 4)
    const f = fit(y)
    expect(f.sse).toBeCloseTo(holt(y, f.alpha, f.beta, f.phi).sse, 9)
    for (const [a, b, p] of [[0.5, 0.5, 1], [0.1, 0.1, 0.9], [1, 1, 0.8]] as const) {
      expect(holt(y, a, b, p).sse).toBeGreaterThanOrEqual(f.sse)
    }
    const { sd } = project(f, 3)
    expect(sd[0]).toBeCloseTo(f.sigma, 12)
  })
})
