/**
 * The DynamoDB ledger store's budget items (src/DynamoBudgets.ts, docs/lambda-ledger.md "Budgets"),
 * beyond the shared contract (which DynamoLedgerStore.test.ts runs, budgets included): the raw
 * items after each kind of write, and a reserve whose limit check fails because the limit changed
 * after it was read (simulated: DynamoDB Local runs transactions one at a time, so no real write
 * can land in between), which reads the limits again.
 */
import { QueryCommand, TransactionCanceledException, type TransactWriteItemsCommand } from "@aws-sdk/client-dynamodb"
import { assert, layer } from "@effect/vitest"
import { type BudgetClaim, LedgerStore, type NewReservation, usageEntries } from "@model-platform/core/ledger"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import { Cause, Effect, Exit, Layer } from "effect"
import { BUDGET_PREFIX } from "../src/DynamoBudgets.ts"
import { LedgerStoreDynamo } from "../src/DynamoLedgerStore.ts"
import { DynamoConfig } from "../src/DynamoTable.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("budgets-test")
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const
const at = (ms: number) => toTimestamp(Date.UTC(2026, 0, 15) + ms)
const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
const MONTH = "2026-01"

/** Raw items of one partition under a sort key prefix. */
const rawItems = (pk: string, prefix: string) =>
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const output = yield* Effect.promise(() =>
      client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
          ExpressionAttributeValues: { ":pk": { S: pk }, ":prefix": { S: prefix } },
          ConsistentRead: true
        })
      )
    )
    return output.Items ?? []
  })

const funded = Effect.gen(function*() {
  const account = yield* generateId("acct")
  yield* (yield* LedgerStore).post({
    id: yield* generateId("led"),
    account_id: account,
    machine_id: null,
    amount: 100n,
    type: "credit_added",
    ref: yield* generateId("order"),
    created_at: at(0)
  })
  return account
})

const reservationOf = (account: string, amount: bigint, budgets: ReadonlyArray<BudgetClaim>) =>
  Effect.map(generateId("usage"), (ref): NewReservation => ({
    ref,
    account_id: account,
    machine_id: null,
    allocations: [{ machine_id: null, amount }],
    created_at: at(1),
    expires_at: NEVER,
    budgets
  }))

const claims: ReadonlyArray<BudgetClaim> = [
  { budget: "account", month: MONTH, default_limit: 50n },
  { budget: "key:k", month: MONTH, default_limit: null }
]

/** The month items' numbers, by budget. */
const monthItems = (account: string) =>
  Effect.map(rawItems(`LEDGER#${account}`, `${BUDGET_PREFIX.month}${MONTH}#`), (items) =>
    Object.fromEntries(items.map((item) => [item["budget"]?.S, [item["spent"]?.N, item["held"]?.N, item["used"]?.N]])))

const withTable = (table: Layer.Layer<DynamoConfig>) => LedgerStoreDynamo.pipe(Layer.provideMerge(table))

layer(withTable(freshTable()), layerOptions)("LedgerStoreDynamo budget items", (it) => {
  it.effect("month items keep used = spent + held; a limit item exists only while a limit is set", () =>
    Effect.gen(function*() {
      const store = yield* LedgerStore
      const account = yield* funded
      yield* store.setBudgetLimit(account, "key:k", 30n)
      assert.deepStrictEqual(
        (yield* rawItems(`LEDGER#${account}`, BUDGET_PREFIX.limit)).map((i) => [i["budget"]?.S, i["limit"]?.N]),
        [["key:k", "30"]]
      )
      const a = yield* reservationOf(account, 10n, claims)
      const b = yield* reservationOf(account, 5n, claims)
      assert.strictEqual(yield* store.reserve(a), "reserved")
      assert.strictEqual(yield* store.reserve(b), "reserved")
      assert.deepStrictEqual(yield* monthItems(account), { account: ["0", "15", "15"], "key:k": ["0", "15", "15"] })
      const entries = yield* usageEntries(account, a.ref, [{ machine_id: null, amount: 12n }], at(2))
      assert.strictEqual(yield* store.settle({ ref: a.ref, at: at(2), charged: 12n, excess: 2n, entries }), "settled")
      assert.strictEqual(yield* store.void(b.ref, at(3)), "voided")
      assert.deepStrictEqual(yield* monthItems(account), { account: ["12", "0", "12"], "key:k": ["12", "0", "12"] })
      // The reservation item keeps its claims.
      const [item] = yield* rawItems(`RESERVATION#${a.ref}`, "RESERVATION")
      assert.deepStrictEqual(item?.["budgets"], {
        L: [{ M: { budget: { S: "account" }, month: { S: MONTH } } }, { M: { budget: { S: "key:k" }, month: { S: MONTH } } }]
      })
      yield* store.setBudgetLimit(account, "key:k", null)
      assert.deepStrictEqual(yield* rawItems(`LEDGER#${account}`, BUDGET_PREFIX.limit), [])
    }))
})

// A reserve's limit check cancelled as if the limit had changed since it was read: the first
// `times` reserve transactions holding a limit check (or all of them).
let checksFailed = 0
const failLimitChecks = (times: number) => (command: TransactWriteItemsCommand): Error | undefined => {
  const items = command.input.TransactItems ?? []
  const check = items.findIndex((item) => item.ConditionCheck !== undefined)
  if (check === -1 || checksFailed >= times) return undefined
  checksFailed++
  return new TransactionCanceledException({
    message: "Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed]",
    $metadata: {},
    CancellationReasons: items.map((_, i) => ({ Code: i === check ? "ConditionalCheckFailed" : "None" }))
  })
}

layer(withTable(freshTable(failLimitChecks(3))), layerOptions)(
  "LedgerStoreDynamo budget limit changed before the transaction",
  (it) => {
    it.effect("the reserve reads the limits again and goes through once", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded
        checksFailed = 0
        const r = yield* reservationOf(account, 10n, claims)
        assert.strictEqual(yield* store.reserve(r), "reserved")
        assert.strictEqual(checksFailed, 3)
        assert.deepStrictEqual(yield* monthItems(account), { account: ["0", "10", "10"], "key:k": ["0", "10", "10"] })
      }))
  }
)

layer(withTable(freshTable(failLimitChecks(Infinity))), layerOptions)(
  "LedgerStoreDynamo budget limit changing for ever",
  (it) => {
    it.effect("a reserve whose limits never stay still is a defect and holds nothing", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded
        const r = yield* reservationOf(account, 10n, claims)
        const exit = yield* Effect.exit(store.reserve(r))
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), `${exit}`)
        assert.deepStrictEqual(yield* store.budgets(account, MONTH), [])
        assert.isUndefined(yield* store.reservation(r.ref))
      }))
  }
)
