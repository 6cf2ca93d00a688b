/**
 * Grants on Postgres beyond the shared contracts (GrantContract, GatewayGrantContract): migration
 * 0017_ledger_grants' functions called the ways the contracts do not — `reserve` with explicit
 * grant holds (the budgets checked before the grants, the grants before the balance), a settlement
 * charging a grant it does not hold (raised inside ledger_finish: a defect, nothing changed), the
 * month rows shared by budgets and grants listed apart, `reserveInOrder`'s budget check counting
 * only the credits' part, a replayed or voided gateway commit's record — and, on a PostgreSQL
 * server, a reservation made before the migration finishing after it. On embedded PGlite and, with
 * TEST_DATABASE_URL, on a server.
 */
import { assert, describe, it, layer, type Vitest } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Exit, Layer, Redacted } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import type { AccountRecord } from "@model-platform/core/keys"
import { grantParts, UsageStore } from "@model-platform/core/billing"
import { AccountStore, type KeyRecord, KeyStore } from "@model-platform/core/keys"
import { generateId, toTimestamp, windowStartOf } from "@model-platform/core/kernel"
import {
  type BudgetClaim,
  type GrantClaim,
  LedgerStore,
  type NewReservation,
  type OrderedReservation,
  type ReserveInOrderResult,
  settlementOf
} from "@model-platform/core/ledger"
import { type Admission, GatewayStore, type Metered } from "@model-platform/core/gateway"
import * as Database from "../src/database/Database.ts"
import { migrate, migrations } from "../src/migrations.ts"
import { LedgerStorePg } from "../src/PgLedgerStore.ts"
import { PgPlatformStores } from "../src/PgPlatformStores.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"
import { at, sampleKey } from "@model-platform/contract-kit/SampleRecords"

const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
const JAN = "2026-01"

const allowance = (size: bigint, period = JAN): GrantClaim => ({ grant: "allowance:chat", period, size })
const trial = (size: bigint): GrantClaim => ({ grant: "trial:chat", period: "once", size })

const fundedAccount = Effect.fnUntraced(function*(amount: bigint) {
  const id = yield* generateId("acct")
  if (amount > 0n) {
    yield* (yield* LedgerStore).post({
      id: yield* generateId("led"),
      account_id: id,
      machine_id: null,
      amount,
      type: "credit_added",
      ref: yield* generateId("order"),
      created_at: at(0)
    })
  }
  return id
})

const newReservation = Effect.fnUntraced(function*(account: string, fields: Partial<NewReservation>) {
  const reservation: NewReservation = {
    ref: yield* generateId("usage"),
    account_id: account,
    machine_id: null,
    allocations: [],
    created_at: at(1),
    expires_at: NEVER,
    ...fields
  }
  return reservation
})

const ordered = Effect.fnUntraced(function*(account: string, amount: bigint, fields: Partial<OrderedReservation>) {
  const request: OrderedReservation = {
    ref: yield* generateId("usage"),
    account_id: account,
    machine_id: null,
    scopes: [null],
    amount,
    created_at: at(1),
    expires_at: NEVER,
    ...fields
  }
  return request
})

const reservedOf = (r: ReserveInOrderResult | undefined) => {
  assert.strictEqual(r?._tag, "reserved")
  return r as Extract<ReserveInOrderResult, { readonly _tag: "reserved" }>
}

/** Everything a failed step must leave as it was. */
const snapshot = Effect.fnUntraced(function*(account: string) {
  const store = yield* LedgerStore
  return {
    balances: yield* store.balances(account),
    grants: yield* store.grants(account),
    budgets: yield* store.budgets(account, JAN),
    pending: yield* store.pending(account),
    entries: yield* store.entries(account)
  }
})

const ledgerTests = (it: Vitest.MethodsNonLive<LedgerStore>) => {
  it.effect("reserve with grant holds: budgets checked first, then each hold against its size, then the balance", () =>
    Effect.gen(function*() {
      const store = yield* LedgerStore
      const account = yield* fundedAccount(10n)
      const budgets: ReadonlyArray<BudgetClaim> = [{ budget: "account", month: JAN, default_limit: 4n }]
      const first = yield* newReservation(account, {
        allocations: [{ machine_id: null, amount: 2n }],
        budgets,
        grants: [{ grant: "allowance:chat", period: JAN, amount: 3n, size: 5n }]
      })
      assert.strictEqual(yield* store.reserve(first), "reserved")
      const holds = [{ grant: "allowance:chat", period: JAN, amount: 3n }]
      assert.deepStrictEqual((yield* store.reservation(first.ref))?.grants, holds)
      assert.deepStrictEqual((yield* store.pending(account)).map((r) => r.grants), [holds])
      assert.deepStrictEqual(yield* store.grants(account), [{ grant: "allowance:chat", period: JAN, spent: 0n, held: 3n }])
      // The budget holds the credits' part only.
      assert.deepStrictEqual(yield* store.budgets(account, JAN), [{ budget: "account", limit: null, spent: 0n, held: 2n }])

      const before = yield* snapshot(account)
      // 3 more of a grant of 5 with 3 held: insufficient, whatever the balance.
      const past = yield* newReservation(account, { grants: [{ grant: "allowance:chat", period: JAN, amount: 3n, size: 5n }] })
      assert.strictEqual(yield* store.reserve(past), "insufficient")
      // Over the budget and past the grant: the budget answers.
      const both = yield* newReservation(account, {
        allocations: [{ machine_id: null, amount: 3n }],
        budgets,
        grants: [{ grant: "allowance:chat", period: JAN, amount: 3n, size: 5n }]
      })
      assert.strictEqual(yield* store.reserve(both), "over_budget")
      // Within the grant, short of credits.
      const poor = yield* newReservation(account, {
        allocations: [{ machine_id: null, amount: 9n }],
        grants: [{ grant: "trial:chat", period: "once", amount: 1n, size: 1n }]
      })
      assert.strictEqual(yield* store.reserve(poor), "insufficient")
      assert.deepStrictEqual(yield* snapshot(account), before)
      assert.strictEqual(yield* store.reservation(past.ref), undefined)

      // It cost 2: 2 of the allowance's 3 held, no credits; the rest of the holds is released.
      const partial = yield* settlementOf(first.ref, 2n, { account_id: account, allocations: first.allocations, grants: holds })
      assert.deepStrictEqual([partial.charged, partial.grants], [0n, [{ grant: "allowance:chat", period: JAN, amount: 2n }]])
      assert.strictEqual(yield* store.settle(partial), "settled")
      assert.deepStrictEqual(yield* store.grants(account), [{ grant: "allowance:chat", period: JAN, spent: 2n, held: 0n }])
      assert.deepStrictEqual(yield* store.budgets(account, JAN), [])
      assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: 10n, held: 0n }])
      const settled = yield* store.reservation(first.ref)
      assert.deepStrictEqual([settled?.status, settled?.charged, settled?.grants], ["settled", 0n, holds])
    }))

  it.effect("a settlement charging a grant beyond the reservation's hold is a defect and changes nothing", () =>
    Effect.gen(function*() {
      const store = yield* LedgerStore
      const account = yield* fundedAccount(0n)
      const r = yield* newReservation(account, { grants: [{ grant: "trial:chat", period: "once", amount: 2n, size: 5n }] })
      assert.strictEqual(yield* store.reserve(r), "reserved")
      const before = yield* snapshot(account)
      const charge = (grant: string, period: string, amount: bigint) =>
        store.settle({ ref: r.ref, at: at(2), charged: 0n, excess: 0n, entries: [], grants: [{ grant, period, amount }] })
      for (const bad of [charge("trial:chat", "once", 3n), charge("allowance:chat", JAN, 1n), charge("trial:chat", JAN, 1n)]) {
        const exit = yield* Effect.exit(bad)
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), `expected a defect, got ${exit}`)
      }
      assert.deepStrictEqual(yield* snapshot(account), before)
      assert.strictEqual(yield* charge("trial:chat", "once", 2n), "settled")
      assert.deepStrictEqual(yield* store.grants(account), [{ grant: "trial:chat", period: "once", spent: 2n, held: 0n }])
    }))

  it.effect("budgets and grants share their rows but are listed apart; grants by grant, then period", () =>
    Effect.gen(function*() {
      const store = yield* LedgerStore
      const account = yield* fundedAccount(100n)
      const claims = [
        allowance(5n, "2026-02"),
        allowance(5n, JAN),
        trial(5n),
        { grant: "allowance:alpha", period: JAN, size: 5n }
      ]
      for (const claim of claims) {
        const request = yield* ordered(account, 1n, {
          grants: [claim],
          budgets: [{ budget: "account", month: claim.period === "once" ? JAN : claim.period, default_limit: null }]
        })
        reservedOf(yield* store.reserveInOrder!(request))
      }
      assert.deepStrictEqual((yield* store.grants(account)).map((g) => `${g.grant} ${g.period}`), [
        "allowance:alpha 2026-01",
        "allowance:chat 2026-01",
        "allowance:chat 2026-02",
        "trial:chat once"
      ])
      // The grants covered every call: the budget claims hold nothing.
      assert.deepStrictEqual(yield* store.budgets(account, JAN), [])
      yield* store.setBudgetLimit(account, "key:k1", 7n)
      assert.deepStrictEqual(yield* store.budgets(account, JAN), [{ budget: "key:k1", limit: 7n, spent: 0n, held: 0n }])
      assert.deepStrictEqual(yield* store.budgets(account, "once"), [{ budget: "key:k1", limit: 7n, spent: 0n, held: 0n }])
    }))

  it.effect("reserveInOrder: grants first; the budgets count what the credits take; insufficient counts what the grants have left", () =>
    Effect.gen(function*() {
      const store = yield* LedgerStore
      const account = yield* fundedAccount(1n)
      const noCredit: ReadonlyArray<BudgetClaim> = [{ budget: "account", month: JAN, default_limit: 0n }]
      // Covered by the allowance: no allocation, nothing against a limit of 0.
      const covered = yield* ordered(account, 3n, { grants: [allowance(5n)], budgets: noCredit })
      const r = reservedOf(yield* store.reserveInOrder!(covered))
      assert.deepStrictEqual(r.allocations, [])
      assert.deepStrictEqual(r.grants, [{ grant: "allowance:chat", period: JAN, amount: 3n }])
      assert.deepStrictEqual((yield* store.reservation(covered.ref))?.allocations, [])
      // 2 left in the allowance: 1 from credits passes the limit of 0.
      const over = yield* ordered(account, 3n, { grants: [allowance(5n)], budgets: noCredit })
      assert.deepStrictEqual(yield* store.reserveInOrder!(over), { _tag: "over_budget", budget: "account", limit: 0n, used: 0n })
      // Without a limit, 10 is more than the 2 left in the allowance, the trial's 1 and the 1 credit.
      const big = yield* ordered(account, 10n, { grants: [allowance(5n), trial(1n)] })
      assert.deepStrictEqual(yield* store.reserveInOrder!(big), { _tag: "insufficient", available: 4n })
      // Exactly that much: every source, in order.
      const all = yield* ordered(account, 4n, { grants: [allowance(5n), trial(1n)] })
      const taken = reservedOf(yield* store.reserveInOrder!(all))
      assert.deepStrictEqual(taken.grants, [
        { grant: "allowance:chat", period: JAN, amount: 2n },
        { grant: "trial:chat", period: "once", amount: 1n }
      ])
      assert.deepStrictEqual(taken.allocations, [{ machine_id: null, amount: 1n }])
      // Void and expiry release everything.
      assert.strictEqual(yield* store.void(covered.ref, at(3)), "voided")
      assert.strictEqual(yield* store.void(all.ref, at(3)), "voided")
      assert.deepStrictEqual(yield* store.grants(account), [])
      assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: 1n, held: 0n }])
    }))
}

const accountWithKey = Effect.fnUntraced(function*(credits: bigint) {
  const id = yield* fundedAccount(credits)
  const account: AccountRecord = { id, email: `${id}@pg-grants.test`, created_at: at(0) }
  yield* (yield* AccountStore).insert(account)
  const key = sampleKey(yield* generateId("key"), id, `${id}-${yield* generateId("hash")}`, { name: "grant key" })
  yield* (yield* KeyStore).insert(key)
  return key
})

/** Admits a call of `amount` with an allowance and a trial, and meters it at `actual`. */
const admittedCall = Effect.fnUntraced(function*(key: KeyRecord, amount: bigint, actual: bigint) {
  const admission: Admission = {
    account_id: key.account_id,
    key_id: key.id,
    touch_at: undefined,
    rate: { bucket: `rpm:${key.id}`, window_start: windowStartOf(Date.now(), 60_000), window_ms: 60_000, limit: 1_000 },
    reservation: yield* ordered(key.account_id, amount, { grants: [allowance(2n), trial(1n)] })
  }
  const [admitted] = yield* (yield* GatewayStore).admit([admission])
  assert.strictEqual(admitted?._tag, "Admitted")
  const reserved = reservedOf(admitted?._tag === "Admitted" ? admitted.reserved : undefined)
  const ref = admission.reservation!.ref
  const settlement = yield* settlementOf(ref, actual, {
    account_id: key.account_id,
    allocations: reserved.allocations,
    grants: reserved.grants ?? []
  })
  const call: Metered = {
    settlement,
    record: {
      ref,
      account_id: key.account_id,
      at: at(5),
      key_id: key.id,
      agent_id: null,
      machine_id: "m_grant",
      service: "chat",
      model: "ref-chat",
      unit: "tokens",
      quantity: 10n,
      input_tokens: 5n,
      output_tokens: 5n,
      list_credits: actual,
      credits: settlement.charged,
      ...grantParts(settlement.grants ?? [])
    }
  }
  return call
})

const gatewayTests = (it: Vitest.MethodsNonLive<GatewayStore | LedgerStore | UsageStore | AccountStore | KeyStore>) => {
  it.effect("a commit replayed after its settlement went through records what was charged, grants as given", () =>
    Effect.gen(function*() {
      const key = yield* accountWithKey(10n)
      // 5 held: 2 allowance, 1 trial, 2 credits; it costs 4: 1 credit.
      const call = yield* admittedCall(key, 5n, 4n)
      assert.strictEqual(call.settlement?.charged, 1n)
      // The process died between the settlement and the record.
      assert.strictEqual(yield* (yield* LedgerStore).settle(call.settlement!), "settled")
      // The replay has the record's credits wrong (as a journal might): the reservation's charge wins.
      const replay: Metered = { ...call, record: { ...call.record, credits: 7n } }
      assert.deepStrictEqual(yield* (yield* GatewayStore).commit([replay]), [{ settlement: "not_pending", record: "Recorded" }])
      const record = yield* (yield* UsageStore).byRef(call.record.ref)
      assert.deepStrictEqual([record?.credits, record?.from_allowance, record?.from_trial], [1n, 2n, 1n])
    }))

  it.effect("a commit whose reservation was voided records nothing charged and nothing covered", () =>
    Effect.gen(function*() {
      const key = yield* accountWithKey(10n)
      const call = yield* admittedCall(key, 5n, 4n)
      assert.strictEqual(yield* (yield* LedgerStore).void(call.settlement!.ref, at(3)), "voided")
      assert.deepStrictEqual(yield* (yield* GatewayStore).commit([call]), [{ settlement: "not_pending", record: "Recorded" }])
      const record = yield* (yield* UsageStore).byRef(call.record.ref)
      assert.deepStrictEqual([record?.credits, record?.from_allowance, record?.from_trial], [0n, 0n, 0n])
      assert.deepStrictEqual(yield* (yield* LedgerStore).grants(key.account_id), [])
    }))
}

const suite = (name: string, options: Database.Options) =>
  describe(name, () => {
    layer(LedgerStorePg.pipe(Layer.provide(Database.layer(options))), { timeout: "60 seconds" })("LedgerStorePg", (it) =>
      ledgerTests(it))
    layer(PgPlatformStores.pipe(Layer.provide(Database.layer(options))), { timeout: "60 seconds" })("GatewayStorePg", (it) =>
      gatewayTests(it))
  })

suite("grants on in-memory PGlite", { dataDir: Database.MEMORY })

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("grants on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) suite("contract", { databaseUrl, dataDir: "unused" })

  it.live("a reservation made before migration 0017 finishes after it, releasing its budget", () =>
    Effect.gen(function*() {
      const url = yield* Effect.promise(() => freshDatabaseUrl(databaseUrl!))
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const before = Object.fromEntries(Object.entries(migrations).filter(([id]) => id < "0017"))
        yield* Migrator.make({})({ loader: Migrator.fromRecord(before) })
        yield* sql`INSERT INTO ledger_balances (account_id, scope, posted, held) VALUES ('acct_old', '', 10, 0)`
        const [old] = yield* sql<{ readonly r: string }>`
          SELECT ledger_reserve('usage_old', 'acct_old', NULL, ARRAY['']::text[], ARRAY[4]::bigint[],
                                '2026-01-15T00:00:00Z', '2100-01-01T00:00:00Z',
                                ARRAY['account']::text[], ARRAY['2026-01']::text[], ARRAY[NULL]::bigint[]) AS r`
        assert.strictEqual(old?.r, "reserved")
        yield* migrate
        yield* Effect.gen(function*() {
          const store = yield* LedgerStore
          const pending = yield* store.reservation("usage_old")
          assert.strictEqual(pending?.grants, undefined)
          assert.deepStrictEqual(pending?.allocations, [{ machine_id: null, amount: 4n }])
          const settlement = yield* settlementOf("usage_old", 3n, { account_id: "acct_old", allocations: pending!.allocations })
          assert.strictEqual(yield* store.settle(settlement), "settled")
          assert.deepStrictEqual(yield* store.budgets("acct_old", JAN), [{ budget: "account", limit: null, spent: 3n, held: 0n }])
          assert.deepStrictEqual(yield* store.balances("acct_old"), [{ machine_id: null, posted: 7n, held: 0n }])
        }).pipe(Effect.provide(LedgerStorePg.pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, sql)))))
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.scoped)
    }), 60_000)
})
