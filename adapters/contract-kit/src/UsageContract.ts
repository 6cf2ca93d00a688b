/**
 * The contract suite of the usage store port (core/src/billing/UsageStore.ts). Every implementation
 * runs it against its own layer: `usageStoreContract("memory", UsageStoreMemory)`.
 *
 * The layer is built once per suite and shared by its tests, so every test works on fresh random
 * account ids and refs (refs are unique across accounts) and never assumes an empty store: the
 * suite can run against a persistent database that earlier runs have written to. Reports and
 * streams are checked by UsageReportContract.ts, in the same suite.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import fc from "fast-check"
import {
  byTimeThenRef,
  matchesUsageQuery,
  reportOf,
  type UsageQuery,
  type UsageRecord,
  UsageStore
} from "@model-platform/core/billing"
import { assertDies } from "./ContractSupport.ts"
import {
  at,
  freshAccount,
  freshRef,
  HOUR,
  layerOptions,
  recorded,
  snapshot,
  sum,
  unbounded,
  usageRecord,
  wholeDays,
  wholeRange
} from "./UsageContractSupport.ts"
import { usageReportTests } from "./UsageReportContract.ts"

// ---------------------------------------------------------------------------------------------
// the property: any sequence of records with replays

interface Op {
  /** Index into the run's pool of refs: a small pool makes replays frequent. */
  readonly ref: number
  readonly minute: number
  readonly key: "key_a" | "key_b"
  readonly service: "chat" | "embeddings" | "forecast"
  readonly credits: bigint
  /** The record belongs to the run's other account. */
  readonly other: boolean
}

const opArb: fc.Arbitrary<Op> = fc.record({
  ref: fc.nat({ max: 7 }),
  minute: fc.nat({ max: 10 }),
  key: fc.constantFrom("key_a" as const, "key_b" as const),
  service: fc.constantFrom("chat" as const, "embeddings" as const, "forecast" as const),
  credits: fc.oneof(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.constant(0n)),
  other: fc.boolean()
})

const queryArb = fc.record({
  from: fc.nat({ max: 11 }),
  length: fc.nat({ max: 12 }),
  key: fc.option(fc.constantFrom("key_a", "key_b", "key_none"), { nil: undefined }),
  service: fc.option(fc.constantFrom("chat", "embeddings", "forecast"), { nil: undefined })
})

// ---------------------------------------------------------------------------------------------
// tests

const usageTests = (it: Vitest.MethodsNonLive<UsageStore>) => {
  describe("record and byRef", () => {
    it.effect("byRef returns every field exactly (amounts beyond 2^53, null and set agent, any text)", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const big = 2n ** 62n + 1n
        const a = yield* recorded(account, {
          quantity: big,
          input_tokens: big - 1n,
          output_tokens: 2n ** 53n + 1n,
          list_credits: big,
          credits: big - 7n,
          from_allowance: 2n ** 60n,
          from_trial: 3n
        })
        const b = yield* recorded(account, {
          agent_id: "agent_ünïcödé 'quoted' \"x\"",
          model: "m/with#odd:chars",
          service: "forecast",
          unit: "requests",
          quantity: 0n,
          input_tokens: 0n,
          output_tokens: 0n,
          list_credits: 0n,
          credits: 0n,
          from_allowance: 0n,
          from_trial: 0n
        })
        assert.deepStrictEqual(yield* store.byRef(a.ref), a)
        assert.deepStrictEqual(yield* store.byRef(b.ref), b)
        assert.isUndefined(yield* store.byRef(yield* freshRef))
      }))

    it.effect("an unknown account lists nothing and has spent 0", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* snapshot(yield* freshAccount), { list: [], spent: 0n, report: [] })
      }))

    it.effect("a ref recorded again changes nothing, whatever the replay carries", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const first = yield* recorded(account)
        const before = yield* snapshot(account)
        for (
          const replay of [
            { ...first },
            { ...first, credits: 9_999_999n, at: at(HOUR) },
            { ...first, key_id: "key_other", service: "embeddings" },
            // refs are unique across accounts: another account cannot take it either
            { ...first, account_id: yield* freshAccount }
          ]
        ) {
          assert.strictEqual(yield* store.record(replay), "Duplicate")
        }
        assert.deepStrictEqual(yield* snapshot(account), before)
        assert.deepStrictEqual(yield* store.byRef(first.ref), first)
      }))

    it.effect("concurrent records of one ref: exactly one is recorded", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const ref = yield* freshRef
        const attempts = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => usageRecord(account, { ref, credits: BigInt(i + 1), at: at(i) }))
        )
        const results = yield* Effect.all(attempts.map(store.record), unbounded)
        assert.strictEqual(results.filter((r) => r === "Recorded").length, 1)
        const winner = attempts[results.indexOf("Recorded")]!
        assert.deepStrictEqual(yield* snapshot(account), {
          list: [winner],
          spent: winner.credits,
          report: reportOf([winner], wholeDays(account), "model")
        })
        assert.deepStrictEqual(yield* store.byRef(ref), winner)
      }))

    it.effect("concurrent records of distinct refs are all kept", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const records = yield* Effect.all(
          Array.from({ length: 25 }, (_, i) => usageRecord(account, { credits: BigInt(i + 1) * 1_000_001n, at: at(i) }))
        )
        const results = yield* Effect.all(records.map(store.record), unbounded)
        assert.isTrue(results.every((r) => r === "Recorded"))
        assert.deepStrictEqual(yield* snapshot(account), {
          list: records,
          spent: 325n * 1_000_001n,
          report: reportOf(records, wholeDays(account), "model")
        })
      }))

    it.effect("a record that breaks the rules is a defect and is not kept", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        for (
          const bad of [
            yield* usageRecord(account, { ref: "" }),
            yield* usageRecord(account, { credits: -1n }),
            yield* usageRecord(account, { list_credits: -1n }),
            yield* usageRecord(account, { quantity: -1n }),
            yield* usageRecord(account, { from_trial: -1n })
          ]
        ) {
          yield* assertDies(store.record(bad), `record ${JSON.stringify(bad, (_, v) => typeof v === "bigint" ? `${v}` : v)}`)
        }
        assert.deepStrictEqual(yield* snapshot(account), { list: [], spent: 0n, report: [] })
      }))
  })

  describe("list and spent", () => {
    it.effect("[from, to): from is included, to is excluded; oldest first, equal times by ref", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const other = yield* freshAccount
        const before = yield* recorded(account, { at: at(-1) })
        const atFrom = yield* recorded(account, { at: at(0) })
        const tieB = yield* recorded(account, { ref: `${yield* freshRef}-b`, at: at(5) })
        const tieA = yield* recorded(account, { ref: `${tieB.ref.slice(0, -2)}-a`, at: at(5) })
        const middle = yield* recorded(account, { at: at(3) })
        const lastIn = yield* recorded(account, { at: at(HOUR - 1) })
        const atTo = yield* recorded(account, { at: at(HOUR) })
        yield* recorded(other, { at: at(1) })
        const query = { account_id: account, from: at(0), to: at(HOUR) }
        const expected = [atFrom, middle, tieA, tieB, lastIn]
        assert.deepStrictEqual(yield* store.list(query), expected)
        assert.strictEqual(yield* store.spent(query), sum(expected))
        assert.deepStrictEqual(yield* store.list({ ...query, to: at(0) }), [])
        assert.deepStrictEqual(yield* store.list({ ...query, from: at(-1), to: at(0) }), [before])
        assert.deepStrictEqual(yield* store.list({ ...query, from: at(HOUR), to: at(HOUR + 1) }), [atTo])
      }))

    it.effect("filters by key and by service, alone and together", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const a1 = yield* recorded(account, { at: at(1), key_id: "key_a", service: "chat", credits: 1n })
        const a2 = yield* recorded(account, { at: at(2), key_id: "key_a", service: "embeddings", credits: 20n })
        const b1 = yield* recorded(account, { at: at(3), key_id: "key_b", service: "chat", credits: 300n })
        const b2 = yield* recorded(account, { at: at(4), key_id: "key_b", service: "forecast", credits: 4_000n })
        const all = wholeRange(account)
        const cases: ReadonlyArray<readonly [Partial<UsageQuery>, ReadonlyArray<UsageRecord>]> = [
          [{}, [a1, a2, b1, b2]],
          [{ key_id: "key_a" }, [a1, a2]],
          [{ key_id: "key_b" }, [b1, b2]],
          [{ service: "chat" }, [a1, b1]],
          [{ key_id: "key_b", service: "chat" }, [b1]],
          [{ key_id: "key_a", service: "forecast" }, []],
          [{ key_id: "key_none" }, []]
        ]
        for (const [filter, expected] of cases) {
          const query = { ...all, ...filter }
          assert.deepStrictEqual(yield* store.list(query), expected, JSON.stringify(filter))
          assert.strictEqual(yield* store.spent(query), sum(expected), JSON.stringify(filter))
        }
      }))

    it.effect("spent sums what was charged (not list price), exactly, also beyond 2^63 in total", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const big = 2n ** 62n + 1n
        yield* recorded(account, { at: at(1), credits: big, list_credits: big + 5n })
        yield* recorded(account, { at: at(2), credits: big, list_credits: 0n })
        yield* recorded(account, { at: at(3), credits: 1n })
        assert.strictEqual(yield* store.spent(wholeRange(account)), 2n * big + 1n)
      }))

    it.effect("property: after any sequence of records with replays, list and spent show the first record of each ref", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<UsageStore>()
        const run = Effect.runPromiseWith(services)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.array(opArb, { maxLength: 25 }), fc.array(queryArb, { minLength: 1, maxLength: 4 }), (ops, queries) =>
              run(Effect.gen(function*() {
                const store = yield* UsageStore
                const account = yield* freshAccount
                const otherAccount = yield* freshAccount
                const refs = yield* Effect.all(Array.from({ length: 8 }, () => freshRef))
                const firsts = new Map<string, UsageRecord>()
                for (const op of ops) {
                  const record = yield* usageRecord(op.other ? otherAccount : account, {
                    ref: refs[op.ref]!,
                    at: at(op.minute * 60_000),
                    key_id: op.key,
                    service: op.service,
                    credits: op.credits,
                    list_credits: op.credits * 2n
                  })
                  const result = yield* store.record(record)
                  assert.strictEqual(result, firsts.has(record.ref) ? "Duplicate" : "Recorded")
                  if (!firsts.has(record.ref)) firsts.set(record.ref, record)
                }
                for (const q of queries) {
                  const query: UsageQuery = {
                    account_id: account,
                    from: at(q.from * 60_000),
                    to: at((q.from + q.length) * 60_000),
                    key_id: q.key,
                    service: q.service
                  }
                  const expected = [...firsts.values()].filter((r) => matchesUsageQuery(query, r)).sort(byTimeThenRef)
                  assert.deepStrictEqual(yield* store.list(query), expected)
                  assert.strictEqual(yield* store.spent(query), sum(expected))
                }
                for (const [ref, first] of firsts) assert.deepStrictEqual(yield* store.byRef(ref), first)
              }))),
            { numRuns: 25 }
          )
        )
      }), 120_000)
  })
}

/** Declares the usage store contract on `storeLayer` (built once for the suite). */
export const usageStoreContract = <E>(name: string, storeLayer: Layer.Layer<UsageStore, E>): void =>
  layer(storeLayer, layerOptions)(name, (it) => {
    usageTests(it)
    usageReportTests(it)
  })
