/**
 * What the usage store's contract suites share (UsageContract.ts, UsageReportContract.ts): fresh
 * accounts and refs, full records, the ranges and snapshots the tests compare.
 */
import { assert } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { dayOf, generateId } from "@model-platform/core/kernel"
import { lineOf, reportOf, type UsageDays, type UsageDimension, type UsageQuery, type UsageRecord, UsageStore } from "@model-platform/core/billing"
import { assertDies } from "./ContractSupport.ts"
import { at, sampleUsage } from "./SampleRecords.ts"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
export const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

export const unbounded = { concurrency: "unbounded" } as const

/** A fixed instant plus `ms`. */
export { at }
export const HOUR = 3_600_000
export const DAY = 24 * HOUR

export const freshAccount = generateId("acct")
export const freshRef = generateId("usage")

/** A record of `accountId` with every field set; `fields` overrides. */
export const usageRecord = Effect.fnUntraced(function*(accountId: string, fields: Partial<UsageRecord> = {}) {
  return sampleUsage(yield* freshRef, accountId, { from_allowance: 600n, from_trial: 400n, ...fields })
})

/** Records and checks it was new. */
export const recorded = Effect.fnUntraced(function*(accountId: string, fields: Partial<UsageRecord> = {}) {
  const record = yield* usageRecord(accountId, fields)
  assert.strictEqual(yield* (yield* UsageStore).record(record), "Recorded")
  return record
})

export const wholeRange = (accountId: string): UsageQuery => ({ account_id: accountId, from: at(-400 * DAY), to: at(400 * DAY) })

export const DIMENSIONS: ReadonlyArray<UsageDimension> = ["day", "service", "model", "key", "agent"]

export const wholeDays = (accountId: string): UsageDays => ({
  account_id: accountId,
  from: dayOf(at(-400 * DAY)),
  to: dayOf(at(400 * DAY))
})

/** What the store shows of an account: "changes nothing" compares these. */
export const snapshot = Effect.fnUntraced(function*(accountId: string) {
  const store = yield* UsageStore
  const query = wholeRange(accountId)
  return {
    list: yield* store.list(query),
    spent: yield* store.spent(query),
    report: yield* store.report(wholeDays(accountId), "model")
  }
})

/** The whole stream, collected (tests only: small ranges), each line with its CSV fields alone. */
export const streamed = (query: UsageQuery, pageSize?: number) =>
  Effect.flatMap(UsageStore, (store) => Effect.map(Stream.runCollect(store.stream(query, { pageSize })), (lines) => Array.from(lines, lineOf)))

/** What `stream` must answer for `query`: `list`, each record's CSV fields alone. */
export const listedLines = (query: UsageQuery) =>
  Effect.flatMap(UsageStore, (store) => Effect.map(store.list(query), (records) => records.map(lineOf)))

/** Store failures are defects: input that breaks the port's rules must die, not succeed or fail. */

export const sum = (records: ReadonlyArray<UsageRecord>) => records.reduce((acc, r) => acc + r.credits, 0n)

