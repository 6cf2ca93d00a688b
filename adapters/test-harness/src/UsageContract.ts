/**
 * The contract suite of the usage store port (core/src/ports/UsageStore.ts). Every implementation
 * runs it against its own layer: `usageStoreContract("memory", UsageStoreMemory)`.
 *
 * The layer is built once per suite and shared by its tests, so every test works on fresh random
 * account ids and refs (refs are unique across accounts) and never assumes an empty store: the
 * suite can run against a persistent database that earlier runs have written to.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Cause, Effect, Exit, type Layer, Stream } from "effect"
import fc from "fast-check"
import { generateId } from "@model-platform/core/Keys"
import {
  byTimeThenRef,
  dayOf,
  matchesUsageQuery,
  reportOf,
  type UsageDays,
  type UsageDimension,
  type UsageQuery,
  type UsageRecord,
  UsageStore
} from "@model-platform/core/ports/UsageStore"
import { type Timestamp, toTimestamp } from "@model-platform/core/Time"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

const unbounded = { concurrency: "unbounded" } as const

/** A fixed instant plus `ms`. */
const at = (ms: number): Timestamp => toTimestamp(Date.UTC(2026, 0, 15, 10, 20, 30, 456) + ms)
const HOUR = 3_600_000
const DAY = 24 * HOUR

const freshAccount = generateId("acct")
const freshRef = generateId("usage")

/** A record of `accountId` with every field set; `fields` overrides. */
const usageRecord = Effect.fnUntraced(function*(accountId: string, fields: Partial<UsageRecord> = {}) {
  const record: UsageRecord = {
    ref: yield* freshRef,
    account_id: accountId,
    at: at(0),
    key_id: "key_a",
    agent_id: null,
    machine_id: "m_1",
    service: "chat",
    model: "ref-chat",
    unit: "tokens",
    quantity: 1_500n,
    input_tokens: 1_000n,
    output_tokens: 500n,
    list_credits: 3_000n,
    credits: 2_000n,
    from_allowance: 600n,
    from_trial: 400n,
    ...fields
  }
  return record
})

/** Records and checks it was new. */
const recorded = Effect.fnUntraced(function*(accountId: string, fields: Partial<UsageRecord> = {}) {
  const record = yield* usageRecord(accountId, fields)
  assert.strictEqual(yield* (yield* UsageStore).record(record), "Recorded")
  return record
})

const wholeRange = (accountId: string): UsageQuery => ({ account_id: accountId, from: at(-400 * DAY), to: at(400 * DAY) })

const DIMENSIONS: ReadonlyArray<UsageDimension> = ["day", "service", "model", "key", "agent"]

const wholeDays = (accountId: string): UsageDays => ({
  account_id: accountId,
  from: dayOf(at(-400 * DAY)),
  to: dayOf(at(400 * DAY))
})

/** What the store shows of an account: "changes nothing" compares these. */
const snapshot = Effect.fnUntraced(function*(accountId: string) {
  const store = yield* UsageStore
  const query = wholeRange(accountId)
  return {
    list: yield* store.list(query),
    spent: yield* store.spent(query),
    report: yield* store.report(wholeDays(accountId), "model")
  }
})

/** The whole stream, collected (tests only: small ranges). */
const streamed = (query: UsageQuery, pageSize?: number) =>
  Effect.flatMap(UsageStore, (store) => Stream.runCollect(store.stream(query, { pageSize })))

/** Store failures are defects: input that breaks the port's rules must die, not succeed or fail. */
const assertDies = <A, E, R>(effect: Effect.Effect<A, E, R>, what: string) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(effect)
    assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), `${what}: expected a defect, got ${exit}`)
  })

const sum = (records: ReadonlyArray<UsageRecord>) => records.reduce((acc, r) => acc + r.credits, 0n)

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
          assert.deepStrictEqual(yield* streamed(query, pageSize), listed, `page size ${pageSize}`)
        }
        for (const filter of [{ key_id: "key_b" }, { service: "embeddings" }, { key_id: "key_a", service: "chat" }]) {
          const filtered = { ...query, ...filter }
          assert.deepStrictEqual(yield* streamed(filtered, 2), yield* (yield* UsageStore).list(filtered), JSON.stringify(filter))
        }
        // [from, to) as list: from included, to excluded
        const window = { ...query, from: at(1_000), to: at(3_000) }
        assert.deepStrictEqual(yield* streamed(window, 2), listed.filter((r) => matchesUsageQuery(window, r)))
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
                  assert.deepStrictEqual(yield* streamed(query, pageSize), yield* (yield* UsageStore).list(query))
                }))
            ),
            { numRuns: 15 }
          )
        )
      }), 120_000)
  })
}

/** Declares the usage store contract on `storeLayer` (built once for the suite). */
export const usageStoreContract = <E>(name: string, storeLayer: Layer.Layer<UsageStore, E>): void =>
  layer(storeLayer, layerOptions)(name, usageTests)
