/**
 * The credit totals backfill (src/BackfillCreditTotals.ts,
 * adapters/lambda/scripts/backfill-credit-totals.ts) on DynamoDB Local. Old data is simulated three
 * ways: credits posted and their total items deleted (before the store kept totals), total items
 * stripped of their `revision` (kept by a store that did not count writes yet), and credit entry
 * items written directly (no balance, no total). Checked: creditTotals = creditTotalsOf(entries)
 * for each account and the statements' "added" after it; a second run changes nothing (the raw
 * items identical); a dry run writes nothing; accounts with usage entries only are left alone;
 * posts landing between the backfill's reads and its write (forced, new and old store code) and
 * posts running beside it (many rounds) are counted exactly once; the command itself.
 */
import {
  type AttributeValue,
  DeleteItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand
} from "@aws-sdk/client-dynamodb"
import { assert, describe, it } from "@effect/vitest"
import { statementOf } from "@model-platform/core/billing"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import { type CreditEntryType, creditTotalsOf, type LedgerEntry, LedgerStore } from "@model-platform/core/ledger"
import { Effect, Layer, Random } from "effect"
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, expect } from "vitest"
import { type AccountReport, backfillAccount, backfillCreditTotals } from "../src/BackfillCreditTotals.ts"
import { LEDGER_PREFIX, LedgerKeys, LedgerStoreDynamo, ledgerPk } from "../src/DynamoLedgerStore.ts"
import { createTable, DynamoConfig, type DynamoSettings, makeDocumentClient } from "../src/DynamoTable.ts"
import { type DynamoLocal, localClientConfig, startDynamoLocal } from "./dynamoLocal.ts"

let local: DynamoLocal | undefined
beforeAll(async () => {
  local = await startDynamoLocal()
}, 60_000)
afterAll(async () => {
  await local?.stop()
})

const endpoint = () => {
  if (local === undefined) throw new Error("DynamoDB Local is not running")
  return local.endpoint
}

/** A fresh table, and the ledger store on it: each test gets its own (the Scan sees the whole table). */
const FreshTable = Layer.effect(
  DynamoConfig,
  Effect.gen(function*() {
    const settings = yield* Effect.acquireRelease(
      Effect.sync(() => ({ tableName: `backfill-${crypto.randomUUID()}`, client: makeDocumentClient(localClientConfig(endpoint())) })),
      (settings) => Effect.sync(() => settings.client.destroy())
    )
    yield* Effect.provideService(createTable, DynamoConfig, settings)
    return settings
  })
)
const StoreAndTable = LedgerStoreDynamo.pipe(Layer.provideMerge(FreshTable))
const onFreshTable = <A, E>(effect: Effect.Effect<A, E, LedgerStore | DynamoConfig>) =>
  Effect.provide(effect, StoreAndTable)

const at = (month: string, ms = 0) => toTimestamp(Date.parse(`${month}-15T00:00:00.000Z`) + ms)
const typeOf = (i: number): CreditEntryType => i % 2 === 0 ? "credit_added" : "plan_credit_granted"

const newCredit = (account: string, amount: bigint, month: string, type: CreditEntryType = "credit_added") =>
  Effect.gen(function*() {
    return {
      id: yield* generateId("led"),
      account_id: account,
      machine_id: null,
      amount,
      type,
      ref: yield* generateId("order"),
      created_at: at(month, Number(amount % 1000n))
    } satisfies LedgerEntry
  })

const post = (account: string, amount: bigint, month: string, type: CreditEntryType = "credit_added") =>
  Effect.gen(function*() {
    assert.strictEqual(yield* (yield* LedgerStore).post(yield* newCredit(account, amount, month, type)), "posted")
  })

type Item = Record<string, AttributeValue>

/** A low-level command through the table's client. */
const send = (command: object) =>
  Effect.gen(function*() {
    const { client } = yield* DynamoConfig
    const sendIt = client.send.bind(client) as (c: object) => Promise<{ readonly Items?: Array<Item> }>
    return yield* Effect.promise(() => sendIt(command))
  })

/** The account's credit total items, raw. */
const rawTotals = (account: string) =>
  Effect.gen(function*() {
    const { tableName } = yield* DynamoConfig
    const output = yield* send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": { S: ledgerPk(account) }, ":prefix": { S: LEDGER_PREFIX.credits } },
        ConsistentRead: true
      })
    )
    return output.Items ?? []
  })

const keyOfItem = (item: Item) => ({ pk: item.pk, sk: item.sk }) as Item

/** Old data: the account's total items deleted (its credits were posted before they existed). */
const dropTotals = (account: string) =>
  Effect.gen(function*() {
    const { tableName } = yield* DynamoConfig
    for (const item of yield* rawTotals(account)) {
      yield* send(new DeleteItemCommand({ TableName: tableName, Key: keyOfItem(item) }))
    }
  })

/** Old data: total items written before posts counted their writes. */
const stripRevisions = (account: string) =>
  Effect.gen(function*() {
    const { tableName } = yield* DynamoConfig
    for (const item of yield* rawTotals(account)) {
      yield* send(
        new UpdateItemCommand({ TableName: tableName, Key: keyOfItem(item), UpdateExpression: "REMOVE revision" })
      )
    }
  })

/** Old data: an entry item written directly (no ref, id, balance or total item). */
const rawEntry = (entry: LedgerEntry) =>
  Effect.gen(function*() {
    const { tableName } = yield* DynamoConfig
    const key = LedgerKeys.entry(entry.account_id, entry.created_at, "0".repeat(17), 0, entry.id)
    yield* send(
      new PutItemCommand({
        TableName: tableName,
        Item: {
          pk: { S: key.pk },
          sk: { S: key.sk },
          id: { S: entry.id },
          account_id: { S: entry.account_id },
          amount: { N: entry.amount.toString() },
          type: { S: entry.type },
          ref: { S: entry.ref },
          created_at: { S: entry.created_at }
        }
      })
    )
  })

/** The account's totals equal its entries' sums, and each month's statement adds them. */
const assertTotalsRight = (account: string) =>
  Effect.gen(function*() {
    const store = yield* LedgerStore
    const expected = creditTotalsOf(yield* store.entries(account))
    const totals = yield* store.creditTotals(account)
    assert.deepStrictEqual(totals, expected, account)
    for (const month of new Set(expected.map((t) => t.month))) {
      const s = statementOf(month, { credits: totals, usageByDay: [], usageByService: [], receipts: [] }, new Map())
      const of = (type: CreditEntryType) => expected.find((t) => t.month === month && t.type === type)?.amount ?? 0n
      assert.strictEqual(s.purchased, of("credit_added"))
      assert.strictEqual(s.plan, of("plan_credit_granted"))
      assert.strictEqual(s.opening, expected.filter((t) => t.month < month).reduce((sum, t) => sum + t.amount, 0n))
    }
    return expected
  })

/**
 * Three accounts of old data and one with usage entries only: `a` lost all its totals, then got
 * new-era posts; `b` has totals without revisions, one of them wrong; `c` has entries only.
 */
const oldData = Effect.gen(function*() {
  const id = generateId("acct")
  const [a, b, c, usageOnly] = yield* Effect.all([id, id, id, id])
  yield* post(a, 5_000_000n, "2025-11")
  yield* post(a, 7n, "2025-12", "plan_credit_granted")
  yield* post(a, 10n ** 30n + 1n, "2025-12")
  yield* dropTotals(a)
  yield* post(a, 3_000_000n, "2025-12") // after the store kept totals: counted in its total
  yield* post(a, 2_000_000n, "2026-01", "plan_credit_granted")
  yield* post(b, 1_000_000n, "2025-10")
  yield* post(b, 4_000_000n, "2025-10")
  yield* post(b, 9_000_000n, "2026-01", "plan_credit_granted")
  const { tableName } = yield* DynamoConfig
  yield* send(
    new UpdateItemCommand({
      TableName: tableName,
      Key: { pk: { S: ledgerPk(b) }, sk: { S: LedgerKeys.credits(b, "2025-10", "credit_added").sk } },
      UpdateExpression: "SET amount = :a",
      ExpressionAttributeValues: { ":a": { N: "1000000" } }
    })
  )
  yield* stripRevisions(b)
  yield* rawEntry(yield* newCredit(c, 11n, "2025-06"))
  yield* rawEntry(yield* newCredit(c, 13n, "2025-06"))
  yield* rawEntry(yield* newCredit(c, 17n, "2025-07", "plan_credit_granted"))
  for (const account of [a, usageOnly]) yield* rawEntry({ ...(yield* newCredit(account, -5n, "2025-12")), type: "usage" })
  return { a, b, c, usageOnly }
})

const reportsOf = () => {
  const reports = new Map<string, AccountReport>()
  return { reports, onAccount: (r: AccountReport) => Effect.sync(() => void reports.set(r.account_id, r)) }
}

describe("BackfillCreditTotals on DynamoDB Local", () => {
  it.live("rebuilds every account's totals from its credit entries; statements add them", () =>
    onFreshTable(Effect.gen(function*() {
      const store = yield* LedgerStore
      const { a, b, c, usageOnly } = yield* oldData
      assert.deepStrictEqual(yield* store.creditTotals(c), [])
      expect(yield* store.creditTotals(a)).not.toEqual(creditTotalsOf(yield* store.entries(a)))
      const { reports, onAccount } = reportsOf()
      const summary = yield* backfillCreditTotals({ onAccount })
      assert.deepStrictEqual(summary, { accounts: 3, unchanged: 0, changed: 3, would_change: 0, gave_up: 0, writes: 6 })
      assert.deepStrictEqual(reports.get(a)?.changes, [
        { month: "2025-11", type: "credit_added", before: 0n, after: 5_000_000n },
        { month: "2025-12", type: "credit_added", before: 3_000_000n, after: 10n ** 30n + 3_000_001n },
        { month: "2025-12", type: "plan_credit_granted", before: 0n, after: 7n }
      ])
      assert.deepStrictEqual(reports.get(b)?.changes, [
        { month: "2025-10", type: "credit_added", before: 1_000_000n, after: 5_000_000n }
      ])
      assert.strictEqual(reports.get(a)?.passes, 2) // the writes, then a pass finding nothing to change
      assert.isFalse(reports.has(usageOnly))
      for (const account of [a, b, c]) yield* assertTotalsRight(account)
      assert.deepStrictEqual((yield* store.creditTotals(c)).map((t) => t.amount), [24n, 17n])
      assert.deepStrictEqual(yield* rawTotals(usageOnly), [])
      // Posts after it count as before.
      yield* post(b, 1n, "2025-10")
      yield* assertTotalsRight(b)
    })))

  it.live("a second run changes nothing; a dry run writes nothing", () =>
    onFreshTable(Effect.gen(function*() {
      const { a, b, c } = yield* oldData
      const before = yield* Effect.forEach([a, b, c], rawTotals)
      const dry = reportsOf()
      assert.deepStrictEqual(yield* backfillCreditTotals({ dryRun: true, onAccount: dry.onAccount }), {
        accounts: 3, unchanged: 0, changed: 0, would_change: 3, gave_up: 0, writes: 0
      })
      assert.deepStrictEqual(dry.reports.get(c)?.changes.map((x) => [x.before, x.after]), [[0n, 24n], [0n, 17n]])
      assert.deepStrictEqual(yield* Effect.forEach([a, b, c], rawTotals), before)
      yield* backfillCreditTotals()
      const after = yield* Effect.forEach([a, b, c], rawTotals)
      const again = reportsOf()
      assert.deepStrictEqual(yield* backfillCreditTotals({ onAccount: again.onAccount }), {
        accounts: 3, unchanged: 3, changed: 0, would_change: 0, gave_up: 0, writes: 0
      })
      assert.isTrue([...again.reports.values()].every((r) => r.passes === 1 && r.changes.length === 0))
      assert.deepStrictEqual(yield* Effect.forEach([a, b, c], rawTotals), after)
      assert.deepStrictEqual(yield* backfillCreditTotals({ account: b, dryRun: true }), {
        accounts: 1, unchanged: 1, changed: 0, would_change: 0, gave_up: 0, writes: 0
      })
    })))

  it.live("one account only; a total without entries comes down to 0", () =>
    onFreshTable(Effect.gen(function*() {
      const { a, b, usageOnly } = yield* oldData
      const stray = LedgerKeys.credits(b, "2024-01", "credit_added")
      const { tableName } = yield* DynamoConfig
      yield* send(new PutItemCommand({
        TableName: tableName,
        Item: { pk: { S: stray.pk }, sk: { S: stray.sk }, month: { S: "2024-01" }, type: { S: "credit_added" }, amount: { N: "4" } }
      }))
      const report = yield* backfillAccount(b)
      assert.strictEqual(report.outcome, "changed")
      assert.deepStrictEqual(report.changes[0], { month: "2024-01", type: "credit_added", before: 4n, after: 0n })
      yield* assertTotalsRight(b)
      // Only b: a is still as it was.
      const store = yield* LedgerStore
      expect(yield* store.creditTotals(a)).not.toEqual(creditTotalsOf(yield* store.entries(a)))
      // An account with usage entries only has nothing to change.
      const usage = yield* backfillAccount(usageOnly)
      assert.deepStrictEqual([usage.outcome, usage.writes, usage.totals], ["unchanged", 0, []])
      assert.deepStrictEqual(yield* rawTotals(usageOnly), [])
    })))

  /**
   * The backfill's own client, which runs `landing` once just before its first write reaches the
   * table: a post that lands between the backfill's reads and its write.
   */
  const interceptedBackfill = (account: string, landing: () => Promise<unknown>) =>
    Effect.gen(function*() {
      const settings = yield* DynamoConfig
      let landed = false
      const client = Object.create(settings.client, {
        send: {
          value: async (command: unknown, options?: unknown) => {
            if (!landed && command instanceof TransactWriteItemsCommand) {
              landed = true
              await landing()
            }
            return (settings.client.send as (c: unknown, o?: unknown) => Promise<unknown>)(command, options)
          }
        }
      }) as DynamoSettings["client"]
      return yield* Effect.provideService(backfillAccount(account), DynamoConfig, { ...settings, client })
    })

  for (const legacy of [false, true]) {
    it.live(`a post between the reads and the write is counted once (${legacy ? "a total without revision" : "no total"})`, () =>
      onFreshTable(Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* generateId("acct")
        yield* post(account, 100n, "2025-12")
        yield* post(account, 200n, "2025-12")
        yield* dropTotals(account)
        if (legacy) {
          yield* post(account, 1n, "2025-12") // the total counts only this one
          yield* stripRevisions(account)
        }
        const late = yield* newCredit(account, 50n, "2025-12")
        const report = yield* interceptedBackfill(account, () => Effect.runPromise(store.post(late)))
        assert.strictEqual(report.outcome, "changed")
        // Refused (the post landed), written once, checked: a blind write would lose the post and
        // need a second write to repair it.
        assert.deepStrictEqual([report.passes, report.writes], [3, 1])
        const totals = yield* assertTotalsRight(account)
        assert.strictEqual(totals.find((t) => t.month === "2025-12")?.amount, legacy ? 351n : 350n)
      })))
  }

  it.live("a post by a store that does not count writes yet, between the reads and the write, is counted once", () =>
    onFreshTable(Effect.gen(function*() {
      const account = yield* generateId("acct")
      yield* post(account, 100n, "2025-12")
      yield* stripRevisions(account)
      yield* rawEntry(yield* newCredit(account, 20n, "2025-12")) // before totals: not in it
      const { client, tableName } = yield* DynamoConfig
      const late = yield* newCredit(account, 7n, "2025-12")
      const total = LedgerKeys.credits(account, "2025-12", "credit_added")
      const oldPost = async () => {
        await Effect.runPromise(Effect.provideService(rawEntry(late), DynamoConfig, { client, tableName }))
        await client.send(new UpdateItemCommand({
          TableName: tableName,
          Key: { pk: { S: total.pk }, sk: { S: total.sk } },
          UpdateExpression: "ADD amount :a",
          ExpressionAttributeValues: { ":a": { N: "7" } }
        }))
      }
      const report = yield* interceptedBackfill(account, oldPost)
      assert.deepStrictEqual([report.passes, report.writes], [3, 1])
      assert.strictEqual((yield* assertTotalsRight(account))[0]?.amount, 127n)
    })))

  it.live("posts running beside the whole-table backfill are counted exactly once (8 rounds)", () =>
    onFreshTable(Effect.gen(function*() {
      const store = yield* LedgerStore
      const accounts: Array<string> = []
      const postedBeside = new Map<string, number>()
      let refusedAccounts = 0
      for (let round = 0; round < 8; round++) {
        const fresh = yield* Effect.forEach(Array.from({ length: 5 }), () => generateId("acct"))
        accounts.push(...fresh)
        yield* Effect.forEach(fresh, (account) =>
          Effect.gen(function*() {
            for (let i = 1; i <= 12; i++) yield* post(account, BigInt(i), `2025-1${i % 3}`, typeOf(i))
            yield* dropTotals(account)
          }), { concurrency: "unbounded" })
        const besides = Effect.forEach(fresh, (account) =>
          Effect.forEach(Array.from({ length: 6 }, (_, i) => i), (i) =>
            Effect.gen(function*() {
              yield* Effect.sleep(`${yield* Random.nextIntBetween(0, 60)} millis`)
              yield* post(account, 1_000n + BigInt(i), `2025-1${i % 3}`, typeOf(i))
              postedBeside.set(account, (postedBeside.get(account) ?? 0) + 1)
            }), { concurrency: "unbounded" }), { concurrency: "unbounded" })
        const { reports, onAccount } = reportsOf()
        const [summary] = yield* Effect.all([backfillCreditTotals({ concurrency: 2, onAccount }), besides], {
          concurrency: "unbounded"
        })
        assert.strictEqual(summary.gave_up, 0)
        for (const report of reports.values()) {
          // A committed write leaves its total right, so each total is written once at most.
          assert.strictEqual(report.writes, report.changes.length, report.account_id)
          if (report.passes > 2) refusedAccounts++
        }
        for (const account of accounts) {
          assert.strictEqual((yield* store.entries(account)).length, 12 + (postedBeside.get(account) ?? 0))
          yield* assertTotalsRight(account)
        }
      }
      // The rounds did race: some writes were refused because a post landed (13 of 40 in a run).
      assert.isAbove(refusedAccounts, 0)
      // And once more, nothing to do.
      const last = yield* backfillCreditTotals()
      assert.strictEqual(last.unchanged, accounts.length)
    })), { timeout: 120_000 })
})

// ---------------------------------------------------------------------------------------------
// the command

const here = Path.dirname(fileURLToPath(import.meta.url))
// The command is the Lambda shell's (it reads the functions' TABLE_NAME through
// adapters/lambda/src/Config.ts); it runs here, beside the library it wraps, on the same fixtures.
const SCRIPT = Path.join(here, "..", "..", "lambda", "scripts", "backfill-credit-totals.ts")

const runCommand = (args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [SCRIPT, ...args], {
        env: { ...process.env, AWS_REGION: "local", AWS_ACCESS_KEY_ID: "local", AWS_SECRET_ACCESS_KEY: "local", TABLE_NAME: "" },
        timeout: 60_000
      }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    })
  )

describe("scripts/backfill-credit-totals.ts", () => {
  it.live("dry run, one account, then the whole table; a usage error", () =>
    onFreshTable(Effect.gen(function*() {
      const { a, b, c } = yield* oldData
      const { tableName } = yield* DynamoConfig
      const table = ["--table", tableName, "--endpoint", endpoint()]
      const dry = yield* runCommand([...table, "--dry-run"])
      assert.strictEqual(dry.code, 0, dry.stderr)
      assert.include(dry.stdout, `${c}: would change (2 totals, 1 pass)\n  2025-06 credit_added: 0 -> 24 (+24)\n`)
      assert.match(dry.stdout, /dry run: 3 accounts: 0 unchanged, 0 changed, 3 would change, 0 given up; 0 totals written\n$/)
      const one = yield* runCommand([...table, "--account", b])
      assert.strictEqual(one.code, 0, one.stderr)
      assert.include(one.stdout, `${b}: changed (2 totals, 2 passes)\n  2025-10 credit_added: 1000000 -> 5000000 (+4000000)\n`)
      assert.match(one.stdout, /1 account: 0 unchanged, 1 changed, 0 would change, 0 given up; 1 total written\n$/)
      const all = yield* runCommand(table)
      assert.strictEqual(all.code, 0, all.stderr)
      assert.include(all.stdout, `${b}: unchanged (2 totals, 1 pass)\n`)
      assert.match(all.stdout, /3 accounts: 1 unchanged, 2 changed, 0 would change, 0 given up; 5 totals written\n$/)
      for (const account of [a, b, c]) yield* assertTotalsRight(account)
      const bad = yield* runCommand(["--tabel", "x"])
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, "usage:")
    })), { timeout: 120_000 })
})
