/**
 * Use-case: the first start. When no account exists yet, create the owner account and its first
 * key holding every permission. The secret is returned once, for the shell to print; later starts
 * find the owner and return nothing.
 */
import { Effect } from "effect"
import { ApiKeys } from "./ApiKeys.ts"
import type { CreatedKey } from "./Keys.ts"
import { generateId } from "./Keys.ts"
import { PermissionValues } from "./Permissions.ts"
import { AccountStore } from "./ports/AccountStore.ts"
import * as Time from "./Time.ts"

export const ensureOwner = Effect.fn("Bootstrap.ensureOwner")(function*(email: string) {
  const accounts = yield* AccountStore
  if ((yield* accounts.first) !== undefined) return undefined
  const account = { id: yield* generateId("acct"), email, created_at: yield* Time.now }
  yield* accounts.insert(account)
  const apiKeys = yield* ApiKeys
  const key: CreatedKey = yield* apiKeys.issue(account.id, { name: "owner", permissions: PermissionValues })
  return { account, key }
})
