/**
 * The ledger store on DynamoDB Local: the shared contract suite (`ledgerStoreContract`, with its
 * concurrency tests), then what only this store has: the items themselves (available = posted -
 * held on every balance item, no index item left behind by a finished reservation), amounts of
 * 38 digits, and the Ledger service over it. One DynamoDB Local serves both suites, each on a
 * fresh table; it is stopped after them (no Java process outlives the file).
 */
import {
  QueryCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand
} from "@aws-sdk/client-dynamodb"
import { assert, describe, layer } from "@effect/vitest"
import { Ledger, LedgerStore, usageEntryRef } from "@model-platform/core/ledger"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import { ledgerStoreContract } from "@model-platform/contract-kit/LedgerContract"
import { Effect, Layer } from "effect"
import {
  EXPIRY_SHARDS,
  expiryShard,
  LEDGER_PREFIX,
  LedgerKeys,
  LedgerStoreDynamo
} from "../src/DynamoLedgerStore.ts"
import { DynamoConfig } from "../src/DynamoTable.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("ledger-test")

const FreshTable = freshTable()

// The budgets' property: fewer scenarios than the default here (each takes about a second).
ledgerStoreContract("LedgerStoreDynamo on DynamoDB Local", LedgerStoreDynamo.pipe(Layer.provide(FreshTable)), {
  budgetRuns: 15
})

// ---------------------------------------------------------------------------------------------
// this store's own items

const credits = (n: number): bigint => BigInt(n) * 1_000_000n
const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
/** Before every other reservation in this file, as the contract's expiry tests do. */
const y2k = (ms: number) => toTimestamp(Date.UTC(2000, 0, 1) + ms)
const at = (ms: number) => toTimestamp(Date.UTC(2026, 0, 15) + ms)

/** Raw items of one partition, optionally under a sort key prefix. */
const rawItems = (pk: string, prefix = "") =>
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const output = yield* Effect.promise(() =>
      client.send(
        new QueryCommand({
          TableName: tableName,
          ...(prefix === ""
            ? { KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": { S: pk } } }
            : {
              KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
              ExpressionAttributeValues: { ":pk": { S: pk }, ":prefix": { S: prefix } }
            }),
          ConsistentRead: true
        })
      )
    )
    return output.Items ?? []
  })

const newEntry = (accountId: string, machineId: string | null, amount: bigint) =>
  Effect.gen(function*() {
    return {
      id: yield* generateId("led"),
      account_id: accountId,
      machine_id: machineId,
      amount,
      type: "credit_added" as const,
      ref: yield* generateId("order"),
      created_at: at(0)
    }
  })

/** As the contract's: building a layer may start a table on DynamoDB Local. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

/** The store, its table (for raw reads) and the Ledger service over the store. */
const StoreAndLedger = Ledger.layer.pipe(Layer.provideMerge(LedgerStoreDynamo.pipe(Layer.provideMerge(FreshTable))))

layer(StoreAndLedger, layerOptions)("LedgerStoreDynamo items", (it) => {
  describe("balance items", () => {
    it.effect("available = posted - held on every balance item, after every kind of write", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* generateId("acct")
        const machine = yield* generateId("machine")
        assert.strictEqual(yield* store.post(yield* newEntry(account, machine, credits(3))), "posted")
        assert.strictEqual(yield* store.post(yield* newEntry(account, null, credits(10))), "posted")
        const reserveOf = (allocations: ReadonlyArray<{ machine_id: string | null; amount: bigint }>, expiresAt = NEVER) =>
          Effect.gen(function*() {
            const ref = yield* generateId("usage")
            const result = yield* store.reserve({
              ref,
              account_id: account,
              machine_id: machine,
              allocations,
              created_at: at(1),
              expires_at: expiresAt
            })
            assert.strictEqual(result, "reserved")
            return ref
          })
        const settled = yield* reserveOf([{ machine_id: machine, amount: credits(2) }, { machine_id: null, amount: 7n }])
        const voided = yield* reserveOf([{ machine_id: null, amount: credits(1) }])
        const kept = yield* reserveOf([{ machine_id: machine, amount: 5n }])
        const expiring = yield* reserveOf([{ machine_id: null, amount: 3n }], y2k(1))
        assert.strictEqual(
          yield* store.settle({
            ref: settled,
            at: at(2),
            charged: credits(2) + 5n,
            excess: 0n,
            entries: [
              {
                id: yield* generateId("led"),
                account_id: account,
                machine_id: machine,
                amount: -credits(2),
                type: "usage",
                ref: usageEntryRef(settled, machine),
                created_at: at(2)
              },
              {
                id: yield* generateId("led"),
                account_id: account,
                machine_id: null,
                amount: -5n,
                type: "usage",
                ref: settled,
                created_at: at(2)
              }
            ]
          }),
          "settled"
        )
        assert.strictEqual(yield* store.void(voided, at(3)), "voided")
        assert.include(yield* store.expire(y2k(1)), expiring)

        const items = yield* rawItems(`LEDGER#${account}`, LEDGER_PREFIX.balance)
        assert.strictEqual(items.length, 2)
        for (const item of items) {
          const posted = BigInt(item.posted?.N ?? "x")
          const held = BigInt(item.held?.N ?? "x")
          assert.strictEqual(BigInt(item.available?.N ?? "x"), posted - held)
        }
        assert.deepStrictEqual(yield* store.balances(account), [
          { machine_id: null, posted: credits(10) - 5n, held: 0n },
          { machine_id: machine, posted: credits(1), held: 5n }
        ])
        // Only the reservation still pending has index items.
        const pendingItems = yield* rawItems(`LEDGER#${account}`, LEDGER_PREFIX.pending)
        assert.deepStrictEqual(pendingItems.map((item) => item.ref?.S), [kept])
        for (const ref of [settled, voided, expiring]) {
          const listed = yield* rawItems(LedgerKeys.expiry(ref, NEVER).pk)
          assert.isFalse(listed.some((item) => item.ref?.S === ref), `${ref} still listed for expiry`)
          assert.isUndefined((yield* rawItems(LedgerKeys.reservation(ref).pk))[0]?.pending_sk)
        }
        const stillListed = yield* rawItems(LedgerKeys.expiry(kept, NEVER).pk, NEVER)
        assert.isTrue(stillListed.some((item) => item.ref?.S === kept))
      }))

    it.effect("amounts of 38 digits round-trip exactly (DynamoDB numbers, never JS floats)", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* generateId("acct")
        const big = 10n ** 37n + 123_456_789n
        const entry = yield* newEntry(account, null, big)
        assert.strictEqual(yield* store.post(entry), "posted")
        assert.deepStrictEqual(yield* store.entries(account), [entry])
        const ref = yield* generateId("usage")
        const hold = big - 1n
        assert.strictEqual(
          yield* store.reserve({
            ref,
            account_id: account,
            machine_id: null,
            allocations: [{ machine_id: null, amount: hold }],
            created_at: at(1),
            expires_at: NEVER
          }),
          "reserved"
        )
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: big, held: hold }])
        assert.strictEqual((yield* store.reservation(ref))?.allocations[0]?.amount, hold)
        const [raw] = yield* rawItems(`LEDGER#${account}`, LEDGER_PREFIX.balance)
        assert.strictEqual(raw?.available?.N, "1")
      }))

    it.effect("expiry partitions spread refs over every shard", () =>
      Effect.gen(function*() {
        const shards = new Set<number>()
        for (let i = 0; i < 200; i++) shards.add(expiryShard(yield* generateId("usage")))
        assert.strictEqual(shards.size, EXPIRY_SHARDS)
      }))
  })

  describe("the Ledger service over it", () => {
    it.effect("30 concurrent Ledger.reserve calls of 1 credit against 10: exactly 10 are reserved", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const account = yield* generateId("acct")
        yield* ledger.credit(account, {
          ref: yield* generateId("order"),
          machine_id: null,
          amount: credits(10),
          type: "credit_added"
        })
        const results = yield* Effect.all(
          Array.from({ length: 30 }, () => ledger.reserve(account, null, credits(1), NEVER)),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(results.filter((r) => r._tag === "Reserved").length, 10)
        assert.deepStrictEqual(yield* ledger.audit(account), [])
        const refs = results.flatMap((r) => r._tag === "Reserved" ? [r.ref] : [])
        const settled = yield* Effect.all(refs.map((ref) => ledger.settle(ref, 400_000n)), { concurrency: "unbounded" })
        assert.isTrue(settled.every((s) => s._tag === "Settled"))
        assert.deepStrictEqual(yield* ledger.audit(account), [])
        assert.strictEqual((yield* ledger.balance(account)).total_credits, 6)
      }))
  })
})

// ---------------------------------------------------------------------------------------------
// TransactionConflict: DynamoDB Local runs transactions one at a time and never answers it, so
// here half of all transactions are cancelled as DynamoDB cancels one that met another on an item.

let conflicts = 0
const conflictFor = (command: TransactWriteItemsCommand): Error | undefined => {
  if (Math.random() >= 0.5) return undefined
  conflicts++
  const items = command.input.TransactItems ?? []
  return new TransactionCanceledException({
    message: "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]",
    $metadata: {},
    // A conflict on the last item, possibly alongside a failed condition on the first.
    CancellationReasons: items.map((_, i) => ({
      Code: i === items.length - 1
        ? "TransactionConflict"
        : i === 0 && conflicts % 3 === 0
        ? "ConditionalCheckFailed"
        : "None"
    }))
  })
}

const ConflictingStore = Ledger.layer.pipe(
  Layer.provideMerge(LedgerStoreDynamo.pipe(Layer.provide(freshTable(conflictFor))))
)

layer(ConflictingStore, layerOptions)("LedgerStoreDynamo under transaction conflicts", (it) => {
  it.effect("cancelled transactions are tried again until they go through; the rules hold", () =>
    Effect.gen(function*() {
      const store = yield* LedgerStore
      const ledger = yield* Ledger
      const account = yield* generateId("acct")
      const funding = yield* newEntry(account, null, credits(10))
      const posts = yield* Effect.all(Array.from({ length: 5 }, () => store.post(funding)), { concurrency: "unbounded" })
      assert.deepStrictEqual([...posts].sort(), ["duplicate", "duplicate", "duplicate", "duplicate", "posted"])
      const results = yield* Effect.all(
        Array.from({ length: 30 }, () => ledger.reserve(account, null, credits(1), y2k(5))),
        { concurrency: "unbounded" }
      )
      const refs = results.flatMap((r) => r._tag === "Reserved" ? [r.ref] : [])
      assert.strictEqual(refs.length, 10)
      // 4 settled, 3 voided, 3 left to expire.
      const finished = yield* Effect.all(
        refs.map((ref, i) =>
          i < 4
            ? Effect.map(ledger.settle(ref, 250_000n), (r) => r._tag)
            : i < 7
            ? Effect.map(ledger.void(ref), (r) => r._tag)
            : Effect.succeed("left")
        ),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(finished, [
        ...Array<string>(4).fill("Settled"),
        ...Array<string>(3).fill("Voided"),
        ...Array<string>(3).fill("left")
      ])
      const expired = yield* store.expire(y2k(5))
      assert.includeMembers([...expired], refs.slice(7))
      assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: credits(9), held: 0n }])
      assert.deepStrictEqual(yield* ledger.audit(account), [])
      assert.isAbove(conflicts, 20)
    }))
})

