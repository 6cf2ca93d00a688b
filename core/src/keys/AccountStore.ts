/** Port: where accounts are kept. Store failures are defects; rules live in the use-cases. */
import { Context, type Effect } from "effect"
import type { AccountRecord } from "./Account.ts"
import type { AccountId } from "../kernel/Ids.ts"

export class AccountStore extends Context.Service<AccountStore, {
  /** Inserts a new account; its id and email are unique. */
  readonly insert: (account: AccountRecord) => Effect.Effect<void>
  readonly get: (id: AccountId) => Effect.Effect<AccountRecord | undefined>
  /** The account with this email (emails are unique), for an operator looking an account up. */
  readonly findByEmail: (email: string) => Effect.Effect<AccountRecord | undefined>
  /** The first account ever created (the owner made at first start), if any. */
  readonly first: Effect.Effect<AccountRecord | undefined>
}>()("@model-platform/core/keys/AccountStore") {}
