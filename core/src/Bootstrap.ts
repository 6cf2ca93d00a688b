/**
 * Use-case: the first start. When no account exists yet, create the owner account and its first
 * key holding every permission. The secret is handed to the shell once, to print; later starts
 * find the owner and hand over nothing.
 */
import { Context, Effect, Layer } from "effect"
import type { AccountRecord } from "./Account.ts"
import { ApiKeys } from "./ApiKeys.ts"
import type { CreatedKey } from "./Keys.ts"
import { generateId } from "./Keys.ts"
import { PermissionValues } from "./Permissions.ts"
import { AccountStore } from "./ports/AccountStore.ts"
import * as Time from "./Time.ts"

export interface Owner {
  readonly account: AccountRecord
  readonly key: CreatedKey
}

export const ensureOwner = Effect.fn("Bootstrap.ensureOwner")(function*(email: string) {
  const accounts = yield* AccountStore
  if ((yield* accounts.first) !== undefined) return undefined
  const account = { id: yield* generateId("acct"), email, created_at: yield* Time.now }
  yield* accounts.insert(account)
  const apiKeys = yield* ApiKeys
  const key = yield* apiKeys.issue(account.id, { name: "owner", permissions: PermissionValues })
  return { account, key } satisfies Owner
})

/** What the first start created: the owner and its key with the secret, or undefined on later starts. */
export class FirstStart extends Context.Service<FirstStart, Owner | undefined>()("@model-platform/core/FirstStart") {
  static readonly layer = (email: string) => Layer.effect(FirstStart, ensureOwner(email))
}
