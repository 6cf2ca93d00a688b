/**
 * The account service's ceremonies end to end, in process, without a browser: a software
 * authenticator (SoftAuthenticator.ts) answers the WebAuthn options, mails land in the memory
 * outbox, the network is the simulated one. Each ceremony is tested with its refusals.
 */
import { ApiKeysLive } from "@model-platform/core/http"
import { assert, describe, it } from "@effect/vitest"
import {
  AccountError,
  AccountsConfig,
  AccountService,
  ensureOwner,
  PeopleStore,
  storedIdentity
} from "@model-platform/core/accounts"
import { SimulatedNetwork } from "@model-platform/core/agents"
import { ApiKeys } from "@model-platform/core/keys"
import { Catalogue } from "@model-platform/core/catalogue"
import { Effect, Exit, Layer } from "effect"
import { TestClock } from "effect/testing"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { MemoryOutbox } from "../src/MemoryOutbox.ts"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { makeSoftAuthenticator, type SoftAuthenticator } from "../src/SoftAuthenticator.ts"

const ORIGIN = "http://localhost:8788"
const RP = { origin: ORIGIN, rpId: "localhost" }
const HOUR = 60 * 60_000

const TestLayer = AccountService.layer.pipe(
  Layer.provideMerge(ApiKeysLive),
  Layer.provideMerge(Catalogue.layer(fixtureCatalogue)),
  Layer.provideMerge(
    Layer.mergeAll(
      MemoryPlatformStores,
      MemoryOutbox.layer,
      SimulatedNetwork.layer(),
      Layer.succeed(AccountsConfig, { accountsUrl: `${ORIGIN}/` })
    )
  )
)

const run = <A, E>(effect: Effect.Effect<A, E, Layer.Success<typeof TestLayer>>) =>
  Effect.provide(effect, TestLayer)

/** The refusal's code, failing the test when the effect succeeds or fails otherwise. */
const refusal = <A, R>(effect: Effect.Effect<A, AccountError, R>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(effect)
    if (Exit.isSuccess(exit)) return assert.fail(`expected a refusal, got ${JSON.stringify(exit.value)}`)
    const error = exit.cause.reasons.find((r) => r._tag === "Fail")
    if (error === undefined || !(error.error instanceof AccountError)) return assert.fail(`expected an AccountError: ${exit.cause}`)
    return error.error
  })

/** The newest link of `kind` mailed to `email`: its token. */
const mailedToken = (email: string, kind: "confirm" | "recover") =>
  Effect.gen(function*() {
    const outbox = yield* MemoryOutbox
    const mails = yield* outbox.to(email)
    const match = [...mails].reverse().map((m) => m.text.match(new RegExp(`${ORIGIN}/${kind}\\?token=([A-Za-z0-9_-]+)`)))
      .find((m) => m !== null)
    if (match === undefined || match === null) return assert.fail(`no ${kind} link mailed to ${email}`)
    return match[1]!
  })

const signUp = (auth: SoftAuthenticator, email: string) =>
  Effect.gen(function*() {
    const accounts = yield* AccountService
    const begun = yield* accounts.beginSignUp({ email, clientAddress: "10.0.0.1", ...RP })
    const response = yield* auth.create(begun.options, ORIGIN)
    yield* accounts.finishSignUp({ flow: begun.flow, response, name: "Laptop", ...RP })
    return yield* accounts.confirmEmail({ token: yield* mailedToken(email, "confirm") })
  })

const signIn = (auth: SoftAuthenticator, pick: { readonly credentialId?: string; readonly counter?: number } = {}) =>
  Effect.gen(function*() {
    const accounts = yield* AccountService
    const begun = yield* accounts.beginSignIn({ clientAddress: "10.0.0.2", ...RP })
    const response = yield* auth.get(begun.options, ORIGIN, pick)
    return yield* accounts.finishSignIn({ flow: begun.flow, response, ...RP })
  })

describe("AccountService", () => {
  it.effect("sign-up, confirmation, sign-in, a first key, sign-out", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const auth = yield* makeSoftAuthenticator
      const begun = yield* accounts.beginSignUp({ email: " Ada@Example.TEST ", clientAddress: "10.0.0.1", ...RP })
      assert.isUndefined((begun.options as { allowCredentials?: unknown }).allowCredentials)
      const response = yield* auth.create(begun.options, ORIGIN)
      const pending = yield* accounts.finishSignUp({ flow: begun.flow, response, ...RP })
      assert.strictEqual(pending.email, "ada@example.test")
      // Not a person until confirmed: the passkey signs nobody in, the email is still free.
      assert.strictEqual((yield* refusal(signIn(auth))).reason, "unknown_passkey")

      const confirmed = yield* accounts.confirmEmail({ token: yield* mailedToken("ada@example.test", "confirm") })
      assert.isNotNull(confirmed.person.account_id)
      const live = yield* accounts.session(confirmed.session.token)
      assert.strictEqual(live?.person.email, "ada@example.test")
      assert.strictEqual(live?.csrf, confirmed.session.csrf)

      const identity = yield* accounts.identityOf(confirmed.person.account_id!)
      assert.strictEqual(identity.state, "ready")
      assert.strictEqual(identity.did, `did:svc:human:${confirmed.person.account_id}`)
      assert.strictEqual(identity.passkeys, 1)
      assert.isTrue(identity.can_send)
      assert.strictEqual(identity.manage_url, `${ORIGIN}/manage`)

      const key = yield* accounts.createKey({
        ...confirmed.session,
        session: confirmed.session.token,
        name: "first",
        permissions: ["read", "inference"]
      })
      assert.deepStrictEqual(key.permissions, ["inference", "read"])
      const manager = yield* accounts.createKey({
        ...confirmed.session,
        session: confirmed.session.token,
        name: "manager",
        permissions: ["manage"]
      })
      assert.deepStrictEqual(manager.permissions, ["manage"])
      const caller = yield* (yield* ApiKeys).authenticate(key.secret)
      assert.strictEqual(caller.account.id, confirmed.person.account_id)

      const signedIn = yield* signIn(auth)
      assert.strictEqual(signedIn.person.person_id, confirmed.person.person_id)
      yield* accounts.signOut({ session: signedIn.session.token, csrf: signedIn.session.csrf })
      assert.isUndefined(yield* accounts.session(signedIn.session.token))
      assert.isDefined(yield* accounts.session(confirmed.session.token))
      assert.strictEqual(
        (yield* refusal(accounts.signOut({ session: signedIn.session.token, csrf: signedIn.session.csrf }))).reason,
        "session_required"
      )
    })))

  it.effect("refusals: replayed flow, wrong origin, used and expired links, a taken email", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const auth = yield* makeSoftAuthenticator
      const begun = yield* accounts.beginSignUp({ email: "bob@example.test", clientAddress: "10.0.0.1", ...RP })
      const elsewhere = yield* auth.create(begun.options, "http://evil.test")
      assert.strictEqual((yield* refusal(accounts.finishSignUp({ flow: begun.flow, response: elsewhere, ...RP }))).reason, "verification_failed")
      // The flow was consumed by that attempt: a replay is refused whatever it carries.
      const good = yield* auth.create(begun.options, ORIGIN)
      assert.strictEqual((yield* refusal(accounts.finishSignUp({ flow: begun.flow, response: good, ...RP }))).reason, "invalid_flow")
      assert.strictEqual((yield* refusal(accounts.finishSignUp({ flow: "nonsense", response: {}, ...RP }))).reason, "invalid_flow")

      const again = yield* accounts.beginSignUp({ email: "bob@example.test", clientAddress: "10.0.0.1", ...RP })
      yield* accounts.finishSignUp({ flow: again.flow, response: yield* auth.create(again.options, ORIGIN), ...RP })
      const first = yield* mailedToken("bob@example.test", "confirm")
      // A new link replaces the older one.
      yield* accounts.resendConfirmation({ email: "bob@example.test", clientAddress: "10.0.0.1" })
      const token = yield* mailedToken("bob@example.test", "confirm")
      assert.notStrictEqual(token, first)
      assert.strictEqual((yield* refusal(accounts.confirmEmail({ token: first }))).reason, "token_used")
      yield* TestClock.adjust(25 * HOUR)
      assert.strictEqual((yield* refusal(accounts.confirmEmail({ token }))).reason, "token_expired")
      // Nothing pending any more: a resend sends nothing (and says so to nobody).
      yield* accounts.resendConfirmation({ email: "bob@example.test", clientAddress: "10.0.0.1" })
      assert.strictEqual((yield* (yield* MemoryOutbox).to("bob@example.test")).length, 2)

      const third = yield* accounts.beginSignUp({ email: "bob@example.test", clientAddress: "10.0.0.1", ...RP })
      yield* accounts.finishSignUp({ flow: third.flow, response: yield* auth.create(third.options, ORIGIN), ...RP })
      const fresh = yield* mailedToken("bob@example.test", "confirm")
      yield* accounts.confirmEmail({ token: fresh })
      assert.strictEqual((yield* refusal(accounts.confirmEmail({ token: fresh }))).reason, "token_used")
      assert.strictEqual((yield* refusal(accounts.confirmEmail({ token: "unknown" }))).reason, "token_unknown")
      assert.strictEqual(
        (yield* refusal(accounts.beginSignUp({ email: "BOB@example.test", clientAddress: "10.0.0.1", ...RP }))).reason,
        "email_taken"
      )
      assert.strictEqual(
        (yield* refusal(accounts.beginSignUp({ email: "not an address", clientAddress: "10.0.0.1", ...RP }))).reason,
        "invalid_email"
      )
    })))

  it.effect("two pending sign-ups of one address: the first confirmed wins", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const a = yield* makeSoftAuthenticator
      const b = yield* makeSoftAuthenticator
      for (const auth of [a, b]) {
        const begun = yield* accounts.beginSignUp({ email: "cy@example.test", clientAddress: "10.0.0.1", ...RP })
        yield* accounts.finishSignUp({ flow: begun.flow, response: yield* auth.create(begun.options, ORIGIN), ...RP })
      }
      const mails = yield* (yield* MemoryOutbox).to("cy@example.test")
      const tokens = mails.map((m) => m.text.match(/token=([A-Za-z0-9_-]+)/)![1]!)
      yield* accounts.confirmEmail({ token: tokens[1]! })
      assert.strictEqual((yield* refusal(accounts.confirmEmail({ token: tokens[0]! }))).reason, "email_taken")
    })))

  it.effect("one link followed twice at once, one flow finished twice at once: exactly one wins", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const auth = yield* makeSoftAuthenticator
      const begun = yield* accounts.beginSignUp({ email: "kai@example.test", clientAddress: "10.0.0.1", ...RP })
      yield* accounts.finishSignUp({ flow: begun.flow, response: yield* auth.create(begun.options, ORIGIN), ...RP })
      const token = yield* mailedToken("kai@example.test", "confirm")
      const confirms = yield* Effect.all(
        Array.from({ length: 5 }, () => Effect.exit(accounts.confirmEmail({ token }))),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(confirms.filter(Exit.isSuccess).length, 1)

      const signIn = yield* accounts.beginSignIn({ clientAddress: "10.0.0.2", ...RP })
      const response = yield* auth.get(signIn.options, ORIGIN)
      const finishes = yield* Effect.all(
        Array.from({ length: 5 }, () => Effect.exit(accounts.finishSignIn({ flow: signIn.flow, response, ...RP }))),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(finishes.filter(Exit.isSuccess).length, 1)
    })))

  it.effect("sign-in refusals: a replayed assertion, a lowered counter, another origin", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const auth = yield* makeSoftAuthenticator
      yield* signUp(auth, "dee@example.test")
      const begun = yield* accounts.beginSignIn({ clientAddress: "10.0.0.2", ...RP })
      const response = yield* auth.get(begun.options, ORIGIN)
      yield* accounts.finishSignIn({ flow: begun.flow, response, ...RP })
      assert.strictEqual((yield* refusal(accounts.finishSignIn({ flow: begun.flow, response, ...RP }))).reason, "invalid_flow")
      assert.strictEqual((yield* refusal(signIn(auth, { counter: 1 }))).reason, "verification_failed")
      const other = yield* accounts.beginSignIn({ clientAddress: "10.0.0.2", ...RP })
      const forged = yield* auth.get({ ...other.options, rpId: "localhost" }, "http://evil.test")
      assert.strictEqual(
        (yield* refusal(accounts.finishSignIn({ flow: other.flow, response: forged, ...RP }))).reason,
        "verification_failed"
      )
      assert.strictEqual((yield* refusal(accounts.finishSignIn({ flow: "x", response: null, ...RP }))).reason, "invalid_flow")
    })))

  it.effect("passkeys: add, list, remove, never the last; CSRF on every change", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const auth = yield* makeSoftAuthenticator
      const { session } = yield* signUp(auth, "eve@example.test")
      const call = { session: session.token, csrf: session.csrf }
      assert.strictEqual((yield* refusal(accounts.beginAddPasskey({ ...call, csrf: "forged", ...RP }))).reason, "csrf_mismatch")
      const begun = yield* accounts.beginAddPasskey({ ...call, ...RP })
      const added = yield* accounts.finishAddPasskey({ ...call, flow: begun.flow, response: yield* auth.create(begun.options, ORIGIN), name: " Phone ", ...RP })
      assert.strictEqual(added.name, "Phone")
      const listed = yield* accounts.listPasskeys(session.token)
      assert.deepStrictEqual(listed.map((p) => p.name), ["Laptop", "Phone"])

      assert.strictEqual((yield* refusal(accounts.removePasskey({ ...call, csrf: "", credentialId: added.credential_id }))).reason, "csrf_mismatch")
      assert.strictEqual((yield* refusal(accounts.removePasskey({ ...call, credentialId: "nope" }))).reason, "passkey_not_found")
      yield* accounts.removePasskey({ ...call, credentialId: added.credential_id })
      assert.strictEqual(
        (yield* refusal(accounts.removePasskey({ ...call, credentialId: listed[0]!.credential_id }))).reason,
        "last_passkey"
      )
      assert.strictEqual((yield* refusal(signIn(auth, { credentialId: added.credential_id }))).reason, "unknown_passkey")
      assert.strictEqual((yield* refusal(accounts.listPasskeys("no-session"))).reason, "session_required")
      const permissions = ["inference"]
      assert.strictEqual((yield* refusal(accounts.createKey({ ...call, csrf: "x", name: "k", permissions }))).reason, "csrf_mismatch")
      assert.strictEqual((yield* refusal(accounts.createKey({ ...call, name: " ", permissions }))).reason, "invalid_request")
      // None chosen, or one a person's page does not give.
      assert.strictEqual((yield* refusal(accounts.createKey({ ...call, name: "k", permissions: [] }))).reason, "invalid_request")
      assert.strictEqual(
        (yield* refusal(accounts.createKey({ ...call, name: "k", permissions: ["voices:admin"] }))).reason,
        "invalid_request"
      )
    })))

  it.effect("recovery: a delayed link, a new passkey, every session ended; a sign-in or a cancel stops it", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const lost = yield* makeSoftAuthenticator
      const { session: old } = yield* signUp(lost, "fay@example.test")

      yield* accounts.requestRecovery({ email: "fay@example.test", clientAddress: "10.0.0.3" })
      yield* accounts.requestRecovery({ email: "nobody@example.test", clientAddress: "10.0.0.3" })
      assert.strictEqual((yield* (yield* MemoryOutbox).to("nobody@example.test")).length, 0)
      const pending = yield* accounts.pendingRecovery(old.token)
      assert.isDefined(pending)
      const token = yield* mailedToken("fay@example.test", "recover")
      const early = yield* refusal(accounts.beginRecovery({ token, ...RP }))
      assert.strictEqual(early.reason, "token_early")
      assert.strictEqual(early.not_before, pending!.usable_from)

      yield* TestClock.adjust(24 * HOUR)
      const found = yield* makeSoftAuthenticator
      const begun = yield* accounts.beginRecovery({ token, ...RP })
      assert.strictEqual((yield* refusal(accounts.beginRecovery({ token, ...RP }))).reason, "token_used")
      // A failed ceremony: retried with the fresh link, without waiting again.
      const wrong = yield* found.create(begun.options, "http://evil.test")
      assert.strictEqual((yield* refusal(accounts.finishRecovery({ flow: begun.flow, response: wrong, ...RP }))).reason, "verification_failed")
      const retry = yield* accounts.beginRecovery({ token: begun.link, ...RP })
      const recovered = yield* accounts.finishRecovery({ flow: retry.flow, response: yield* found.create(retry.options, ORIGIN), ...RP })
      assert.isUndefined(yield* accounts.session(old.token))
      assert.isDefined(yield* accounts.session(recovered.session.token))
      assert.strictEqual((yield* accounts.listPasskeys(recovered.session.token)).length, 2)
      assert.strictEqual((yield* signIn(found)).person.email, "fay@example.test")
      assert.strictEqual((yield* refusal(accounts.beginRecovery({ token: retry.link, ...RP }))).reason, "token_used")

      // Someone else asks; the owner signs in: the link is dead.
      yield* accounts.requestRecovery({ email: "fay@example.test", clientAddress: "10.0.0.3" })
      const second = yield* mailedToken("fay@example.test", "recover")
      const { session } = yield* signIn(found)
      assert.isUndefined(yield* accounts.pendingRecovery(session.token))
      yield* TestClock.adjust(24 * HOUR)
      assert.strictEqual((yield* refusal(accounts.beginRecovery({ token: second, ...RP }))).reason, "token_used")

      // Or cancels it from a signed-in page.
      yield* accounts.requestRecovery({ email: "fay@example.test", clientAddress: "10.0.0.4" })
      const third = yield* mailedToken("fay@example.test", "recover")
      assert.strictEqual((yield* refusal(accounts.cancelRecovery({ session: session.token, csrf: "x" }))).reason, "csrf_mismatch")
      yield* accounts.cancelRecovery({ session: session.token, csrf: session.csrf })
      yield* TestClock.adjust(24 * HOUR)
      assert.strictEqual((yield* refusal(accounts.beginRecovery({ token: third, ...RP }))).reason, "token_used")
    })))

  it.effect("rate limits per address and per email, with the seconds to wait", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      for (let i = 0; i < 60; i++) yield* accounts.beginSignIn({ clientAddress: "10.9.9.9", ...RP })
      const limited = yield* refusal(accounts.beginSignIn({ clientAddress: "10.9.9.9", ...RP }))
      assert.strictEqual(limited.reason, "rate_limited")
      assert.isTrue(limited.retry_after_seconds! > 0 && limited.retry_after_seconds! <= 600)
      yield* accounts.beginSignIn({ clientAddress: "10.9.9.8", ...RP })

      for (let i = 0; i < 3; i++) yield* accounts.requestRecovery({ email: "gus@example.test", clientAddress: `10.1.1.${i}` })
      assert.strictEqual(
        (yield* refusal(accounts.requestRecovery({ email: "gus@example.test", clientAddress: "10.1.1.9" }))).reason,
        "rate_limited"
      )
    })))

  it.effect("sign-ins with one person's passkey are limited per person, from any address", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const auth = yield* makeSoftAuthenticator
      yield* signUp(auth, "ida@example.test")
      const attempt = (i: number) =>
        Effect.gen(function*() {
          const begun = yield* accounts.beginSignIn({ clientAddress: `10.2.${i >> 8}.${i & 255}`, ...RP })
          // A lowered counter fails verification: a stranger's guesses, each from a new address.
          return yield* Effect.exit(accounts.finishSignIn({ flow: begun.flow, response: yield* auth.get(begun.options, ORIGIN, { counter: 0 }), ...RP }))
        })
      for (let i = 0; i < 30; i++) yield* attempt(i)
      const limited = yield* refusal(
        Effect.flatMap(accounts.beginSignIn({ clientAddress: "10.3.0.1", ...RP }), (begun) =>
          Effect.flatMap(auth.get(begun.options, ORIGIN), (response) => accounts.finishSignIn({ flow: begun.flow, response, ...RP })))
      )
      assert.strictEqual(limited.reason, "rate_limited")
      // The window passes; the person signs in.
      yield* TestClock.adjust(10 * 60_000)
      assert.strictEqual((yield* signIn(auth)).person.email, "ida@example.test")
    })))

  it.effect("mail failures: nothing usable is kept", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const auth = yield* makeSoftAuthenticator
      yield* (yield* MemoryOutbox).failNext(1, { _tag: "unavailable" })
      const begun = yield* accounts.beginSignUp({ email: "hal@example.test", clientAddress: "10.0.0.1", ...RP })
      const response = yield* auth.create(begun.options, ORIGIN)
      assert.strictEqual((yield* refusal(accounts.finishSignUp({ flow: begun.flow, response, ...RP }))).reason, "email_unavailable")
      yield* (yield* MemoryOutbox).failNext(1, { _tag: "refused" })
      const again = yield* accounts.beginSignUp({ email: "hal@example.test", clientAddress: "10.0.0.1", ...RP })
      const second = yield* auth.create(again.options, ORIGIN)
      assert.strictEqual((yield* refusal(accounts.finishSignUp({ flow: again.flow, response: second, ...RP }))).reason, "invalid_email")
    })))

  it.effect("identity: a network refusal is kept as failed; no answer stays provisioning until the network answers", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const network = yield* SimulatedNetwork
      yield* network.refuseNext(1, "wallet quota reached")
      const refused = yield* signUp(yield* makeSoftAuthenticator, "ida@example.test")
      const failed = yield* accounts.identityOf(refused.person.account_id!)
      assert.deepStrictEqual([failed.state, failed.error, failed.did, failed.can_send], ["failed", "wallet quota reached", null, false])

      yield* network.unavailableNext(2)
      const waiting = yield* signUp(yield* makeSoftAuthenticator, "jo@example.test")
      assert.strictEqual((yield* accounts.identityOf(waiting.person.account_id!)).state, "provisioning")
      const ready = yield* accounts.identityOf(waiting.person.account_id!)
      assert.strictEqual(ready.state, "ready")
      assert.isNotNull(ready.wallet_address)
      // A shell without the account service answers from the store alone: the same identity.
      const people = yield* PeopleStore
      assert.deepStrictEqual(yield* storedIdentity(people, waiting.person.account_id!, `${ORIGIN}`), ready)
      assert.deepStrictEqual(yield* storedIdentity(people, refused.person.account_id!, `${ORIGIN}`), failed)
    })))

  it.effect("the first-start owner's address cannot be signed up with: a stranger's passkey never reaches the owner's account", () =>
    run(Effect.gen(function*() {
      const accounts = yield* AccountService
      const owner = (yield* ensureOwner("Owner@Example.test"))!
      const identity = yield* accounts.identityOf(owner.account.id)
      assert.deepStrictEqual([identity.state, identity.did, identity.passkeys], ["provisioning", null, 0])
      const refused = yield* refusal(accounts.beginSignUp({ email: "owner@example.test", clientAddress: "203.0.113.9", ...RP }))
      assert.strictEqual(refused.reason, "email_taken")
      assert.match(refused.message, /owner/)
      assert.lengthOf(yield* (yield* MemoryOutbox).to("owner@example.test"), 0)
      assert.strictEqual((yield* accounts.identityOf(owner.account.id)).passkeys, 0)
    })))
})
