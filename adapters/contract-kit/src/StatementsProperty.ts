/**
 * The property of monthly statements (billing/Statements.ts, docs/billing.md "Statements"), on any
 * ledger and usage stores: for any history of credits added (both kinds, replays included), calls
 * charged (a ledger settlement and its usage record with the same credits, as the gateway writes
 * them; zero-credit calls and replays included) and the months they fall in, every month's
 * statement satisfies closing = opening + added - used, opens at the previous month's closing (the
 * month before the first opens and closes at 0), equals a model of the history to the
 * micro-credit, and the last month closes at the ledger's posted balance; the listed months are
 * exactly the months with activity, newest first.
 */
import { assert, layer } from "@effect/vitest"
import { statementsOver, UsageStore } from "@model-platform/core/billing"
import { generateId } from "@model-platform/core/kernel"
import { type CreditEntryType, LedgerStore, usageEntries } from "@model-platform/core/ledger"
import type { Timestamp } from "@model-platform/core/kernel"
import { Effect, type Layer } from "effect"
import fc from "fast-check"

const NEVER = "2100-01-01T00:00:00.000Z" as Timestamp
/** The history's months: 2023-01 .. 2024-02, so a year's edge is crossed. */
const MONTHS = Array.from({ length: 14 }, (_, i) => `${2023 + Math.floor(i / 12)}-${String((i % 12) + 1).padStart(2, "0")}`)
const SERVICES = new Map([["chat", "Chat"], ["embeddings", "Embeddings"]])

const eventArb = fc.record({
  month: fc.integer({ min: 0, max: MONTHS.length - 1 }),
  /** Milliseconds into the month (28 days: every month has them), edges included. */
  offset: fc.oneof(fc.constant(0), fc.constant(28 * 86_400_000 - 1), fc.integer({ min: 0, max: 28 * 86_400_000 - 1 })),
  event: fc.oneof(
    fc.record({
      kind: fc.constant("credit" as const),
      type: fc.constantFrom<CreditEntryType>("credit_added", "plan_credit_granted"),
      amount: fc.bigInt({ min: 1n, max: 10n ** 12n })
    }),
    fc.record({
      kind: fc.constant("usage" as const),
      service: fc.constantFrom("chat", "embeddings", "retired"),
      amount: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 10n ** 11n }))
    })
  ),
  replay: fc.boolean()
})

const instant = (month: string, offset: number) =>
  new Date(Date.parse(`${month}-01T00:00:00.000Z`) + offset).toISOString() as Timestamp

export const statementsProperty = <E>(name: string, stores: Layer.Layer<LedgerStore | UsageStore, E>, numRuns: number): void =>
  layer(stores, { excludeTestServices: true, timeout: "300 seconds" })(name, (it) => {
    it.effect("statements close month over month and at the ledger's balance, for any history", () =>
      Effect.gen(function*() {
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const reads = statementsOver(
          { creditTotals: ledger.creditTotals, report: usage.report, receipts: () => Effect.succeed([]) },
          SERVICES
        )
        const property = fc.asyncProperty(fc.array(eventArb, { maxLength: 16 }), (events) =>
          Effect.runPromise(Effect.gen(function*() {
            const account = yield* generateId("acct")
            // The model: per month, credits by kind and usage charged; months with activity.
            const model = new Map(MONTHS.map((m) => [m, { purchased: 0n, plan: 0n, used: 0n, active: false }]))
            for (const { event, month: i, offset, replay } of events) {
              const month = MONTHS[i]!
              const at = instant(month, offset)
              const row = model.get(month)!
              row.active = true
              if (event.kind === "credit") {
                const entry = {
                  id: yield* generateId("led"),
                  account_id: account,
                  machine_id: null,
                  amount: event.amount,
                  type: event.type,
                  ref: yield* generateId("order"),
                  created_at: at
                }
                assert.strictEqual(yield* ledger.post(entry), "posted")
                if (replay) assert.strictEqual(yield* ledger.post({ ...entry, id: yield* generateId("led") }), "duplicate")
                if (event.type === "plan_credit_granted") row.plan += event.amount
                else row.purchased += event.amount
              } else {
                // A free reservation settled with its whole charge as excess: the balance may go below zero.
                const ref = yield* generateId("usage")
                const reservation = { ref, account_id: account, machine_id: null, allocations: [], created_at: at, expires_at: NEVER }
                assert.strictEqual(yield* ledger.reserve(reservation), "reserved")
                const entries = event.amount === 0n
                  ? []
                  : yield* usageEntries(account, ref, [{ machine_id: null, amount: event.amount }], at)
                const settlement = { ref, at, charged: event.amount, excess: event.amount, entries }
                assert.strictEqual(yield* ledger.settle(settlement), "settled")
                const record = {
                  ref,
                  account_id: account,
                  at,
                  key_id: "key_property",
                  agent_id: null,
                  machine_id: "m-1",
                  service: event.service,
                  model: `${event.service}-model`,
                  unit: "tokens",
                  quantity: 1n,
                  input_tokens: 1n,
                  output_tokens: 0n,
                  list_credits: event.amount,
                  credits: event.amount,
                  from_allowance: 0n,
                  from_trial: 0n
                }
                assert.strictEqual(yield* usage.record(record), "Recorded")
                if (replay) assert.strictEqual(yield* usage.record(record), "Duplicate")
                row.used += event.amount
              }
            }

            const active = MONTHS.filter((m) => model.get(m)!.active).reverse()
            assert.deepStrictEqual(yield* reads.months(account), active)

            // The month before the history, then every month of it (with or without activity).
            let previous = (yield* reads.statement(account, "2022-12")).closing
            assert.strictEqual(previous, 0n)
            let expected = 0n
            for (const month of MONTHS) {
              const s = yield* reads.statement(account, month)
              const row = model.get(month)!
              assert.strictEqual(s.opening, previous, `${month} opens at the previous closing`)
              assert.strictEqual(s.opening, expected, `${month}: opening`)
              assert.strictEqual(s.closing, s.opening + s.purchased + s.plan - s.used, `${month}: closing`)
              assert.deepStrictEqual([s.purchased, s.plan, s.used], [row.purchased, row.plan, row.used], month)
              assert.strictEqual(s.byService.reduce((sum, g) => sum + g.credits, 0n) + s.other, s.used)
              expected += row.purchased + row.plan - row.used
              previous = s.closing
            }
            // Exactness: the last month closes at the ledger's posted balance (available + held).
            const posted = (yield* ledger.balances(account)).reduce((sum, b) => sum + b.posted, 0n)
            assert.strictEqual(previous, posted)
          }))
        )
        yield* Effect.promise(() => fc.assert(property, { numRuns }))
      }), 300_000)
  })
