/**
 * The DynamoDB ledger store's grants (src/DynamoGrants.ts: the allowance and the trial), beyond
 * the shared contract: holds admitted with the reservation and refused past a grant's size
 * (nothing changed), the raw grant items (used = spent + held, kept apart from the budgets'
 * month items), a settlement spending part of a hold, void and expiry releasing them, a
 * reservation the grants cover whole (no allocations, budgets hold 0), and concurrent reserves
 * (the store's own, and Ledger.reserve's read-and-retry path) never passing a size.
 */
import { QueryCommand } from "@aws-sdk/client-dynamodb"
import { assert, describe, layer } from "@effect/vitest"
import {
  type BudgetClaim,
  type GrantHold,
  Ledger,
  LedgerStore,
  type NewReservation,
  usageEntries
} from "@model-platform/core/ledger"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import { Cause, Effect, Exit, Layer } from "effect"
import { GRANT_PREFIX } from "../src/DynamoGrants.ts"
import { LedgerStoreDynamo } from "../src/DynamoLedgerStore.ts"
import { DynamoConfig } from "../src/DynamoTable.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("grants-test")
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const
const at = (ms: number) => toTimestamp(Date.UTC(2026, 0, 15) + ms)
const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
/** Before every other reservation of the table, so that an expiry here finds only its own. */
const y2k = (ms: number) => toTimestamp(Date.UTC(2000, 0, 1) + ms)
const MONTH = "2026-01"
const ALLOWANCE = "allowance:chat"
const TRIAL = "trial:chat"

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

/** An account with `amount` account-wide micro-credits. */
const funded = (amount: bigint) =>
  Effect.gen(function*() {
    const account = yield* generateId("acct")
    if (amount > 0n) {
      yield* (yield* LedgerStore).post({
        id: yield* generateId("led"),
        account_id: account,
        machine_id: null,
        amount,
        type: "credit_added",
        ref: yield* generateId("order"),
        created_at: at(0)
      })
    }
    return account
  })

const allowance = (amount: bigint, size = 100n) => ({ grant: ALLOWANCE, period: MONTH, amount, size })
const trial = (amount: bigint, size = 50n) => ({ grant: TRIAL, period: "once", amount, size })

const reservationOf = (
  account: string,
  allocated: bigint,
  grants: ReadonlyArray<GrantHold & { readonly size: bigint }>,
  options: { readonly budgets?: ReadonlyArray<BudgetClaim>; readonly expiresAt?: ReturnType<typeof at> } = {}
) =>
  Effect.map(generateId("usage"), (ref): NewReservation => ({
    ref,
    account_id: account,
    machine_id: null,
    allocations: allocated === 0n ? [] : [{ machine_id: null, amount: allocated }],
    created_at: at(1),
    expires_at: options.expiresAt ?? NEVER,
    ...(options.budgets === undefined ? {} : { budgets: options.budgets }),
    ...(grants.length === 0 ? {} : { grants })
  }))

/** The grant items' numbers, by sort key after the prefix: [spent, held, used]. */
const grantItems = (account: string) =>
  Effect.map(rawItems(`LEDGER#${account}`, GRANT_PREFIX), (items) =>
    Object.fromEntries(
      items.map((item) => [item["sk"]?.S?.slice(GRANT_PREFIX.length), [item["spent"]?.N, item["held"]?.N, item["used"]?.N]])
    ))

const holdsOf = (holds: ReadonlyArray<GrantHold & { readonly size: bigint }>): Array<GrantHold> =>
  holds.map(({ amount, grant, period }) => ({ grant, period, amount }))

const withTable = (table: Layer.Layer<DynamoConfig>) =>
  Ledger.layer.pipe(Layer.provideMerge(LedgerStoreDynamo.pipe(Layer.provideMerge(table))))

layer(withTable(freshTable()), layerOptions)("LedgerStoreDynamo grants", (it) => {
  describe("reserve", () => {
    it.effect("holds grants with the reservation; the reservation remembers them; grants lists them", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(1_000n)
        const holds = [allowance(60n), trial(20n)]
        const r = yield* reservationOf(account, 30n, holds)
        assert.strictEqual(yield* store.reserve(r), "reserved")
        assert.deepStrictEqual((yield* store.reservation(r.ref))?.grants, holdsOf(holds))
        assert.deepStrictEqual((yield* store.pending(account)).map((p) => p.grants), [holdsOf(holds)])
        assert.deepStrictEqual(yield* store.grants(account), [
          { grant: ALLOWANCE, period: MONTH, spent: 0n, held: 60n },
          { grant: TRIAL, period: "once", spent: 0n, held: 20n }
        ])
        assert.deepStrictEqual(yield* grantItems(account), {
          [`${ALLOWANCE}#${MONTH}`]: ["0", "60", "60"],
          [`${TRIAL}#once`]: ["0", "20", "20"]
        })
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: 1_000n, held: 30n }])
        // The reservation item keeps the holds without their sizes.
        const [item] = yield* rawItems(`RESERVATION#${r.ref}`, "RESERVATION")
        assert.deepStrictEqual(item?.["grants"], {
          L: [
            { M: { grant: { S: ALLOWANCE }, period: { S: MONTH }, amount: { N: "60" } } },
            { M: { grant: { S: TRIAL }, period: { S: "once" }, amount: { N: "20" } } }
          ]
        })
      }))

    it.effect("a reservation without grants has no grants attribute, and reads back without `grants`", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(100n)
        const r = yield* reservationOf(account, 10n, [])
        assert.strictEqual(yield* store.reserve(r), "reserved")
        const read = yield* store.reservation(r.ref)
        assert.isFalse(read !== undefined && "grants" in read)
        const [item] = yield* rawItems(`RESERVATION#${r.ref}`, "RESERVATION")
        assert.isUndefined(item?.["grants"])
        assert.deepStrictEqual(yield* store.grants(account), [])
      }))

    it.effect("refuses a hold past a grant's size as insufficient, changing nothing", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(1_000n)
        const first = yield* reservationOf(account, 10n, [allowance(70n)])
        assert.strictEqual(yield* store.reserve(first), "reserved")
        // 70 held + 31 > 100; the trial has room, the balance too: all of it is refused.
        const over = yield* reservationOf(account, 10n, [allowance(31n), trial(5n)], {
          budgets: [{ budget: "account", month: MONTH, default_limit: null }]
        })
        assert.strictEqual(yield* store.reserve(over), "insufficient")
        assert.isUndefined(yield* store.reservation(over.ref))
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: ALLOWANCE, period: MONTH, spent: 0n, held: 70n }])
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: 1_000n, held: 10n }])
        assert.deepStrictEqual(yield* store.budgets(account, MONTH), [])
        assert.deepStrictEqual((yield* store.pending(account)).map((p) => p.ref), [first.ref])
        // Exactly up to the size is admitted.
        const fits = yield* reservationOf(account, 0n, [allowance(30n)])
        assert.strictEqual(yield* store.reserve(fits), "reserved")
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: ALLOWANCE, period: MONTH, spent: 0n, held: 100n }])
        // A grant of a larger size (the plan changed) has room again; another period is apart.
        const bigger = yield* reservationOf(account, 0n, [allowance(5n, 105n)])
        assert.strictEqual(yield* store.reserve(bigger), "reserved")
        const nextMonth = yield* reservationOf(account, 0n, [{ grant: ALLOWANCE, period: "2026-02", amount: 100n, size: 100n }])
        assert.strictEqual(yield* store.reserve(nextMonth), "reserved")
        assert.deepStrictEqual(yield* store.grants(account), [
          { grant: ALLOWANCE, period: MONTH, spent: 0n, held: 105n },
          { grant: ALLOWANCE, period: "2026-02", spent: 0n, held: 100n }
        ])
      }))

    it.effect("over budget wins over a grant without room; a duplicate ref changes nothing", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(1_000n)
        const full = yield* reservationOf(account, 0n, [trial(50n)])
        assert.strictEqual(yield* store.reserve(full), "reserved")
        const both = yield* reservationOf(account, 20n, [trial(1n)], {
          budgets: [{ budget: "account", month: MONTH, default_limit: 10n }]
        })
        assert.strictEqual(yield* store.reserve(both), "over_budget")
        assert.strictEqual(yield* store.reserve({ ...full, grants: [trial(1n)] }), "duplicate")
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: TRIAL, period: "once", spent: 0n, held: 50n }])
      }))

    it.effect("a reservation the grants cover whole has no allocations; its budgets hold 0", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(0n)
        const budgets: ReadonlyArray<BudgetClaim> = [{ budget: "account", month: MONTH, default_limit: 5n }]
        const r = yield* reservationOf(account, 0n, [allowance(40n)], { budgets })
        assert.strictEqual(yield* store.reserve(r), "reserved")
        const read = yield* store.reservation(r.ref)
        assert.deepStrictEqual(read?.allocations, [])
        assert.deepStrictEqual(read?.budgets, [{ budget: "account", month: MONTH }])
        assert.deepStrictEqual(yield* store.budgets(account, MONTH), [])
        assert.deepStrictEqual(yield* store.balances(account), [])
        assert.strictEqual(
          yield* store.settle({ ref: r.ref, at: at(2), charged: 0n, excess: 0n, entries: [], grants: [holdsOf([allowance(25n)])[0]!] }),
          "settled"
        )
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: ALLOWANCE, period: MONTH, spent: 25n, held: 0n }])
        // Budgets count credits only: nothing was charged in credits.
        assert.deepStrictEqual(yield* store.budgets(account, MONTH), [])
        assert.strictEqual((yield* store.reservation(r.ref))?.charged, 0n)
      }))

    it.effect("a broken hold (over its size, not positive, a bad grant or period, twice) is a defect", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(100n)
        for (
          const grants of [
            [allowance(101n)],
            [allowance(0n)],
            [{ grant: "gift:chat", period: MONTH, amount: 1n, size: 5n }],
            [{ grant: TRIAL, period: "2026-13", amount: 1n, size: 5n }],
            [allowance(1n), allowance(2n)]
          ]
        ) {
          const r = yield* reservationOf(account, 1n, grants)
          const exit = yield* Effect.exit(store.reserve(r))
          assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), `${JSON.stringify(grants, (_, v) => typeof v === "bigint" ? `${v}` : v)}: ${exit}`)
          assert.isUndefined(yield* store.reservation(r.ref))
        }
        assert.deepStrictEqual(yield* store.grants(account), [])
      }))
  })

  describe("finishing", () => {
    it.effect("settle spends each grant's charge (part of its hold, or none) and releases the rest", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(1_000n)
        const budgets: ReadonlyArray<BudgetClaim> = [{ budget: "account", month: MONTH, default_limit: null }]
        const r = yield* reservationOf(account, 30n, [allowance(60n), trial(20n)], { budgets })
        assert.strictEqual(yield* store.reserve(r), "reserved")
        assert.deepStrictEqual(yield* store.budgets(account, MONTH), [{ budget: "account", limit: null, spent: 0n, held: 30n }])
        // A cost of 45: 45 of the allowance's 60, nothing of the trial, no credits.
        const charges: ReadonlyArray<GrantHold> = [{ grant: ALLOWANCE, period: MONTH, amount: 45n }]
        assert.strictEqual(
          yield* store.settle({ ref: r.ref, at: at(2), charged: 0n, excess: 0n, entries: [], grants: charges }),
          "settled"
        )
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: ALLOWANCE, period: MONTH, spent: 45n, held: 0n }])
        assert.deepStrictEqual(yield* grantItems(account), {
          [`${ALLOWANCE}#${MONTH}`]: ["45", "0", "45"],
          [`${TRIAL}#once`]: ["0", "0", "0"]
        })
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: 1_000n, held: 0n }])
        assert.deepStrictEqual(yield* store.budgets(account, MONTH), [])
        const settled = yield* store.reservation(r.ref)
        assert.strictEqual(settled?.status, "settled")
        assert.deepStrictEqual(settled?.grants, holdsOf([allowance(60n), trial(20n)]))
        // The grant's room is its size less what was spent.
        assert.strictEqual(yield* store.reserve(yield* reservationOf(account, 0n, [allowance(56n)])), "insufficient")
        assert.strictEqual(yield* store.reserve(yield* reservationOf(account, 0n, [allowance(55n)])), "reserved")

        // A cost above the grants: both grants whole, credits for the rest (budgets count those).
        const s = yield* reservationOf(account, 30n, [trial(30n)], { budgets })
        assert.strictEqual(yield* store.reserve(s), "reserved")
        const entries = yield* usageEntries(account, s.ref, [{ machine_id: null, amount: 12n }], at(3))
        assert.strictEqual(
          yield* store.settle({
            ref: s.ref,
            at: at(3),
            charged: 12n,
            excess: 0n,
            entries,
            grants: [{ grant: TRIAL, period: "once", amount: 30n }]
          }),
          "settled"
        )
        assert.deepStrictEqual(yield* store.grants(account), [
          { grant: ALLOWANCE, period: MONTH, spent: 45n, held: 55n },
          { grant: TRIAL, period: "once", spent: 30n, held: 0n }
        ])
        assert.deepStrictEqual(yield* store.budgets(account, MONTH), [{ budget: "account", limit: null, spent: 12n, held: 0n }])
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: 988n, held: 0n }])
        assert.deepStrictEqual((yield* store.reservation(s.ref))?.charged, 12n)
      }))

    it.effect("a settlement charging a grant it does not hold, or more than its hold, is a defect", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(100n)
        const r = yield* reservationOf(account, 0n, [allowance(10n)])
        assert.strictEqual(yield* store.reserve(r), "reserved")
        for (
          const grants of [
            [{ grant: TRIAL, period: "once", amount: 1n }],
            [{ grant: ALLOWANCE, period: MONTH, amount: 11n }]
          ]
        ) {
          const exit = yield* Effect.exit(store.settle({ ref: r.ref, at: at(2), charged: 0n, excess: 0n, entries: [], grants }))
          assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), `${exit}`)
        }
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: ALLOWANCE, period: MONTH, spent: 0n, held: 10n }])
        assert.strictEqual((yield* store.reservation(r.ref))?.status, "pending")
      }))

    it.effect("void and expiry release the holds; a later settle changes nothing", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(1_000n)
        const voided = yield* reservationOf(account, 5n, [allowance(60n), trial(20n)])
        const expiring = yield* reservationOf(account, 5n, [allowance(30n)], { expiresAt: y2k(1) })
        assert.strictEqual(yield* store.reserve(voided), "reserved")
        assert.strictEqual(yield* store.reserve(expiring), "reserved")
        assert.deepStrictEqual(yield* store.grants(account), [
          { grant: ALLOWANCE, period: MONTH, spent: 0n, held: 90n },
          { grant: TRIAL, period: "once", spent: 0n, held: 20n }
        ])
        assert.strictEqual(yield* store.void(voided.ref, at(2)), "voided")
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: ALLOWANCE, period: MONTH, spent: 0n, held: 30n }])
        assert.include(yield* store.expire(y2k(1)), expiring.ref)
        assert.deepStrictEqual(yield* store.grants(account), [])
        assert.deepStrictEqual(yield* grantItems(account), {
          [`${ALLOWANCE}#${MONTH}`]: ["0", "0", "0"],
          [`${TRIAL}#once`]: ["0", "0", "0"]
        })
        assert.strictEqual(
          yield* store.settle({
            ref: voided.ref,
            at: at(3),
            charged: 0n,
            excess: 0n,
            entries: [],
            grants: [{ grant: ALLOWANCE, period: MONTH, amount: 60n }]
          }),
          "not_pending"
        )
        assert.deepStrictEqual(yield* store.grants(account), [])
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: 1_000n, held: 0n }])
      }))
  })

  describe("listing", () => {
    it.effect("grants lists by grant then period (JS order); budgets never list grant items", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(1_000n)
        const holds = [
          { grant: "trial:a", period: "once", amount: 1n, size: 9n },
          { grant: "allowance:b", period: "2026-02", amount: 2n, size: 9n },
          { grant: "allowance:b", period: MONTH, amount: 3n, size: 9n },
          { grant: "allowance:a#x", period: MONTH, amount: 4n, size: 9n },
          { grant: "allowance:a", period: MONTH, amount: 5n, size: 9n }
        ]
        for (const hold of holds) {
          const r = yield* reservationOf(account, 1n, [hold], {
            budgets: [{ budget: "account", month: hold.period === "once" ? MONTH : hold.period, default_limit: null }]
          })
          assert.strictEqual(yield* store.reserve(r), "reserved")
        }
        assert.deepStrictEqual(
          (yield* store.grants(account)).map((g) => [g.grant, g.period, g.held]),
          [
            ["allowance:a", MONTH, 5n],
            ["allowance:a#x", MONTH, 4n],
            ["allowance:b", MONTH, 3n],
            ["allowance:b", "2026-02", 2n],
            ["trial:a", "once", 1n]
          ]
        )
        assert.deepStrictEqual(yield* store.budgets(account, MONTH), [{ budget: "account", limit: null, spent: 0n, held: 4n }])
        assert.deepStrictEqual(yield* store.budgets(account, "2026-02"), [
          { budget: "account", limit: null, spent: 0n, held: 1n }
        ])
        assert.deepStrictEqual(yield* store.grants(yield* generateId("acct")), [])
      }))
  })

  describe("concurrency", () => {
    it.effect("30 concurrent reserves of 7 against a grant of 50: 7 admitted, held 49, never past the size", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* funded(0n)
        const reservations = yield* Effect.all(
          Array.from({ length: 30 }, () => reservationOf(account, 0n, [allowance(7n, 50n)]))
        )
        const results = yield* Effect.all(reservations.map(store.reserve), { concurrency: "unbounded" })
        assert.strictEqual(results.filter((r) => r === "reserved").length, 7)
        assert.isTrue(results.every((r) => r === "reserved" || r === "insufficient"))
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: ALLOWANCE, period: MONTH, spent: 0n, held: 49n }])
        assert.strictEqual((yield* store.pending(account)).length, 7)
      }))

    it.effect("concurrent Ledger.reserve calls take the grants first, never past a size, then credits", () =>
      Effect.gen(function*() {
        const ledger = yield* Ledger
        const store = yield* LedgerStore
        const account = yield* funded(100n)
        const claims = [
          { grant: ALLOWANCE, period: MONTH, size: 25n },
          { grant: TRIAL, period: "once", size: 15n }
        ]
        // 20 calls of 10 against 40 of grants and 100 of credits: 14 fit.
        const results = yield* Effect.all(
          Array.from({ length: 20 }, () => ledger.reserve(account, null, 10n, NEVER, undefined, claims)),
          { concurrency: "unbounded" }
        )
        const reserved = results.flatMap((r) => r._tag === "Reserved" ? [r] : [])
        assert.strictEqual(reserved.length, 14)
        const grantsHeld = reserved.reduce((sum, r) => sum + r.grants.reduce((s, g) => s + g.amount, 0n), 0n)
        const creditsHeld = reserved.reduce((sum, r) => sum + r.allocations.reduce((s, a) => s + a.amount, 0n), 0n)
        assert.strictEqual(grantsHeld, 40n)
        assert.strictEqual(creditsHeld, 100n)
        assert.deepStrictEqual(yield* store.grants(account), [
          { grant: ALLOWANCE, period: MONTH, spent: 0n, held: 25n },
          { grant: TRIAL, period: "once", spent: 0n, held: 15n }
        ])
        assert.deepStrictEqual(yield* ledger.audit(account), [])
        for (const r of reserved) {
          assert.deepStrictEqual((yield* store.reservation(r.ref))?.grants, r.grants.length === 0 ? undefined : r.grants)
        }
        // Settled at 6 each: the grants are spent first, in order.
        const settled = yield* Effect.all(reserved.map((r) => ledger.settle(r.ref, 6n, { account_id: account, ...r })), {
          concurrency: "unbounded"
        })
        assert.isTrue(settled.every((s) => s._tag === "Settled"))
        const grants = yield* store.grants(account)
        assert.isTrue(grants.every((g) => g.held === 0n))
        const spent = grants.reduce((sum, g) => sum + g.spent, 0n)
        const charged = settled.reduce((sum, s) => sum + (s._tag === "Settled" ? s.charged : 0n), 0n)
        assert.strictEqual(spent + charged, 14n * 6n)
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: 100n - charged, held: 0n }])
        assert.deepStrictEqual(yield* ledger.audit(account), [])
      }))
  })
})
