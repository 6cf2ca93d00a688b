/**
 * The Alerts service (core/src/billing/Alerts.ts) on memory stores and the memory outbox: raised
 * once across processes, mailed once to the account's address when alert_email is on (and the
 * alert kept when the mail fails), listed newest first with the limit's bounds, marked seen only
 * by markSeen (a person viewing them), never by a read.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Caller } from "@model-platform/core/keys"
import { Alerts, BillingSettingsStore, lowBalanceAlert, orgSpendAlert } from "@model-platform/core/billing"
import { AccountStore } from "@model-platform/core/keys"
import { generateId } from "@model-platform/core/kernel"
import { Effect, Exit, Layer } from "effect"
import { AlertStoreMemory } from "@model-platform/memory-stores/MemoryAlertStore"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"
import { MemoryOutbox } from "../src/MemoryOutbox.ts"
import { MemoryStores } from "@model-platform/memory-stores/MemoryStores"

const stores = Layer.mergeAll(AlertStoreMemory, BillingSettingsStoreMemory, MemoryStores, MemoryOutbox.layer)
/** A process: its own Alerts over the shared stores and mail. */
const process = Alerts.layer

const newAccount = Effect.gen(function*() {
  const id = yield* generateId("acct")
  const email = `${id.toLowerCase()}@test.local`
  yield* (yield* AccountStore).insert({ id, email, created_at: "2026-11-23T00:00:00.000Z" })
  return { id, email, caller: { account: { id } } as unknown as Caller }
})

const inTwoProcesses = <A, E>(f: (a: Alerts["Service"], b: Alerts["Service"]) => Effect.Effect<A, E, AccountStore | BillingSettingsStore | MemoryOutbox>) =>
  Effect.gen(function*() {
    const instance = Effect.provide(Effect.gen(function*() { return yield* Alerts }), process)
    const a = yield* instance
    const b = yield* instance
    return yield* f(a, b)
  }).pipe(Effect.provide(stores))

describe("Alerts", () => {
  it.effect("raised once across processes; mailed once to the account's address when alert_email is on", () =>
    inTwoProcesses((a, b) =>
      Effect.gen(function*() {
        const outbox = yield* MemoryOutbox
        const quiet = yield* newAccount
        assert.isTrue(yield* a.raise(quiet.id, orgSpendAlert("2026-11", 50, 5n, 10n)))
        assert.deepStrictEqual(yield* outbox.to(quiet.email), [])

        const loud = yield* newAccount
        yield* (yield* BillingSettingsStore).update(loud.id, { alert_email: true })
        const draft = lowBalanceAlert("2026-11", 5n, 10n, "Automatic top-ups are off.")
        assert.isTrue(yield* a.raise(loud.id, draft))
        assert.isFalse(yield* a.raise(loud.id, draft))
        assert.isFalse(yield* b.raise(loud.id, draft))
        const mails = yield* outbox.to(loud.email)
        assert.strictEqual(mails.length, 1)
        assert.strictEqual(mails[0]!.subject, "Model Platform: Low balance")
        assert.include(mails[0]!.text, "Automatic top-ups are off.")
      })))

  it.effect("a mail that cannot be sent keeps the alert", () =>
    inTwoProcesses((a) =>
      Effect.gen(function*() {
        const outbox = yield* MemoryOutbox
        const account = yield* newAccount
        yield* (yield* BillingSettingsStore).update(account.id, { alert_email: true })
        yield* outbox.failNext(1, { _tag: "unavailable" })
        assert.isTrue(yield* a.raise(account.id, orgSpendAlert("2026-11", 90, 9n, 10n)))
        assert.strictEqual((yield* a.list(account.caller)).data.length, 1)
        assert.deepStrictEqual(yield* outbox.to(account.email), [])
      })))

  it.effect("list: newest first, limit 1 to 200 (default 50); reading marks nothing seen, markSeen does", () =>
    inTwoProcesses((a) =>
      Effect.gen(function*() {
        const account = yield* newAccount
        for (const point of [10, 20, 30]) yield* a.raise(account.id, orgSpendAlert("2026-11", point, 3n, 10n))
        const listed = (yield* a.list(account.caller)).data
        assert.strictEqual(listed.length, 3)
        assert.isTrue(listed.every((x) => !x.seen))
        assert.strictEqual((yield* a.list(account.caller, 2)).data.length, 2)
        assert.strictEqual((yield* a.list(account.caller, 200)).data.length, 3)
        for (const bad of [0, 201, 1.5, Number.NaN]) {
          const exit = yield* Effect.exit(a.list(account.caller, bad))
          assert.isTrue(Exit.isFailure(exit), `limit ${bad}`)
        }
        assert.isTrue((yield* a.list(account.caller)).data.every((x) => !x.seen))
        assert.strictEqual(yield* a.markSeen(account.id, [listed[0]!.id]), 1)
        const after = (yield* a.list(account.caller)).data
        assert.deepStrictEqual(after.map((x) => x.seen), listed.map((x) => x.id === listed[0]!.id))
      })))
})
