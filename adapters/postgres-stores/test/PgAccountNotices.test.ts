/**
 * Account notices on a PostgreSQL server (PgAccountNotices.ts, migration 0027): a process that
 * follows them hears, as each commits, the accounts whose billing settings, receipts, reversed
 * credits, agents, plans or rentals another process changed; not their usage or other documents. A lost listener says so (everything kept is
 * to be forgotten) and listens again. PGlite is left out: the embedded database does not listen.
 */
import { describe, expect, it } from "@effect/vitest"
import { AccountNotices } from "@model-platform/core/kernel"
import { BillingSettingsStore } from "@model-platform/core/billing"
import { LedgerStore } from "@model-platform/core/ledger"
import { OrderStore } from "@model-platform/core/payments"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Database from "../src/database/Database.ts"
import { AccountNoticesPg } from "../src/PgAccountNotices.ts"
import { BillingSettingsStorePg } from "../src/PgBillingSettingsStore.ts"
import { LedgerStorePg } from "../src/PgLedgerStore.ts"
import { OrderStorePg } from "../src/PgOrderStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const databaseUrl = process.env["TEST_DATABASE_URL"]

/** What a follower heard, in order: an account id, or "missed". */
const followed = Effect.gen(function*() {
  const notices = yield* AccountNotices
  const heard: Array<string> = []
  yield* notices.follow({ changed: (accountId) => heard.push(accountId), missed: () => heard.push("missed") })
  return { heard, live: notices.live }
})

const until = (what: string, ok: () => boolean) =>
  Effect.gen(function*() {
    for (let waited = 0; waited < 5_000; waited += 10) {
      if (ok()) return
      yield* Effect.sleep(10)
    }
    return yield* Effect.die(new Error(`not within 5 s: ${what}`))
  })

describe.skipIf(databaseUrl === undefined)("account notices on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl === undefined) return
  const url = Effect.runSync(Effect.cached(Effect.promise(() => freshDatabaseUrl(databaseUrl))))
  // Two processes' worth of connections on one database: one follows, the other writes.
  const follower = Layer.unwrap(Effect.map(url, (url) =>
    AccountNoticesPg.pipe(Layer.provideMerge(Database.layer({ databaseUrl: url, dataDir: "unused" })))
  ))
  const writer = Layer.unwrap(Effect.map(url, (url) =>
    Layer.mergeAll(BillingSettingsStorePg, OrderStorePg, LedgerStorePg).pipe(Layer.provideMerge(Database.layer({ databaseUrl: url, dataDir: "unused" })))
  ))

  it.live("hears the accounts whose settings, tier, agents, plans or rentals changed elsewhere, not their usage or other documents", () =>
    Effect.gen(function*() {
      const { heard, live } = yield* followed
      yield* until("listening", live)
      heard.length = 0
      const accountId = `acct_${crypto.randomUUID()}`
      yield* Effect.gen(function*() {
        const ledger = yield* LedgerStore
        const at = new Date().toISOString() as never
        // Credits added and usage do not move the tier or the settings: no notice. (A usage entry is
        // written by the gateway's commit statement, as here: an insert of its own.)
        yield* ledger.post({ id: crypto.randomUUID(), account_id: accountId as never, machine_id: null, amount: 5_000_000n, type: "credit_added", ref: "order_1", created_at: at })
        yield* (yield* SqlClient.SqlClient)`
          INSERT INTO ledger_entries (id, account_id, machine_id, amount, type, ref, created_at)
          VALUES (${crypto.randomUUID()}, ${accountId}, NULL, -1000, 'usage', 'usage_1', now())`
        yield* (yield* BillingSettingsStore).update(accountId as never, { alert_points: [50] })
        yield* ledger.post({ id: crypto.randomUUID(), account_id: accountId as never, machine_id: null, amount: -2_000_000n, type: "credit_reversed", ref: "refund:re_1", created_at: at })
        yield* (yield* OrderStore).insertReceipt({
          id: `rcpt_${crypto.randomUUID()}`,
          account_id: accountId as never,
          order_id: `ord_${crypto.randomUUID()}` as never,
          kind: "credits",
          title: "Credits",
          paid_at: at,
          amount_cents: 500n,
          currency: "usd",
          credits: 5_000_000n,
          paid_with: "card",
          auto_reload: false,
          counts_toward_tier: true
        })
        // What stands behind its keys: a plan, a rental, an agent; a document of another kind is not.
        const sql = yield* SqlClient.SqlClient
        yield* sql`
          INSERT INTO subscriptions (id, account_id, order_id, machine_id, plan_id, paid_with, auto_renews,
                                     cancel_at_period_end, current_period_start, current_period_end, created_at)
          VALUES (${`sub_${crypto.randomUUID()}`}, ${accountId}, ${`ord_${crypto.randomUUID()}`}, 'm', 'p', 'card', true,
                  false, now(), now() + interval '30 days', now())`
        yield* sql`
          INSERT INTO rentals (id, account_id, order_id, machine_id, cpu_cores, memory_gb, gpu, storage_gb, hours,
                               starts_at, ends_at, created_at)
          VALUES (${`rent_${crypto.randomUUID()}`}, ${accountId}, ${`ord_${crypto.randomUUID()}`}, 'm', 1, 1, 0, 0, 1,
                  now(), now() + interval '1 hour', now())`
        yield* sql`
          INSERT INTO documents (kind, id, owner_id, created_at, version, record)
          VALUES ('approval', ${crypto.randomUUID()}, ${accountId}, now(), 0, '{}'::jsonb)`
        yield* sql`
          INSERT INTO documents (kind, id, owner_id, created_at, version, record)
          VALUES ('agent', ${crypto.randomUUID()}, ${accountId}, now(), 0, '{}'::jsonb)`
      }).pipe(Effect.provide(writer))
      yield* until("six notices", () => heard.length >= 6)
      yield* Effect.sleep(100)
      expect(heard).toEqual(Array(6).fill(accountId))
    }).pipe(Effect.provide(follower)))

  it.live("hears a key revoked and a monthly limit set or removed elsewhere, not a key's use (migration 0028: credit leases)", () =>
    Effect.gen(function*() {
      const { heard, live } = yield* followed
      yield* until("listening", live)
      heard.length = 0
      const accountId = `acct_${crypto.randomUUID()}`
      const keyId = `key_${crypto.randomUUID()}`
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO accounts (id, email, created_at) VALUES (${accountId}, ${`${accountId}@notices.test`}, now())`
        yield* sql`
          INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, permissions, created_at)
          VALUES (${keyId}, ${accountId}, 'k', 'mpk_abcdefgh', ${crypto.randomUUID()}, ARRAY['inference'], now())`
        // Its use is written at most once a minute per key: no notice.
        yield* sql`UPDATE api_keys SET last_used_at = now() WHERE id = ${keyId}`
        const ledger = yield* LedgerStore
        yield* ledger.setBudgetLimit(accountId as never, "account", 5_000_000n)
        yield* ledger.setBudgetLimit(accountId as never, "account", null)
        yield* sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${keyId}`
      }).pipe(Effect.provide(writer))
      yield* until("three notices", () => heard.length >= 3)
      yield* Effect.sleep(100)
      expect(heard).toEqual(Array(3).fill(accountId))
    }).pipe(Effect.provide(follower)))

  it.live("a listener that hears nothing (a proxy that does not carry notices) never counts as live", () =>
    Effect.gen(function*() {
      const { heard, live } = yield* followed
      yield* Effect.sleep(1_500)
      expect(live()).toBe(false)
      expect(heard).toEqual([])
    }).pipe(Effect.provide(Layer.unwrap(Effect.map(url, (url) =>
      // The listener's session gets nothing: it listens where nobody notifies.
      AccountNoticesPg.pipe(
        Layer.provide(Layer.effect(
          PgClient.PgClient,
          Effect.map(PgClient.PgClient, (pg) =>
            new Proxy(pg, { get: (target, name) => name === "listen" ? (channel: string) => target.listen(`${channel}_elsewhere`) : Reflect.get(target, name) }))
        )),
        Layer.provideMerge(Database.layer({ databaseUrl: url, dataDir: "unused" }))
      )
    )))))

  it.live("says when its listener is lost, and listens again", () =>
    Effect.gen(function*() {
      const { heard, live } = yield* followed
      yield* until("listening", live)
      heard.length = 0
      const sql = yield* SqlClient.SqlClient
      // Another process ends the listening connection (a failover, a restarted pooler).
      yield* Effect.provide(
        Effect.flatMap(SqlClient.SqlClient, (other) =>
          other`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()`),
        writer
      )
      yield* until("lost", () => !live())
      expect(heard).toEqual(["missed"])
      yield* until("listening again", live)
      expect(heard).toEqual(["missed", "missed"])
      yield* sql`SELECT pg_notify('account_state', 'acct_after')`
      yield* until("a notice after", () => heard.length === 3)
      expect(heard[2]).toBe("acct_after")
    }).pipe(Effect.provide(follower)))
})
