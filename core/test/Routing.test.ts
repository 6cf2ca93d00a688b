/**
 * The route order (core/src/catalogue/Routing.ts): examples first, then its properties over random
 * candidate lists (fast-check).
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type Health, healthRank, orderRoutes, type RouteCandidate } from "../src/catalogue/Routing.ts"

const candidate = (
  machine_id: string,
  fields: Partial<Omit<RouteCandidate, "machine_id">> = {}
): RouteCandidate => ({ machine_id, region: "eu", health: "online", serving: true, score: 0.5, ...fields })

const ids = (routes: ReadonlyArray<RouteCandidate>) => routes.map((c) => c.machine_id)

describe("orderRoutes, by example", () => {
  it("puts machines serving and online first, then serving but degraded, then the rest", () => {
    const routes = orderRoutes([
      candidate("offline", { health: "offline", score: 1 }),
      candidate("not-serving", { serving: false, score: 1 }),
      candidate("degraded", { health: "degraded", score: 1 }),
      candidate("unknown", { health: "unknown", score: 1 }),
      candidate("online", { score: 0.1 })
    ])
    // A low score online beats a perfect score degraded; the last three keep the catalogue's order.
    expect(ids(routes)).toEqual(["online", "degraded", "offline", "not-serving", "unknown"])
  })

  it("orders machines of equal health by score, highest first", () => {
    const routes = orderRoutes([candidate("a", { score: 0.2 }), candidate("b", { score: 0.9 }), candidate("c", { score: 0.5 })])
    expect(ids(routes)).toEqual(["b", "c", "a"])
  })

  it("lets the preferred region break a tie, and only a tie", () => {
    const machines = [
      candidate("eu-1", { region: "eu", score: 0.8 }),
      candidate("us-1", { region: "us", score: 0.8 }),
      candidate("us-2", { region: "us", score: 0.7 }),
      candidate("us-3", { region: "us", score: 0.9, health: "degraded" })
    ]
    expect(ids(orderRoutes(machines))).toEqual(["eu-1", "us-1", "us-2", "us-3"])
    // us-1 overtakes its equal eu-1; us-2 (lower score) and us-3 (degraded) stay behind eu-1.
    expect(ids(orderRoutes(machines, "us"))).toEqual(["us-1", "eu-1", "us-2", "us-3"])
    expect(ids(orderRoutes(machines, "ap"))).toEqual(["eu-1", "us-1", "us-2", "us-3"])
  })

  it("keeps the catalogue's order among equals, and does not change its input", () => {
    const machines = [candidate("x"), candidate("y"), candidate("z")]
    expect(ids(orderRoutes(machines))).toEqual(["x", "y", "z"])
    expect(ids(orderRoutes(machines, "eu"))).toEqual(["x", "y", "z"])
    const input = [candidate("low", { score: 0 }), candidate("high", { score: 1 })]
    orderRoutes(input)
    expect(ids(input)).toEqual(["low", "high"])
  })

  it("returns nothing for no candidates", () => {
    expect(orderRoutes([], "eu")).toEqual([])
  })
})

// ---- Properties ---------------------------------------------------------------------------

const REGIONS = ["local", "eu", "us"] as const
const region = fc.constantFrom(...REGIONS)
const preferred = fc.option(fc.constantFrom(...REGIONS, "ap"), { nil: undefined })
// Few distinct scores so ties are common, plus any score the catalogue allows (0 to 1).
const score = fc.oneof(fc.constantFrom(0, 0.5, 1), fc.double({ min: 0, max: 1, noNaN: true }))
const health = fc.constantFrom<Health>("online", "degraded", "offline", "unknown")

/** Candidate lists whose machine ids are their input positions, so order is easy to compare. */
const candidates = fc
  .array(fc.record({ region, health, serving: fc.boolean(), score }), { maxLength: 12 })
  .map((list) => list.map((c, i): RouteCandidate => ({ machine_id: `m${i}`, ...c })))

const position = (routes: ReadonlyArray<RouteCandidate>) => {
  const at = new Map(routes.map((c, i) => [c.machine_id, i]))
  return (c: RouteCandidate) => at.get(c.machine_id)!
}

const pairs = <A>(list: ReadonlyArray<A>): Array<[A, A]> =>
  list.flatMap((a, i) => list.slice(i + 1).map((b): [A, A] => [a, b]))

describe("orderRoutes, properties", () => {
  it("returns a permutation of its input", () => {
    fc.assert(fc.property(candidates, preferred, (input, region) => {
      const output = orderRoutes(input, region)
      expect(output).toHaveLength(input.length)
      // The same objects, each once.
      expect(new Set(output).size).toBe(input.length)
      for (const c of input) expect(output).toContain(c)
    }))
  })

  it("puts every serving and online candidate before every other one (health first)", () => {
    fc.assert(fc.property(candidates, preferred, (input, region) => {
      const output = orderRoutes(input, region)
      const firstOther = output.findIndex((c) => !(c.serving && c.health === "online"))
      if (firstOther >= 0) {
        expect(output.slice(firstOther).every((c) => !(c.serving && c.health === "online"))).toBe(true)
      }
      // More generally the health rank never decreases along the list.
      for (let i = 1; i < output.length; i++) {
        expect(healthRank(output[i]!)).toBeGreaterThanOrEqual(healthRank(output[i - 1]!))
      }
    }))
  })

  it("never lets the score increase among candidates of equal health rank", () => {
    fc.assert(fc.property(candidates, preferred, (input, region) => {
      const output = orderRoutes(input, region)
      for (let i = 1; i < output.length; i++) {
        const [prev, next] = [output[i - 1]!, output[i]!]
        if (healthRank(prev) === healthRank(next)) expect(next.score).toBeLessThanOrEqual(prev.score)
      }
    }))
  })

  it("lets the preferred region reorder only candidates equal in health rank and score", () => {
    fc.assert(fc.property(candidates, preferred, preferred, (input, r1, r2) => {
      const at1 = position(orderRoutes(input, r1))
      const at2 = position(orderRoutes(input, r2))
      for (const [a, b] of pairs(input)) {
        if (healthRank(a) !== healthRank(b) || a.score !== b.score) {
          expect(at1(a) < at1(b)).toBe(at2(a) < at2(b))
        }
      }
    }))
  })

  it("puts the preferred region first among candidates equal in health rank and score", () => {
    fc.assert(fc.property(candidates, fc.constantFrom(...REGIONS), (input, region) => {
      const at = position(orderRoutes(input, region))
      for (const [a, b] of pairs(input)) {
        if (healthRank(a) === healthRank(b) && a.score === b.score && a.region !== b.region) {
          if (a.region === region) expect(at(a)).toBeLessThan(at(b))
          if (b.region === region) expect(at(b)).toBeLessThan(at(a))
        }
      }
    }))
  })

  it("is stable: candidates equal in health rank, score and region keep their input order", () => {
    fc.assert(fc.property(candidates, preferred, (input, region) => {
      const at = position(orderRoutes(input, region))
      // pairs() lists each pair in input order, so a must stay before b.
      for (const [a, b] of pairs(input)) {
        if (healthRank(a) === healthRank(b) && a.score === b.score && a.region === b.region) {
          expect(at(a)).toBeLessThan(at(b))
        }
      }
    }))
  })

  it("is idempotent: ordering an ordered list changes nothing", () => {
    fc.assert(fc.property(candidates, preferred, (input, region) => {
      const once = orderRoutes(input, region)
      expect(orderRoutes(once, region)).toEqual(once)
    }))
  })
})
