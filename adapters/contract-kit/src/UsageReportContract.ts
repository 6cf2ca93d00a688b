/**
 * The usage store contract's reports and streams (core/src/billing/UsageStore.ts `report`,
 * `stream`), run by `usageStoreContract` (UsageContract.ts) on every store: a report equals what
 * the records themselves say (`reportOf`) for any history with replays, over UTC day edges, whole
 * months and filters, with sums past 2^63; the stream yields every record of `list`, in its order,
 * across page boundaries.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { byTimeThenRef, lineOf, matchesUsageQuery, reportOf, type UsageDays, type UsageRecord, UsageStore } from "@model-platform/core/billing"
import { dayOf, toTimestamp } from "@model-platform/core/kernel"
import {
  at,
  DAY,
  DIMENSIONS,
  freshAccount,
  freshRef,
  HOUR,
  recorded,
  listedLines,
  streamed,
  unbounded,
  usageRecord,
  wholeDays,
  wholeRange
} from "./UsageContractSupport.ts"

export const usageReportTests = (it: Vitest.MethodsNonLive<UsageStore>) => {
  describe("report (per-day rollups)", () => {
    it.effect("groups by each dimension: calls and exact sums, whole UTC days, both ends included", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const midnight = Date.UTC(2026, 0, 16)
        const big = 2n ** 62n + 1n
        const records = [
          // 2026-01-15, its last millisecond; 2026-01-16 from its first: the UTC day of `at`
          yield* recorded(account, { at: toTimestamp(midnight - 1), credits: big, list_credits: big }),
          yield* recorded(account, { at: toTimestamp(midnight), credits: big, list_credits: big, agent_id: "agent_1" }),
          yield* recorded(account, { at: toTimestamp(midnight + 5), service: "embeddings", model: "ref-embed", key_id: "key_b" }),
          yield* recorded(account, { at: toTimestamp(midnight + DAY), model: "ref-chat-large", agent_id: "agent_1", credits: 0n }),
          yield* recorded(account, { at: toTimestamp(midnight + 2 * DAY - 1), key_id: "key_b", agent_id: "agent_2" })
        ]
        // another account's usage on the same days is not counted
        yield* recorded(yield* freshAccount, { at: toTimestamp(midnight) })
        const days: UsageDays = { account_id: account, from: "2026-01-15", to: "2026-01-17" }
        for (const groupBy of DIMENSIONS) {
          assert.deepStrictEqual(yield* store.report(days, groupBy), reportOf(records, days, groupBy), groupBy)
        }
        const byDay = yield* store.report(days, "day")
        assert.deepStrictEqual(byDay.map((g) => [g.key, g.calls]), [["2026-01-15", 1n], ["2026-01-16", 2n], ["2026-01-17", 2n]])
        // sums beyond 2^63 stay exact
        const byService = yield* store.report(days, "service")
        assert.strictEqual(byService.find((g) => g.key === "chat")?.credits, 2n * big + 2_000n)
        assert.deepStrictEqual((yield* store.report(days, "agent")).map((g) => [g.key, g.calls]), [["", 2n], ["agent_1", 2n], ["agent_2", 1n]])
        // one day, the first and the last
        assert.deepStrictEqual(
          yield* store.report({ ...days, from: "2026-01-16", to: "2026-01-16" }, "model"),
          reportOf(records.slice(1, 3), days, "model")
        )
        assert.deepStrictEqual(yield* store.report({ ...days, from: "2026-01-18", to: "2026-02-28" }, "day"), [])
        assert.deepStrictEqual(yield* store.report({ ...days, from: "2026-01-17", to: "2026-01-16" }, "day"), [])
        // key and service filters
        assert.deepStrictEqual(
          yield* store.report({ ...days, key_id: "key_b" }, "day"),
          reportOf(records.filter((r) => r.key_id === "key_b"), days, "day")
        )
        assert.deepStrictEqual(
          yield* store.report({ ...days, service: "embeddings", key_id: "key_b" }, "model"),
          reportOf(records.filter((r) => r.service === "embeddings"), days, "model")
        )
      }))

    it.effect("ranges of whole calendar months, with and without days at their ends", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const records: Array<UsageRecord> = []
        // the first and last millisecond of each month of 2026-01 .. 2026-05, and the 15th
        for (let month = 0; month < 5; month++) {
          for (const instant of [Date.UTC(2026, month, 1), Date.UTC(2026, month, 15, 12), Date.UTC(2026, month + 1, 1) - 1]) {
            records.push(yield* recorded(account, {
              at: toTimestamp(instant),
              key_id: month % 2 === 0 ? "key_a" : "key_b",
              model: `model-${month}`,
              credits: BigInt(month + 1) * 1_000n
            }))
          }
        }
        const ranges: ReadonlyArray<readonly [string, string]> = [
          ["2026-01-01", "2026-05-31"],
          ["2026-02-01", "2026-02-28"],
          ["2026-01-31", "2026-02-01"],
          ["2026-01-15", "2026-04-15"],
          ["2026-01-02", "2026-03-31"],
          ["2026-02-01", "2026-04-30"],
          ["2026-03-01", "2026-03-30"],
          ["2025-12-01", "2026-06-30"]
        ]
        for (const [from, to] of ranges) {
          for (const filter of [{}, { key_id: "key_a" }, { service: "chat", key_id: "key_b" }]) {
            const days: UsageDays = { account_id: account, from, to, ...filter }
            for (const groupBy of DIMENSIONS) {
              assert.deepStrictEqual(
                yield* store.report(days, groupBy),
                reportOf(records, days, groupBy),
                `${from}..${to} ${JSON.stringify(filter)} by ${groupBy}`
              )
            }
          }
        }
      }))

    it.effect("a duplicate record is not counted twice, also when replays race", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* freshAccount
        const first = yield* recorded(account, { at: at(HOUR) })
        const replays = [first, { ...first, credits: 7n }, { ...first, model: "other" }, { ...first, at: at(3 * DAY) }]
        const results = yield* Effect.all([...replays, ...replays, ...replays].map(store.record), unbounded)
        assert.isTrue(results.every((r) => r === "Duplicate"))
        for (const groupBy of DIMENSIONS) {
          assert.deepStrictEqual(yield* store.report(wholeDays(account), groupBy), reportOf([first], wholeDays(account), groupBy))
        }
      }))

    it.effect("property: for any history with replays, every report equals what the records say", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<UsageStore>()
        const run = Effect.runPromiseWith(services)
        const opsArb = fc.array(
          fc.record({
            ref: fc.nat({ max: 11 }),
            // from 2026-02-27 over the next three months: ranges take whole months and their ends
            day: fc.oneof(fc.nat({ max: 4 }), fc.nat({ max: 95 })),
            // within its day: the first and last millisecond are the edges that matter
            time: fc.constantFrom(0, 1, 12 * HOUR, DAY - 1),
            key: fc.constantFrom("key_a", "key_b"),
            model: fc.constantFrom(["chat", "ref-chat"], ["chat", "ref-chat-2"], ["embeddings", "ref-embed"]),
            agent: fc.constantFrom(null, "agent_1", "agent_2"),
            credits: fc.bigInt({ min: 0n, max: 2n ** 62n }),
            allowance: fc.bigInt({ min: 0n, max: 10n ** 9n }),
            other: fc.boolean()
          }),
          { maxLength: 30 }
        )
        const queriesArb = fc.array(
          fc.record({
            from: fc.oneof(fc.nat({ max: 5 }), fc.nat({ max: 96 })),
            length: fc.oneof(fc.nat({ max: 5 }), fc.nat({ max: 96 })),
            groupBy: fc.constantFrom(...DIMENSIONS),
            key: fc.option(fc.constantFrom("key_a", "key_b", "key_none"), { nil: undefined }),
            service: fc.option(fc.constantFrom("chat", "embeddings"), { nil: undefined })
          }),
          { minLength: 1, maxLength: 5 }
        )
        const dayAt = (d: number) => dayOf(toTimestamp(Date.UTC(2026, 1, 27) + d * DAY))
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(opsArb, queriesArb, (ops, queries) =>
              run(Effect.gen(function*() {
                const store = yield* UsageStore
                const account = yield* freshAccount
                const otherAccount = yield* freshAccount
                const refs = yield* Effect.all(Array.from({ length: 12 }, () => freshRef))
                const firsts = new Map<string, UsageRecord>()
                for (const op of ops) {
                  const record = yield* usageRecord(op.other ? otherAccount : account, {
                    ref: refs[op.ref]!,
                    at: toTimestamp(Date.UTC(2026, 1, 27) + op.day * DAY + op.time),
                    key_id: op.key,
                    service: op.model[0],
                    model: op.model[1],
                    agent_id: op.agent,
                    credits: op.credits,
                    list_credits: op.credits + op.allowance,
                    from_allowance: op.allowance,
                    from_trial: op.allowance / 2n
                  })
                  yield* store.record(record)
                  if (!firsts.has(record.ref)) firsts.set(record.ref, record)
                }
                for (const q of queries) {
                  const days: UsageDays = {
                    account_id: account,
                    from: dayAt(q.from),
                    to: dayAt(q.from + q.length),
                    key_id: q.key,
                    service: q.service
                  }
                  assert.deepStrictEqual(yield* store.report(days, q.groupBy), reportOf(firsts.values(), days, q.groupBy))
                }
              }))),
            { numRuns: 25 }
          )
        )
      }), 120_000)
  })

  describe("stream (keyset pages)", () => {
    it.effect("yields every record of list, in its order, across page boundaries and equal times", () =>
      Effect.gen(function*() {
        const account = yield* freshAccount
        // 11 records, several sharing an `at` (ordered by ref), so pages end inside a tie
        const records: Array<UsageRecord> = []
        for (let i = 0; i < 11; i++) {
          records.push(yield* recorded(account, {
            at: at(Math.floor(i / 3) * 1_000),
            key_id: i % 2 === 0 ? "key_a" : "key_b",
            service: i % 3 === 0 ? "embeddings" : "chat"
          }))
        }
        yield* recorded(yield* freshAccount, { at: at(1_000) })
        const query = wholeRange(account)
        const listed = yield* (yield* UsageStore).list(query)
        assert.deepStrictEqual(listed, [...records].sort(byTimeThenRef))
        for (const pageSize of [1, 2, 3, 4, 10, 11, 12, 1_000, undefined]) {
          assert.deepStrictEqual(yield* streamed(query, pageSize), listed.map(lineOf), `page size ${pageSize}`)
        }
        for (const filter of [{ key_id: "key_b" }, { service: "embeddings" }, { key_id: "key_a", service: "chat" }]) {
          const filtered = { ...query, ...filter }
          assert.deepStrictEqual(yield* streamed(filtered, 2), yield* listedLines(filtered), JSON.stringify(filter))
        }
        // [from, to) as list: from included, to excluded
        const window = { ...query, from: at(1_000), to: at(3_000) }
        assert.deepStrictEqual(yield* streamed(window, 2), listed.filter((r) => matchesUsageQuery(window, r)).map(lineOf))
        assert.deepStrictEqual(yield* streamed({ ...query, account_id: yield* freshAccount }, 2), [])
      }))

    it.effect("property: any page size streams exactly what list answers", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<UsageStore>()
        const run = Effect.runPromiseWith(services)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.array(fc.record({ second: fc.nat({ max: 5 }), key: fc.constantFrom("key_a", "key_b") }), { maxLength: 20 }),
              fc.integer({ min: 1, max: 7 }),
              fc.option(fc.constantFrom("key_a", "key_b"), { nil: undefined }),
              (ops, pageSize, key) =>
                run(Effect.gen(function*() {
                  const account = yield* freshAccount
                  for (const op of ops) yield* recorded(account, { at: at(op.second * 1_000), key_id: op.key })
                  const query = { ...wholeRange(account), key_id: key }
                  assert.deepStrictEqual(yield* streamed(query, pageSize), yield* listedLines(query))
                }))
            ),
            { numRuns: 15 }
          )
        )
      }), 120_000)
  })
}
