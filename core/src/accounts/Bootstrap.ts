/**
 * Use-case: the first start. When no account exists yet, create the owner account and its first
 * key holding every permission. The secret is handed to the shell once, to print; later starts
 * find the owner and hand over nothing. Shells that cannot print it use a secret made beforehand
 * (`ensureOwnerWithSecret`). Every start then asks the network for the owner's identity until it
 * has answered (accounts/Owner.ts), so an owner made by an earlier release gets one too.
 */
import { Context, Effect, Layer } from "effect"
import type { AccountRecord } from "../keys/Account.ts"
import { ensureOwnerIdentity } from "./Owner.ts"
import { ApiKeys, MalformedSecret } from "../keys/ApiKeys.ts"
import type { CreatedKey } from "../keys/Keys.ts"
import { looksLikeSecret } from "../keys/Keys.ts"
import { generateId } from "../kernel/Ids.ts"
import { PermissionValues } from "../keys/Permissions.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import * as Time from "../kernel/Time.ts"

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

/**
 * The first start on a shell with no terminal to print a secret on (Lambda): the operator made the
 * owner's secret beforehand (with `generateSecret`) and keeps it in a secret store. When no account
 * exists yet, `secret` is read (only then) and the owner's key is made with it; the stores keep
 * only its hash, and the secret goes nowhere else. A value without the shape of a key secret
 * fails with `MalformedSecret` before anything is written.
 */
export const ensureOwnerWithSecret = <E, R>(email: string, secret: Effect.Effect<string, E, R>) =>
  Effect.gen(function*() {
    const accounts = yield* AccountStore
    if ((yield* accounts.first) !== undefined) return undefined
    const value = yield* secret
    if (!looksLikeSecret(value)) {
      return yield* new MalformedSecret({
        message: "The owner key secret does not have the shape of a platform secret; make one with generateSecret."
      })
    }
    const account = { id: yield* generateId("acct"), email, created_at: yield* Time.now }
    yield* accounts.insert(account)
    const apiKeys = yield* ApiKeys
    const key = yield* apiKeys.issueWithSecret(account.id, value, { name: "owner", permissions: PermissionValues })
    return { account, key } satisfies Owner
  }).pipe(Effect.withSpan("Bootstrap.ensureOwnerWithSecret"))

/**
 * The start: the owner made when there is none, then the owner's identity (Owner.ts). The first
 * account is read once on a later start (a Lambda cold start waits for these reads).
 */
const started = <E, R>(makeOwner: Effect.Effect<Owner | undefined, E, R>) =>
  Effect.gen(function*() {
    const accounts = yield* AccountStore
    const found = yield* accounts.first
    const made = found === undefined ? yield* makeOwner : undefined
    // A process starting beside this one may have made the owner between the two reads.
    const owner = found ?? made?.account ?? (yield* accounts.first)
    yield* ensureOwnerIdentity(owner)
    return made
  })

/**
 * What the first start created: the owner and its key with the secret, or undefined on later
 * starts. Building it also makes the owner's identity (needs the Network and the PeopleStore).
 */
export class FirstStart extends Context.Service<FirstStart, Owner | undefined>()("@model-platform/core/FirstStart") {
  static readonly layer = (email: string) => Layer.effect(FirstStart, started(ensureOwner(email)))
  /** The first start with an owner secret made beforehand (`ensureOwnerWithSecret`). */
  static readonly layerWithSecret = <E, R>(email: string, secret: Effect.Effect<string, E, R>) =>
    Layer.effect(FirstStart, started(ensureOwnerWithSecret(email, secret)))
}
