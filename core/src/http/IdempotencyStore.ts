/**
 * Port: the records behind the Idempotency-Key header. A record is claimed before the write
 * runs (so two concurrent requests with one key cannot both run it), completed with the
 * response, or released when the write died so the client may retry.
 *
 * A record is kept RETENTION_MS (24 hours, as Stripe keeps them): a record created that long
 * before a claim counts as absent, so the claim replaces it, and every store removes such records
 * (docs/api-decisions.md "Idempotency"). The store reads "now" from the claim's `created_at`.
 */
import { Context, type Effect } from "effect"
import { type Timestamp, toTimestamp } from "../kernel/Time.ts"

/** How long an idempotency record is kept after it was created. */
export const RETENTION_MS = 24 * 60 * 60 * 1000

/**
 * What an answer kept in clear by a release before sealing is replaced with, by the stores'
 * upgrades (PostgreSQL's migration, DynamoDB's backfill). Such a record's fingerprint has the
 * earlier form, which no request matches now: its replay is a 409, never the write again.
 */
export const ERASED_RESPONSE_BODY = "erased"

/** The newest `created_at` of a record that has expired at `now`: a record this old or older is absent. */
export const expiredBy = (now: Timestamp): Timestamp => toTimestamp(Date.parse(now) - RETENTION_MS)

export interface StoredResponse {
  readonly status: number
  /** The response body as the middleware gives it: sealed (http/IdempotencySeal.ts), never a secret in clear. */
  readonly body: string
}

export interface IdempotencyRecord {
  /** Who the key belongs to (the account) and the key itself. */
  readonly scope: string
  readonly key: string
  /** Hash of the calling key, method, path and body: another request under the same key is a conflict. */
  readonly fingerprint: string
  readonly created_at: Timestamp
  /** Undefined while the first request is still running. */
  readonly response: StoredResponse | undefined
}

export type ClaimResult =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "Exists"; readonly record: IdempotencyRecord }

export class IdempotencyStore extends Context.Service<IdempotencyStore, {
  /**
   * Atomically creates the record unless one that has not expired at `record.created_at` exists
   * for (scope, key); then returns that one. An expired record is replaced.
   */
  readonly claim: (record: Omit<IdempotencyRecord, "response">) => Effect.Effect<ClaimResult>
  readonly complete: (scope: string, key: string, response: StoredResponse) => Effect.Effect<void>
  /** Deletes a claim whose request did not finish, so the same key can be tried again. */
  readonly release: (scope: string, key: string) => Effect.Effect<void>
}>()("@model-platform/core/http/IdempotencyStore") {}
