/**
 * Another account beside the owner, for tests that need two (a gift ticket redeemed by someone
 * else). The platform has no sign-up endpoint yet, so a shell's test support makes one directly
 * with its stores, as a sign-up would: an account and a key holding every permission.
 */
import { ApiKeys } from "@model-platform/core/ApiKeys"
import { generateId } from "@model-platform/core/Keys"
import { PermissionValues } from "@model-platform/core/Permissions"
import { AccountStore } from "@model-platform/core/ports/AccountStore"
import * as Time from "@model-platform/core/Time"
import { Effect } from "effect"

/** Creates an account and returns the secret of its key (every permission). */
export const createAccount = Effect.fn("test.createAccount")(function*(email: string) {
  const accounts = yield* AccountStore
  const account = { id: yield* generateId("acct"), email, created_at: yield* Time.now }
  yield* accounts.insert(account)
  const key = yield* (yield* ApiKeys).issue(account.id, { name: "test", permissions: PermissionValues })
  return key.secret
})
