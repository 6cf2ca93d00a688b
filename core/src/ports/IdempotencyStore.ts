/**
 * Port: the records behind the Idempotency-Key header. A record is claimed before the write
 * runs (so two concurrent requests with one key cannot both run it), completed with the
 * response, or released when the write died so the client may retry.
 */
import { Context, type Effect } from "effect"
import type { Timestamp } from "../Time.ts"

export interface StoredResponse {
  readonly status: number
  readonly body: string
}

export interface IdempotencyRecord {
  /** Who the key belongs to (the account) and the key itself. */
  readonly scope: string
  readonly key: string
  /** Hash of method, path and body: another request under the same key is a conflict. */
  readonly fingerprint: string
  readonly created_at: Timestamp
  /** Undefined while the first request is still running. */
  readonly response: StoredResponse | undefined
}

export type ClaimResult =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "Exists"; readonly record: IdempotencyRecord }

export class IdempotencyStore extends Context.Service<IdempotencyStore, {
  /** Atomically creates the record unless one exists for (scope, key); then returns that one. */
  readonly claim: (record: Omit<IdempotencyRecord, "response">) => Effect.Effect<ClaimResult>
  readonly complete: (scope: string, key: string, response: StoredResponse) => Effect.Effect<void>
  /** Deletes a claim whose request did not finish, so the same key can be tried again. */
  readonly release: (scope: string, key: string) => Effect.Effect<void>
}>()("@model-platform/core/ports/IdempotencyStore") {}
