/** Port: where API keys are kept, found by the hash of their secret. */
import { Context, type Effect } from "effect"
import type { AccountRecord } from "./Account.ts"
import type { KeyRecord } from "./Keys.ts"
import type { Timestamp } from "../kernel/Time.ts"
import type { AccountId, KeyId } from "../kernel/Ids.ts"

export class KeyStore extends Context.Service<KeyStore, {
  /** Inserts a new key; its id and secret hash are unique. */
  readonly insert: (key: KeyRecord) => Effect.Effect<void>
  readonly findByHash: (secretHash: string) => Effect.Effect<KeyRecord | undefined>
  /**
   * Optional: `findByHash` and the key's account (as AccountStore.get answers it: undefined when
   * the account does not exist) in one read. A store kept beside the accounts (one database) that
   * can join them provides it, so authenticating a call costs one round trip instead of two;
   * ApiKeys.authenticate uses it when present, else findByHash then AccountStore.get.
   */
  readonly findCaller?: (
    secretHash: string
  ) => Effect.Effect<{ readonly key: KeyRecord; readonly account: AccountRecord | undefined } | undefined>
  readonly get: (accountId: AccountId, keyId: KeyId) => Effect.Effect<KeyRecord | undefined>
  /**
   * The keys whose visible prefix is this one (`prefix`, Keys.ts; revoked ones included), for an
   * operator finding whose a leaked key is. Not on any request's path: a store may scan.
   */
  readonly findByPrefix: (prefix: string) => Effect.Effect<ReadonlyArray<KeyRecord>>
  /** The account's keys, oldest first, revoked ones included. */
  readonly list: (accountId: AccountId) => Effect.Effect<ReadonlyArray<KeyRecord>>
  /**
   * Sets revoked_at once: atomically, only when the key is not revoked yet. Returns the key as it
   * is afterwards (an already revoked key keeps its first revoked_at), or undefined when unknown.
   */
  readonly revoke: (accountId: AccountId, keyId: KeyId, at: Timestamp) => Effect.Effect<KeyRecord | undefined>
  /** Records a use of the key; never moves last_used_at backwards. */
  readonly touch: (keyId: KeyId, at: Timestamp) => Effect.Effect<void>
}>()("@model-platform/core/keys/KeyStore") {}
