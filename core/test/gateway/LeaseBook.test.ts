/**
 * The lease book (core/src/gateway/LeaseBook.ts): calls draw from the open lease of their key and
 * shape, one rpm hit each, until it is dry, out of hits, past its time or window, closed by a
 * notice or succeeded (a successor waits until it cannot lend); a lease spent fast asks once for
 * its successor; a lease is handed back for voiding once, only when it is closed and every
 * call drawn from it was metered or given back, and kept (its account holding one) until it is
 * voided. The property checks, under any sequence of those events, that no lease lends more than
 * it holds or more hits than it took.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { type Drawn, hitsAhead, LEASE_LIFE_MS, makeLeaseBook, type OpenLease } from "../../src/gateway/LeaseBook.ts"
import { drawFrom, type Holds } from "../../src/ledger/Lease.ts"

const WINDOW = 60_000
const credits = (amount: bigint): Holds => ({ allocations: [{ machine_id: null, amount }], grants: [] })
const NOTHING: Holds = { allocations: [], grants: [] }

const lease = (ref: string, left: Holds, fields: Partial<OpenLease> = {}): OpenLease => ({
  ref,
  accountId: "acct_a",
  key: "key_a chat",
  window: 0,
  windowEnd: WINDOW,
  closesAt: LEASE_LIFE_MS,
  expiresAt: 400_000,
  left,
  hitsLeft: 16,
  ...fields
})

describe("the lease book", () => {
  it("hits ahead: rpm / 8, at least 1, at most 16", () => {
    expect([1, 8, 60, 128, 1_000].map(hitsAhead)).toEqual([1, 1, 7, 16, 16])
  })

  it("calls draw until the lease is dry or out of hits; each draw takes one hit", () => {
    const book = makeLeaseBook()
    expect(book.open(lease("l1", credits(10n), { hitsLeft: 3 }))).toEqual([])
    const toVoid: Array<string> = []
    expect(book.draw("key_a chat", 4n, 1, toVoid)?.drawn).toEqual(credits(4n))
    expect(book.draw("key_a chat", 7n, 1, toVoid)).toBeUndefined() // 6 left
    expect(book.draw("key_a chat", 6n, 1, toVoid)?.drawn).toEqual(credits(6n))
    expect(book.draw("key_a chat", 0n, 1, toVoid)?.drawn).toEqual({ allocations: [], grants: [] })
    expect(book.draw("key_a chat", 0n, 1, toVoid)).toBeUndefined() // three hits used
    expect(book.draw("other key", 1n, 1, toVoid)).toBeUndefined()
    expect(toVoid).toEqual([])
  })

  it("a lease stops lending at its time and its window's end, and is voided once its calls are metered", () => {
    const book = makeLeaseBook()
    book.open(lease("l1", credits(10n)))
    const toVoid: Array<string> = []
    const drawn = book.draw("key_a chat", 2n, 1, toVoid)!
    expect(book.draw("key_a chat", 2n, LEASE_LIFE_MS, toVoid)).toBeUndefined()
    expect(toVoid).toEqual([]) // one call still to meter
    expect(book.done(drawn, drawn.drawn)).toEqual(["l1"])
    expect(book.done(drawn, drawn.drawn)).toEqual([]) // once
    // Kept until it is voided: its account still holds a lease.
    expect(book.holdsAny("acct_a")).toBe(true)
    expect(book.voided("l1")).toEqual("acct_a")
    expect(book.held()).toEqual([])
    expect(book.holdsAny("acct_a")).toBe(false)
    expect(book.voided("l1")).toBeUndefined()
    book.open(lease("l2", credits(10n), { closesAt: WINDOW + 5_000 }))
    expect(book.draw("key_a chat", 2n, WINDOW, toVoid)).toBeUndefined()
    expect(toVoid).toEqual(["l2"])
  })

  it("a successor waits until its predecessor cannot lend; the predecessor is voided after its last call", () => {
    const book = makeLeaseBook()
    book.open(lease("l1", credits(6n), { hitsLeft: 2 }))
    const first = book.draw("key_a chat", 3n, 1, [])!
    expect(book.open(lease("l2", credits(8n)))).toEqual([])
    // l1's second hit and its 3 left are used before l2 lends.
    expect(book.draw("key_a chat", 3n, 2, [])?.lease).toEqual("l1")
    expect(book.draw("key_a chat", 3n, 3, [])?.lease).toEqual("l2")
    expect(book.held().find((l) => l.ref === "l1")?.closed).toBe(true)
    expect(book.done(first, NOTHING)).toEqual([])
    expect(book.done({ lease: "l1", drawn: credits(3n) }, NOTHING)).toEqual(["l1"])
    book.voided("l1")
    expect(book.held().map((l) => l.ref)).toEqual(["l2"])
    // A successor waiting when a third is granted is closed (one waits at most).
    expect(book.open(lease("l3", credits(8n)))).toEqual([])
    expect(book.open(lease("l4", credits(8n)))).toEqual(["l3"])
  })

  it("a lease spent fast asks once, at half spent, for its successor", () => {
    const book = makeLeaseBook()
    book.open(lease("l1", credits(100n), { hitsLeft: 4 }))
    const refills = (times: ReadonlyArray<number>) => times.map((t) => book.draw("key_a chat", 1n, t, [])?.refill)
    // Half the hits used by the second call, within the first quarter of the lease's life.
    expect(refills([1, 2, 3])).toEqual([false, true, false])
    // Half the credit spent asks too.
    book.open(lease("l2", credits(10n), { hitsLeft: 16, closesAt: 1_000 + LEASE_LIFE_MS }))
    expect(book.draw("key_a chat", 1n, 1_001, [])?.lease).toEqual("l1") // l1 lends its last hit first
    expect([4n, 1n, 1n].map((e) => book.draw("key_a chat", e, 1_002, [])?.refill)).toEqual([false, true, false])
  })

  it("no successor is asked for by a lease spent slowly, one of a single hit, or one whose successor waits", () => {
    const slow = makeLeaseBook()
    slow.open(lease("l1", credits(100n), { hitsLeft: 4 }))
    expect([1, LEASE_LIFE_MS / 2, LEASE_LIFE_MS / 2 + 1].map((t) => slow.draw("key_a chat", 1n, t, [])?.refill)).toEqual([false, false, false])
    const single = makeLeaseBook()
    single.open(lease("l1", credits(100n), { hitsLeft: 1 }))
    expect(single.draw("key_a chat", 1n, 1, [])?.refill).toBe(false)
    const waiting = makeLeaseBook()
    waiting.open(lease("l1", credits(100n), { hitsLeft: 4 }))
    waiting.open(lease("l2", credits(100n), { hitsLeft: 4 }))
    expect([1, 2].map((t) => waiting.draw("key_a chat", 1n, t, [])?.refill)).toEqual([false, false])
  })

  it("what a call was not charged of its draw is lent again, in the lease's spending order", () => {
    const book = makeLeaseBook()
    const holds: Holds = {
      allocations: [{ machine_id: "m_1", amount: 3n }, { machine_id: null, amount: 5n }],
      grants: [{ grant: "allowance:chat", period: "2026-01", amount: 2n }]
    }
    book.open(lease("l1", holds))
    const call = book.draw("key_a chat", 6n, 1, [])!
    expect(call.drawn).toEqual({
      allocations: [{ machine_id: "m_1", amount: 3n }, { machine_id: null, amount: 1n }],
      grants: [{ grant: "allowance:chat", period: "2026-01", amount: 2n }]
    })
    expect(book.done(call, NOTHING)).toEqual([])
    expect(book.draw("key_a chat", 6n, 2, [])?.drawn).toEqual(call.drawn)
    // Metered, charged the machine's 3 and 1 of the allowance: the allowance's other 1 and the
    // account-wide 1 are lent again, so the next draw of 2 takes the allowance's 1 first.
    const second = book.draw("key_a chat", 2n, 3, [])
    expect(second?.drawn).toEqual({ allocations: [{ machine_id: null, amount: 2n }], grants: [] })
    book.done(call, { allocations: [{ machine_id: "m_1", amount: 3n }], grants: [{ grant: "allowance:chat", period: "2026-01", amount: 1n }] })
    expect(book.draw("key_a chat", 2n, 4, [])?.drawn).toEqual({
      allocations: [{ machine_id: null, amount: 1n }],
      grants: [{ grant: "allowance:chat", period: "2026-01", amount: 1n }]
    })
  })

  it("a notice closes its account's leases; closeAll closes every one", () => {
    const book = makeLeaseBook()
    book.open(lease("l1", credits(4n)))
    book.open(lease("l2", credits(4n), { accountId: "acct_b", key: "key_b chat" }))
    const drawn = book.draw("key_b chat", 1n, 1, [])!
    expect(book.closeAccount("acct_a")).toEqual(["l1"])
    expect(book.draw("key_a chat", 1n, 2, [])).toBeUndefined()
    expect(book.closeAll()).toEqual([])
    expect(book.draw("key_b chat", 1n, 2, [])).toBeUndefined()
    expect(book.done(drawn, drawn.drawn)).toEqual(["l2"])
  })

  type Op =
    | { readonly kind: "open"; readonly key: number; readonly amount: bigint; readonly hits: number }
    | { readonly kind: "draw"; readonly key: number; readonly estimate: bigint }
    | { readonly kind: "metered" | "giveBack"; readonly pick: number }
    | { readonly kind: "tick"; readonly ms: number }
    | { readonly kind: "notice" | "closeAll" | "closeDue" }

  const opArb: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant("open" as const), key: fc.nat(1), amount: fc.bigInt({ min: 0n, max: 12n }), hits: fc.integer({ min: 1, max: 5 }) }),
    { arbitrary: fc.record({ kind: fc.constant("draw" as const), key: fc.nat(1), estimate: fc.bigInt({ min: 0n, max: 5n }) }), weight: 4 },
    { arbitrary: fc.record({ kind: fc.constantFrom("metered" as const, "giveBack" as const), pick: fc.nat(20) }), weight: 2 },
    fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 8_000 }) }),
    fc.record({ kind: fc.constantFrom("notice" as const, "closeAll" as const, "closeDue" as const) })
  )

  it("property: no lease lends more than it holds or more hits than it took; each is voided once, when closed and settled", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
        const book = makeLeaseBook()
        let now = 0
        let n = 0
        // Per lease: what it was opened with, charged so far, lent to calls not done yet, and hits.
        const taken = new Map<string, { amount: bigint; hits: number; charged: bigint; lent: bigint; hitsUsed: number; outstanding: number }>()
        const calls: Array<Drawn> = []
        const voided = new Set<string>()
        const refilled = new Set<string>()
        const void_ = (refs: ReadonlyArray<string>) => {
          for (const ref of refs) {
            expect(voided.has(ref)).toBe(false)
            expect(taken.get(ref)?.outstanding).toBe(0)
            voided.add(ref)
            expect(book.voided(ref)).toEqual("acct_a")
          }
        }
        const sum = (h: Holds) => [...h.allocations, ...h.grants].reduce((x, a) => x + a.amount, 0n)
        for (const op of ops) {
          switch (op.kind) {
            case "open": {
              const ref = `l${++n}`
              const window = now - (now % WINDOW)
              taken.set(ref, { amount: op.amount, hits: op.hits, charged: 0n, lent: 0n, hitsUsed: 0, outstanding: 0 })
              void_(book.open(lease(ref, credits(op.amount), { key: `k${op.key}`, window, windowEnd: window + WINDOW, closesAt: now + LEASE_LIFE_MS, hitsLeft: op.hits })))
              break
            }
            case "draw": {
              const toVoid: Array<string> = []
              const call = book.draw(`k${op.key}`, op.estimate, now, toVoid)
              void_(toVoid)
              if (call !== undefined) {
                const t = taken.get(call.lease)!
                if (call.refill) {
                  expect(refilled.has(call.lease)).toBe(false)
                  refilled.add(call.lease)
                }
                expect(voided.has(call.lease)).toBe(false)
                expect(sum(call.drawn)).toBe(op.estimate)
                t.lent += op.estimate
                t.hitsUsed += 1
                t.outstanding += 1
                expect(t.charged + t.lent).toBeLessThanOrEqual(t.amount)
                expect(t.hitsUsed).toBeLessThanOrEqual(t.hits)
                calls.push(call)
              }
              break
            }
            case "metered":
            case "giveBack": {
              if (calls.length === 0) break
              const [call] = calls.splice(op.pick % calls.length, 1)
              const t = taken.get(call!.lease)!
              t.outstanding -= 1
              // Metered: charged none, half or all of its draw (in spending order); given back: none.
              const part = op.kind === "giveBack" ? 0n : (sum(call!.drawn) * BigInt(op.pick % 3)) / 2n
              const charged = drawFrom(call!.drawn, part)!
              t.lent -= sum(call!.drawn)
              t.charged += part
              void_(book.done(call!, charged))
              break
            }
            case "tick":
              now += op.ms
              break
            case "notice":
              void_(book.closeAccount("acct_a"))
              break
            case "closeAll":
              void_(book.closeAll())
              break
            case "closeDue":
              void_(book.closeDue(now))
              break
          }
          // Per key, one lease lends and one successor waits at most.
          const unclosed = book.held().filter((l) => !l.closed).map((l) => l.key)
          for (const key of new Set(unclosed)) expect(unclosed.filter((k) => k === key).length).toBeLessThanOrEqual(2)
          expect(book.holdsAny("acct_a")).toBe(book.held().length > 0)
          for (const held of book.held()) {
            const t = taken.get(held.ref)!
            expect(held.outstanding).toBe(t.outstanding)
            if (!held.closed) expect(sum(held.left)).toBe(t.amount - t.charged - t.lent)
          }
        }
        // Every call metered, every lease closed: each one is voided, once.
        for (const call of calls) {
          taken.get(call.lease)!.outstanding -= 1
          void_(book.done(call, call.drawn))
        }
        void_(book.closeAll())
        expect([...voided].sort()).toEqual([...taken.keys()].sort())
        expect(book.holdsAny("acct_a")).toBe(false)
      }),
      { numRuns: 500 }
    )
  })
})
