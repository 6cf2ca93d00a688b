/**
 * What an operator may do across accounts (docs/operations.md "The operator console"): find
 * accounts, read one account whole, credit it with a reason, revoke any key, see the machines, look
 * one call up by its ref, read the audit log. Every action that changes something is audited
 * (Audit.ts) with the operator's name, the reason and the state before and after.
 *
 * Money: an adjustment is a ledger credit (`credit_added`, docs/resources.md) of a positive amount
 * of credits with at most 6 decimals, under the reference `adjustment_<reference>`: unique per
 * account, so the same reference twice credits once (a retried form, a double click).
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { AccountRecord } from "../keys/Account.ts"
import { ApiKeys } from "../keys/ApiKeys.ts"
import { usageTierFor } from "../billing/Tiers.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { Gateway } from "../gateway/Gateway.ts"
import { hashSecret, type KeyRecord, toKey } from "../keys/Keys.ts"
import { creditsToMicro, microToCredits } from "../kernel/Money.ts"
import { Ledger } from "../ledger/Ledger.ts"
import { Orders } from "../payments/OrderService.ts"
import { CurrentActivity } from "../gateway/Activity.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import { KeyStore } from "../keys/KeyStore.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { MachineStatus } from "../catalogue/MachineStatus.ts"
import { DocumentStores } from "../kernel/DocumentStores.ts"
import { MeteringJournal } from "../gateway/MeteringJournal.ts"
import { PlanStore } from "../plans/PlanStore.ts"
import { UsageStore } from "../billing/UsageStore.ts"
import * as Time from "../kernel/Time.ts"
import { audit, auditOf } from "./Audit.ts"
import type { AccountId, KeyId } from "../kernel/Ids.ts"

/** Why an operator request is refused: a status and a code in the platform's shape. */
export class OperatorRefused extends Error {
  readonly _tag = "OperatorRefused"
  readonly status: number
  readonly code: string
  constructor(status: number, code: string, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

const refuse = (status: number, code: string, message: string) => Effect.fail(new OperatorRefused(status, code, message))

/** How many of an account's calls the account view lists (newest first, the last 30 days). */
export const RECENT_CALLS = 20
const DAY_MS = 86_400_000

export type AccountQuery =
  | { readonly by: "id"; readonly value: string }
  | { readonly by: "email"; readonly value: string }
  | { readonly by: "key_prefix"; readonly value: string }

/** A visible prefix is the first 12 characters of a secret (Keys.ts); a whole secret finds its key exactly. */
const PREFIX_LENGTH = 12

const keyView = (key: KeyRecord) => ({ ...toKey(key), revoked_at: key.revoked_at, last_used_at: key.last_used_at })

const credits = (micro: bigint) => microToCredits(micro)

export class Operator extends Context.Service<Operator, {
  readonly findAccounts: (query: AccountQuery) => Effect.Effect<ReadonlyArray<AccountRecord>>
  readonly account: (id: string) => Effect.Effect<unknown, OperatorRefused>
  readonly adjustCredits: (
    operator: string,
    accountId: AccountId,
    input: { readonly amount_credits: number; readonly reason: string; readonly reference: string | undefined }
  ) => Effect.Effect<unknown, OperatorRefused>
  readonly revokeKey: (operator: string, accountId: AccountId, keyId: KeyId, reason: string | null) => Effect.Effect<unknown, OperatorRefused>
  readonly machines: Effect.Effect<unknown>
  readonly call: (ref: string) => Effect.Effect<unknown, OperatorRefused>
  readonly audit: (month: string) => Effect.Effect<unknown>
  /** Audits a catalogue reload the shell did (`before` and `after`: what changed). */
  readonly recordReload: (operator: string, change: { readonly before: unknown; readonly after: unknown }) => Effect.Effect<void>
}>()("@model-platform/core/operator/Operator") {
  static readonly layer = Layer.effect(
    Operator,
    Effect.gen(function*() {
      const accounts = yield* AccountStore
      const keys = yield* KeyStore
      const ledger = yield* Ledger
      const ledgerStore = yield* LedgerStore
      const usage = yield* UsageStore
      const plans = yield* PlanStore
      const orders = yield* Orders
      const apiKeys = yield* ApiKeys
      const catalogue = yield* Catalogue
      const status = yield* MachineStatus
      const gateway = yield* Gateway
      const activity = yield* CurrentActivity
      const journal = yield* Effect.serviceOption(MeteringJournal)
      const documents = yield* DocumentStores
      const withDocuments = <A, E>(effect: Effect.Effect<A, E, DocumentStores>) => Effect.provideService(effect, DocumentStores, documents)

      const findAccounts = Effect.fn("Operator.findAccounts")(function*(query: AccountQuery) {
        if (query.by === "id") {
          const account = yield* accounts.get(query.value)
          return account === undefined ? [] : [account]
        }
        if (query.by === "email") {
          const account = yield* accounts.findByEmail(query.value.trim().toLowerCase())
            .pipe(Effect.flatMap((found) => found !== undefined ? Effect.succeed(found) : accounts.findByEmail(query.value.trim())))
          return account === undefined ? [] : [account]
        }
        // A whole secret finds its key by hash; a prefix by the visible prefix.
        const found = query.value.length > PREFIX_LENGTH
          ? yield* Effect.map(keys.findByHash(yield* hashSecret(query.value)), (key) => (key === undefined ? [] : [key]))
          : yield* keys.findByPrefix(query.value)
        const ids = [...new Set(found.map((k) => k.account_id))]
        const out: Array<AccountRecord> = []
        for (const id of ids) {
          const account = yield* accounts.get(id)
          if (account !== undefined) out.push(account)
        }
        return out
      })

      const existing = (id: string) =>
        Effect.flatMap(accounts.get(id), (account) =>
          account === undefined ? refuse(404, "account_not_found", `No account "${id}".`) : Effect.succeed(account))

      const balanceOf = (accountId: AccountId) =>
        Effect.map(ledgerStore.balances(accountId), (scopes) => ({
          available: scopes.reduce((n, s) => n + s.posted - s.held, 0n),
          held: scopes.reduce((n, s) => n + s.held, 0n)
        }))

      const account = Effect.fn("Operator.account")(function*(id: string) {
        const record = yield* existing(id)
        const balance = yield* balanceOf(id)
        const now = yield* Clock.currentTimeMillis
        const calls = yield* usage.list({ account_id: id, from: Time.toTimestamp(now - 30 * DAY_MS), to: Time.toTimestamp(now + 1) })
        return {
          account: record,
          balance: { available_credits: credits(balance.available), held_credits: credits(balance.held) },
          usage_tier: usageTierFor(catalogue.config.tiers, yield* orders.purchasedCredits(id)),
          keys: (yield* keys.list(id)).map(keyView),
          subscriptions: yield* plans.subscriptions(id),
          rentals: yield* plans.rentals(id),
          recent_calls: calls.slice(-RECENT_CALLS).reverse().map((r) => ({
            ref: r.ref, at: r.at, model: r.model, machine_id: r.machine_id, key_id: r.key_id,
            input_tokens: Number(r.input_tokens), output_tokens: Number(r.output_tokens), credits: credits(r.credits)
          })),
          activity: (yield* Effect.orDie(ledger.activity(id, 20))).data
        }
      })

      const adjustCredits = Effect.fn("Operator.adjustCredits")(function*(
        operator: string,
        accountId: AccountId,
        input: { readonly amount_credits: number; readonly reason: string; readonly reference: string | undefined }
      ) {
        const amount = creditsToMicro(input.amount_credits)
        if (amount === undefined || amount <= 0n) {
          return yield* refuse(400, "invalid_request", "amount_credits must be a positive number of credits with at most 6 decimals.")
        }
        yield* existing(accountId)
        const reference = input.reference ?? (yield* Effect.sync(() => crypto.randomUUID()))
        const ref = `adjustment_${reference}`
        const before = yield* balanceOf(accountId)
        const result = yield* ledger.credit(accountId, { ref, machine_id: null, amount, type: "credit_added" })
        if (result._tag === "Duplicate") {
          // The same reference again: credited once, the first time; nothing to audit.
          return { duplicate: true, ref, balance: { available_credits: credits(before.available) } }
        }
        const after = yield* balanceOf(accountId)
        const entry = yield* audit({
          operator,
          action: "credit_adjustment",
          target: accountId,
          reason: input.reason,
          before: { available_credits: credits(before.available) },
          after: { available_credits: credits(after.available), ledger_entry: result.entry.id, ref, amount_credits: credits(amount) }
        }).pipe(withDocuments)
        return {
          duplicate: false,
          ref,
          entry: { id: result.entry.id, amount_credits: credits(amount), created_at: result.entry.created_at },
          balance: { available_credits: credits(after.available) },
          audit_id: entry.id
        }
      })

      const revokeKey = Effect.fn("Operator.revokeKey")(function*(operator: string, accountId: AccountId, keyId: KeyId, reason: string | null) {
        const before = yield* keys.get(accountId, keyId)
        if (before === undefined) return yield* refuse(404, "key_not_found", `No key "${keyId}" in account "${accountId}".`)
        if (before.revoked_at !== null) return { key: keyView(before), revoked_now: false }
        const after = yield* keys.revoke(accountId, keyId, yield* Time.now)
        // This process's memory of the key goes at once; others notice at their next admission.
        yield* apiKeys.forget(keyId)
        yield* audit({
          operator,
          action: "key_revoked",
          target: keyId,
          reason,
          before: { account_id: accountId, revoked_at: null },
          after: { account_id: accountId, revoked_at: after?.revoked_at ?? null }
        }).pipe(withDocuments)
        return { key: keyView(after ?? before), revoked_now: true }
      })

      const machines = Effect.gen(function*() {
        const cooling = new Set(yield* gateway.coolingDown)
        return yield* Effect.forEach(catalogue.config.machines, (machine) =>
          Effect.map(status.get(machine.id), (state) => ({
            id: machine.id,
            name: machine.name,
            region: machine.region,
            health: state.health,
            serving_now: state.serving_now,
            cooling_down: cooling.has(machine.id),
            calls_in_flight: activity.callsOn(machine.id)
          })))
      })

      const call = Effect.fn("Operator.call")(function*(ref: string) {
        const record = yield* usage.byRef(ref)
        const reservation = yield* ledgerStore.reservation(ref)
        const accountId = record?.account_id ?? reservation?.account_id
        // A call's usage entries are its ref, or `<ref>@<machine>` for credits pinned to a machine (LedgerRules.usageEntryRef).
        const entries = accountId === undefined ? [] : (yield* ledgerStore.entries(accountId)).filter((e) => e.ref === ref || e.ref.startsWith(`${ref}@`))
        const lines = journal._tag === "Some" && journal.value.entriesOf !== undefined ? yield* journal.value.entriesOf(ref) : []
        if (record === undefined && reservation === undefined && lines.length === 0) {
          return yield* refuse(404, "call_not_found", `No call "${ref}".`)
        }
        const json = (value: unknown) => JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v)))
        return {
          ref,
          usage_record: record === undefined ? null : json(record),
          reservation: reservation === undefined ? null : json(reservation),
          ledger_entries: json(entries),
          journal: json(lines)
        }
      })

      return Operator.of({
        findAccounts,
        account,
        adjustCredits,
        revokeKey,
        machines,
        call,
        audit: (month) => auditOf(month).pipe(withDocuments),
        recordReload: (operator, change) =>
          audit({ operator, action: "catalogue_reloaded", target: "catalogue", reason: null, ...change }).pipe(Effect.asVoid, withDocuments)
      })
    })
  )
}
