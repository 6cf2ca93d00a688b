/**
 * The first-start owner as a full account (docs/accounts.md "The owner"), in process: the start
 * gives the owner its identity (an owner made by an earlier release too), a claim link made with
 * the owner's key registers a passkey for it (SoftAuthenticator.ts answers the WebAuthn options),
 * and the link's rules: one use, 24 hours, a newer link voids the older, only its hash is kept,
 * only the owner account and only an unscoped key make one.
 */
import { ApiKeysLive } from "@model-platform/core/http"
import { assert, describe, it } from "@effect/vitest"
import {
  AccountError,
  AccountsConfig,
  AccountService,
  claimLinkFor,
  ensureOwner,
  FirstStart,
  hashToken,
  issueClaimLink,
  ownerPersonId,
  PeopleStore
} from "@model-platform/core/accounts"
import { SimulatedNetwork } from "@model-platform/core/agents"
import { ApiKeys } from "@model-platform/core/keys"
import { Catalogue } from "@model-platform/core/catalogue"
import { Time } from "@model-platform/core/kernel"
import { Effect, Exit, Layer } from "effect"
import { TestClock } from "effect/testing"
import { createAccountWithIdentity } from "../src/Accounts.ts"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { MemoryOutbox } from "../src/MemoryOutbox.ts"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { makeSoftAuthenticator, type SoftAuthenticator } from "../src/SoftAuthenticator.ts"

const ORIGIN = "http://localhost:8788"
const RP = { origin: ORIGIN, rpId: "localhost" }
const ACCOUNTS_URL = `${ORIGIN}/accounts`
const HOUR = 60 * 60_000

const TestLayer = AccountService.layer.pipe(
  Layer.provideMerge(ApiKeysLive),
  Layer.provideMerge(Catalogue.layer(fixtureCatalogue)),
  Layer.provideMerge(
    Layer.mergeAll(MemoryPlatformStores, MemoryOutbox.layer, SimulatedNetwork.layer(), Layer.succeed(AccountsConfig, { accountsUrl: ACCOUNTS_URL }))
  )
)

const run = <A, E>(effect: Effect.Effect<A, E, Layer.Success<typeof TestLayer>>) => Effect.provide(effect, TestLayer)

/** A start of the platform: the first one makes the owner (answered), later ones answer undefined. */
const start = Effect.provide(Effect.service(FirstStart), FirstStart.layer("Owner@Example.test"))

/** The refusal's code, failing the test when the effect succeeds. */
const refusal = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(effect)
    if (Exit.isSuccess(exit)) return assert.fail(`expected a refusal, got ${JSON.stringify(exit.value)}`)
    const error = exit.cause.reasons.find((r) => r._tag === "Fail")?.error
    if (error instanceof AccountError) return error.reason as string
    const code = (error as { error?: { code?: string } } | undefined)?.error?.code
    return code ?? assert.fail(`expected a refusal with a code: ${exit.cause}`)
  })

const tokenOf = (claimUrl: string) => {
  assert.match(claimUrl, /^http:\/\/localhost:8788\/accounts\/claim\?token=[\w-]{43}$/)
  return new URL(claimUrl).searchParams.get("token")!
}

/** Claims the owner account with a new passkey of `auth` through the link's token. */
const claim = (auth: SoftAuthenticator, token: string) =>
  Effect.gen(function*() {
    const accounts = yield* AccountService
    const begun = yield* accounts.beginClaim({ token, ...RP })
    return yield* accounts.finishClaim({ flow: begun.flow, response: yield* auth.create(begun.options, ORIGIN), name: "Laptop", ...RP })
  })

const newLink = (accountId: string) => Effect.map(issueClaimLink(accountId, ACCOUNTS_URL), (link) => tokenOf(link.claim_url))

describe("the first-start owner", () => {
  it.effect("the first start gives the owner its identity: ready, no passkey, cannot send; later starts keep it", () =>
    run(Effect.gen(function*() {
      const owner = (yield* start)!
      const accounts = yield* AccountService
      const identity = yield* accounts.identityOf(owner.account.id)
      assert.deepStrictEqual(
        { state: identity.state, did: identity.did, passkeys: identity.passkeys, can_send: identity.can_send },
        { state: "ready", did: `did:svc:human:${owner.account.id}`, passkeys: 0, can_send: false }
      )
      assert.match(identity.wallet_address ?? "", /^0x[0-9a-f]{40}$/)
      assert.isUndefined(yield* start)
      assert.deepStrictEqual(yield* accounts.identityOf(owner.account.id), identity)
    })))

  it.effect("an owner made by an earlier release (no identity) gets it at the next start", () =>
    run(Effect.gen(function*() {
      const owner = (yield* ensureOwner("owner@example.test"))!
      const accounts = yield* AccountService
      assert.deepStrictEqual([(yield* accounts.identityOf(owner.account.id)).state, (yield* accounts.identityOf(owner.account.id)).did], ["provisioning", null])
      assert.isUndefined(yield* start)
      assert.strictEqual((yield* accounts.identityOf(owner.account.id)).state, "ready")
    })))

  it.effect("no answer from the network at first start: provisioning, asked again like a person's", () =>
    run(Effect.gen(function*() {
      yield* (yield* SimulatedNetwork).unavailableNext(1)
      const owner = (yield* start)!
      const stored = yield* (yield* PeopleStore).getIdentity(owner.account.id)
      assert.strictEqual(stored?.state, "provisioning")
      const identity = yield* (yield* AccountService).identityOf(owner.account.id)
      assert.deepStrictEqual([identity.state, identity.did], ["ready", `did:svc:human:${owner.account.id}`])
    })))
})

describe("claiming the owner account with a passkey", () => {
  it.effect("the link registers a passkey for the owner, signs in, works once; the passkey signs in to the owner account", () =>
    run(Effect.gen(function*() {
      const owner = (yield* start)!
      const accounts = yield* AccountService
      const auth = yield* makeSoftAuthenticator
      const token = yield* newLink(owner.account.id)
      assert.strictEqual((yield* accounts.claimView(token)).email, "owner@example.test")

      const claimed = yield* claim(auth, token)
      assert.deepStrictEqual(claimed.person, { person_id: ownerPersonId(owner.account.id), email: "owner@example.test", account_id: owner.account.id })
      assert.strictEqual((yield* accounts.session(claimed.session.token))?.person.account_id, owner.account.id)
      const identity = yield* accounts.identityOf(owner.account.id)
      assert.deepStrictEqual([identity.state, identity.passkeys, identity.can_send], ["ready", 1, true])

      // Once: the page and the ceremony refuse the used link.
      assert.strictEqual(yield* refusal(accounts.claimView(token)), "token_unknown")
      assert.strictEqual(yield* refusal(claim(auth, token)), "token_unknown")
      // The passkey signs in to the owner account (no new account is made), and the owner's address still cannot be signed up with.
      const signIn = yield* accounts.beginSignIn({ clientAddress: "10.0.0.2", ...RP })
      const signedIn = yield* accounts.finishSignIn({ flow: signIn.flow, response: yield* auth.get(signIn.options, ORIGIN), ...RP })
      assert.strictEqual(signedIn.person.account_id, owner.account.id)
      assert.strictEqual(yield* refusal(accounts.beginSignUp({ email: "owner@example.test", clientAddress: "10.0.0.3", ...RP })), "email_taken")
    })))

  it.effect("only the link's hash is kept; a newer link voids the older; a link expires after 24 hours, even mid-ceremony", () =>
    run(Effect.gen(function*() {
      const owner = (yield* start)!
      const accounts = yield* AccountService
      const people = yield* PeopleStore
      const auth = yield* makeSoftAuthenticator
      const older = yield* newLink(owner.account.id)
      const token = yield* newLink(owner.account.id)
      const kept = yield* people.listTokens(ownerPersonId(owner.account.id), "claim_owner", yield* Time.now)
      assert.deepStrictEqual(kept.map((t) => t.token_hash), [hashToken(token)])
      assert.notInclude(JSON.stringify(kept), token)
      assert.strictEqual(yield* refusal(accounts.beginClaim({ token: older, ...RP })), "token_unknown")

      // Begun a minute before the link expires, finished a minute after: refused, nothing stored.
      yield* TestClock.adjust(24 * HOUR - 60_000)
      const begun = yield* accounts.beginClaim({ token, ...RP })
      yield* TestClock.adjust(2 * 60_000)
      const late = accounts.finishClaim({ flow: begun.flow, response: yield* auth.create(begun.options, ORIGIN), ...RP })
      assert.strictEqual(yield* refusal(late), "token_expired")
      assert.strictEqual((yield* accounts.identityOf(owner.account.id)).passkeys, 0)
      assert.strictEqual(yield* refusal(accounts.claimView(token)), "token_unknown")
    })))

  it.effect("a cancelled prompt leaves the link usable; two browsers finishing with one link: exactly one claims", () =>
    run(Effect.gen(function*() {
      const owner = (yield* start)!
      const accounts = yield* AccountService
      const token = yield* newLink(owner.account.id)
      yield* accounts.beginClaim({ token, ...RP }) // the prompt was closed: nothing finished
      const [a, b] = [yield* makeSoftAuthenticator, yield* makeSoftAuthenticator]
      const begins = [yield* accounts.beginClaim({ token, ...RP }), yield* accounts.beginClaim({ token, ...RP })]
      const finishes = yield* Effect.all(
        [
          Effect.exit(accounts.finishClaim({ flow: begins[0]!.flow, response: yield* a.create(begins[0]!.options, ORIGIN), ...RP })),
          Effect.exit(accounts.finishClaim({ flow: begins[1]!.flow, response: yield* b.create(begins[1]!.options, ORIGIN), ...RP }))
        ],
        { concurrency: "unbounded" }
      )
      assert.strictEqual(finishes.filter(Exit.isSuccess).length, 1)
      assert.strictEqual((yield* accounts.identityOf(owner.account.id)).passkeys, 1)
    })))

  it.effect("a later claim adds a passkey and signs the owner's other sessions out (the owner's recovery)", () =>
    run(Effect.gen(function*() {
      const owner = (yield* start)!
      const accounts = yield* AccountService
      const first = yield* claim(yield* makeSoftAuthenticator, yield* newLink(owner.account.id))
      const second = yield* claim(yield* makeSoftAuthenticator, yield* newLink(owner.account.id))
      assert.isUndefined(yield* accounts.session(first.session.token))
      assert.isDefined(yield* accounts.session(second.session.token))
      assert.lengthOf(yield* accounts.listPasskeys(second.session.token), 2)
    })))

  // A scoped key is refused before (the endpoint is account-wide: KeyScope.ts, the permission matrix).
  it.effect("claim links are the owner account's: 409 not_owner_account", () =>
    run(Effect.gen(function*() {
      const owner = (yield* start)!
      const keys = yield* ApiKeys
      const other = yield* createAccountWithIdentity("person@example.test")
      assert.strictEqual(yield* refusal(claimLinkFor(yield* keys.authenticate(other), ACCOUNTS_URL)), "not_owner_account")
      const unscoped = yield* keys.issue(owner.account.id, { name: "manager", permissions: ["manage"] })
      tokenOf((yield* claimLinkFor(yield* keys.authenticate(unscoped.secret), ACCOUNTS_URL)).claim_url)
    })))
})
