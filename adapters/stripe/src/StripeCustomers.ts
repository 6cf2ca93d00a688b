/**
 * One Stripe Customer per account: the customer a checkout, a card setup and an off-session charge
 * name, kept in the platform's document store (kernel/DocumentStores.ts, kind "stripe_customer",
 * the account's id as the record's id), so it is the same customer in every process. The first
 * use makes it, with an Idempotency-Key derived from the account so that two processes making it
 * at once within Stripe's 24 hours get the same customer; should two records race, the first
 * stored wins and the other customer is never used.
 */
import { documentKind, DocumentStores, Time, Timestamp } from "@model-platform/core/kernel"
import { Effect, Schema } from "effect"

export const StripeCustomerRecord = Schema.Struct({
  /** The account's id. */
  id: Schema.String,
  /** The Stripe Customer (cus_…). */
  customer: Schema.String,
  created_at: Timestamp,
  version: Schema.Int
})
export type StripeCustomerRecord = typeof StripeCustomerRecord.Type

export const StripeCustomerDocuments = documentKind("stripe_customer", StripeCustomerRecord, (r) => r.id)

export interface StripeCustomers {
  /** The account's customer, made at its first use. */
  readonly of: (accountId: string) => Effect.Effect<string>
  /** The account's customer if it has one. */
  readonly find: (accountId: string) => Effect.Effect<string | undefined>
}

/** `create` makes a customer at Stripe for the account (its idempotency key is the caller's). */
export const makeStripeCustomers = (
  create: (accountId: string) => Effect.Effect<string>
): Effect.Effect<StripeCustomers, never, DocumentStores> =>
  Effect.map(DocumentStores, (stores) => {
    const documents = stores.of(StripeCustomerDocuments)
    const find = (accountId: string) => Effect.map(documents.get(accountId), (record) => record?.customer)
    const of = (accountId: string) =>
      Effect.gen(function*() {
        const known = yield* find(accountId)
        if (known !== undefined) return known
        const customer = yield* create(accountId)
        yield* documents.insert({ id: accountId, customer, created_at: yield* Time.now, version: 0 }).pipe(
          // Another process stored the account's customer first: that one is the account's.
          Effect.catchDefect((defect) => Effect.flatMap(find(accountId), (found) => (found === undefined ? Effect.die(defect) : Effect.void)))
        )
        return (yield* find(accountId)) ?? customer
      })
    return { of, find }
  })
