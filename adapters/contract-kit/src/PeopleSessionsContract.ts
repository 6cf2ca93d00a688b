/**
 * The people store contract (PeopleContract.ts): sessions, one-time tokens and the accounts'
 * identities, each answered until it expires or is used, then never again.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { PeopleStore, PERSON_ID_KIND, type TokenPurpose } from "@model-platform/core/accounts"
import { generateId } from "@model-platform/core/kernel"
import { Effect } from "effect"
import { assertDies } from "./ContractSupport.ts"
import fc from "fast-check"
import {
  unbounded,
  MINUTE,
  at,
  insertedPerson,
  freshSession,
  freshToken
} from "./PeopleContractSupport.ts"

export const sessionTests = (it: Vitest.MethodsNonLive<PeopleStore>) => {
  describe("sessions", () => {
    it.effect("a session is answered until it expires, then never again", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { person } = yield* insertedPerson()
        const session = yield* freshSession(person.id)
        yield* store.createSession(session)
        assert.deepStrictEqual(yield* store.getSession(session.token_hash, at()), session)
        assert.deepStrictEqual(yield* store.getSession(session.token_hash, at(60 * MINUTE - 1)), session)
        assert.isUndefined(yield* store.getSession(session.token_hash, at(60 * MINUTE)))
        assert.isUndefined(yield* store.getSession(session.token_hash, at(61 * MINUTE)))
        assert.isUndefined(yield* store.getSession(`${session.token_hash}0`, at()))
        // Already expired when created: never answered.
        const expired = yield* freshSession(person.id, { expires_at: at(-1) })
        yield* store.createSession(expired)
        assert.isUndefined(yield* store.getSession(expired.token_hash, at()))
      }))

    it.effect("a duplicate token hash is a defect", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const session = yield* freshSession("per_x")
        yield* store.createSession(session)
        yield* assertDies(store.createSession({ ...session, person_id: "per_y" }), "duplicate session")
        assert.deepStrictEqual(yield* store.getSession(session.token_hash, at()), session)
      }))

    it.effect("deleteSession signs one session out; deleting an unknown one does nothing", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { person } = yield* insertedPerson()
        const a = yield* freshSession(person.id)
        const b = yield* freshSession(person.id)
        yield* store.createSession(a)
        yield* store.createSession(b)
        yield* store.deleteSession(a.token_hash)
        yield* store.deleteSession(a.token_hash)
        yield* store.deleteSession(`${a.token_hash}0`)
        assert.isUndefined(yield* store.getSession(a.token_hash, at()))
        assert.deepStrictEqual(yield* store.getSession(b.token_hash, at()), b)
      }))

    it.effect("deletePersonSessions deletes every session of the person, none of another", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { person } = yield* insertedPerson()
        const other = yield* insertedPerson()
        const mine = yield* Effect.forEach(Array.from({ length: 30 }), () => freshSession(person.id))
        const theirs = yield* freshSession(other.person.id)
        yield* Effect.all([...mine, theirs].map((s) => store.createSession(s)), unbounded)
        assert.strictEqual(yield* store.deletePersonSessions(person.id), 30)
        for (const s of mine) assert.isUndefined(yield* store.getSession(s.token_hash, at()))
        assert.deepStrictEqual(yield* store.getSession(theirs.token_hash, at()), theirs)
        assert.strictEqual(yield* store.deletePersonSessions(person.id), 0)
        // The person can sign in again.
        const again = yield* freshSession(person.id)
        yield* store.createSession(again)
        assert.deepStrictEqual(yield* store.getSession(again.token_hash, at()), again)
      }))
  })

  describe("one-time tokens", () => {
    it.effect("a token is consumed once, for its purpose, and answered with used_at set", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const token = yield* freshToken("webauthn_challenge", { data: "c2lnbi1pbi1jaGFsbGVuZ2U", subject: "" })
        yield* store.issueToken(token)
        assert.deepStrictEqual(
          yield* store.consumeToken(token.token_hash, "confirm_email", at(1000)),
          { _tag: "Refused", reason: "unknown" }
        )
        assert.deepStrictEqual(
          yield* store.consumeToken(token.token_hash, "webauthn_challenge", at(1000)),
          { _tag: "Consumed", token: { ...token, used_at: at(1000) } }
        )
        assert.deepStrictEqual(
          yield* store.consumeToken(token.token_hash, "webauthn_challenge", at(2000)),
          { _tag: "Refused", reason: "used" }
        )
        assert.deepStrictEqual(
          yield* store.consumeToken(`${token.token_hash}0`, "webauthn_challenge", at(1000)),
          { _tag: "Refused", reason: "unknown" }
        )
      }))

    it.effect("expiry and not_before, with the time passed in", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const recover = yield* freshToken("recover", { not_before: at(10 * MINUTE), expires_at: at(40 * MINUTE) })
        yield* store.issueToken(recover)
        assert.deepStrictEqual(
          yield* store.consumeToken(recover.token_hash, "recover", at(10 * MINUTE - 1)),
          { _tag: "Early", not_before: at(10 * MINUTE) }
        )
        assert.deepStrictEqual(
          yield* store.consumeToken(recover.token_hash, "recover", at(10 * MINUTE)),
          { _tag: "Consumed", token: { ...recover, used_at: at(10 * MINUTE) } }
        )
        const confirm = yield* freshToken("confirm_email", { subject: "zoë@exämple.test" })
        yield* store.issueToken(confirm)
        assert.deepStrictEqual(
          yield* store.consumeToken(confirm.token_hash, "confirm_email", at(30 * MINUTE)),
          { _tag: "Refused", reason: "expired" }
        )
        assert.deepStrictEqual(
          yield* store.consumeToken(confirm.token_hash, "confirm_email", at(30 * MINUTE - 1)),
          { _tag: "Consumed", token: { ...confirm, used_at: at(30 * MINUTE - 1) } }
        )
      }))

    it.effect("a duplicate token hash is a defect", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const token = yield* freshToken("confirm_email")
        yield* store.issueToken(token)
        yield* assertDies(store.issueToken({ ...token, purpose: "recover" }), "duplicate token")
        assert.strictEqual((yield* store.consumeToken(token.token_hash, "confirm_email", at()))._tag, "Consumed")
      }))

    it.effect("concurrent consumptions of one token: exactly one wins", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const tokens = yield* Effect.forEach(Array.from({ length: 3 }), () => freshToken("recover"))
        yield* Effect.forEach(tokens, (t) => store.issueToken(t))
        const attempts = tokens.flatMap((t) => Array.from({ length: 10 }, (_, i) => ({ t, i })))
        const results = yield* Effect.all(
          attempts.map(({ i, t }) => Effect.map(store.consumeToken(t.token_hash, "recover", at(i)), (r) => ({ t, r }))),
          unbounded
        )
        for (const token of tokens) {
          const mine = results.filter((x) => x.t === token).map((x) => x.r)
          const won = mine.filter((r) => r._tag === "Consumed")
          assert.strictEqual(won.length, 1, token.token_hash)
          assert.isTrue(mine.every((r) => r._tag === "Consumed" || (r._tag === "Refused" && r.reason === "used")))
        }
      }))

    it.effect("listTokens: a subject's outstanding tokens of one purpose, oldest first", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const subject = yield* generateId(PERSON_ID_KIND)
        const later = yield* freshToken("recover", { subject, created_at: at(2000), not_before: at(10 * MINUTE) })
        const first = yield* freshToken("recover", { subject, created_at: at(1000) })
        const used = yield* freshToken("recover", { subject, created_at: at(1500) })
        const expired = yield* freshToken("recover", { subject, created_at: at(500), expires_at: at(5000) })
        const otherPurpose = yield* freshToken("confirm_email", { subject })
        const otherSubject = yield* freshToken("recover", { subject: `${subject}x` })
        const nobody = yield* freshToken("recover", { subject: "" })
        for (const t of [later, first, used, expired, otherPurpose, otherSubject, nobody]) yield* store.issueToken(t)
        assert.strictEqual((yield* store.consumeToken(used.token_hash, "recover", at(3000)))._tag, "Consumed")
        assert.deepStrictEqual(yield* store.listTokens(subject, "recover", at(4000)), [expired, first, later])
        assert.deepStrictEqual(yield* store.listTokens(subject, "recover", at(5000)), [first, later])
        assert.deepStrictEqual(yield* store.listTokens(subject, "confirm_email", at(5000)), [otherPurpose])
        assert.deepStrictEqual(yield* store.listTokens(`${subject}y`, "recover", at(5000)), [])
        assert.deepStrictEqual(yield* store.listTokens("", "recover", at(5000)), [])
      }))

    it.effect("revokeTokens: a subject's outstanding tokens of one purpose are used up, no other", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const subject = `zoë@exämple.test#${yield* generateId("e")}`
        const a = yield* freshToken("recover", { subject, not_before: at(10 * MINUTE) })
        const b = yield* freshToken("recover", { subject, created_at: at(1000) })
        const expired = yield* freshToken("recover", { subject, expires_at: at(2000) })
        const otherPurpose = yield* freshToken("confirm_email", { subject })
        const otherSubject = yield* freshToken("recover", { subject: `${subject}x` })
        const nobody = yield* freshToken("recover", { subject: "" })
        for (const t of [a, b, expired, otherPurpose, otherSubject, nobody]) yield* store.issueToken(t)
        assert.strictEqual(yield* store.revokeTokens("", "recover", at(3000)), 0)
        assert.strictEqual(yield* store.revokeTokens(subject, "recover", at(3000)), 2)
        assert.strictEqual(yield* store.revokeTokens(subject, "recover", at(4000)), 0)
        assert.deepStrictEqual(yield* store.listTokens(subject, "recover", at(4000)), [])
        for (const t of [a, b]) {
          assert.deepStrictEqual(yield* store.consumeToken(t.token_hash, "recover", at(11 * MINUTE)), {
            _tag: "Refused",
            reason: "used"
          })
        }
        assert.deepStrictEqual(
          yield* store.consumeToken(expired.token_hash, "recover", at(1000)),
          { _tag: "Consumed", token: { ...expired, used_at: at(1000) } }
        )
        for (const t of [otherPurpose, otherSubject, nobody]) {
          assert.strictEqual((yield* store.consumeToken(t.token_hash, t.purpose, at(5000)))._tag, "Consumed")
        }
      }))

    it.effect("revocations racing consumptions: each token is taken by exactly one of them", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const subject = yield* generateId(PERSON_ID_KIND)
        const tokens = yield* Effect.forEach(Array.from({ length: 12 }), (_, i) =>
          freshToken("recover", { subject, created_at: at(i) }))
        yield* Effect.forEach(tokens, (t) => store.issueToken(t))
        const [revocations, consumptions] = yield* Effect.all([
          Effect.all(Array.from({ length: 3 }, () => store.revokeTokens(subject, "recover", at(MINUTE))), unbounded),
          Effect.all(tokens.map((t) => store.consumeToken(t.token_hash, "recover", at(MINUTE))), unbounded)
        ], unbounded)
        const consumed = consumptions.filter((r) => r._tag === "Consumed").length
        const revoked = revocations.reduce((sum, n) => sum + n, 0)
        assert.strictEqual(consumed + revoked, tokens.length)
        assert.isTrue(consumptions.every((r) => r._tag === "Consumed" || (r._tag === "Refused" && r.reason === "used")))
      }))

    it.effect("property: any interleaving of consumptions at any times agrees with a model", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<PeopleStore>()
        const run = Effect.runPromiseWith(services)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.record({ notBefore: fc.nat({ max: 4 }), life: fc.integer({ min: 1, max: 6 }) }),
              fc.array(fc.record({ t: fc.nat({ max: 10 }), purpose: fc.constantFrom<TokenPurpose>("recover", "confirm_email") }), {
                minLength: 1,
                maxLength: 8
              }),
              fc.scheduler(),
              ({ life, notBefore }, consumptions, s) =>
                run(Effect.gen(function*() {
                  const store = yield* PeopleStore
                  const token = yield* freshToken("recover", {
                    not_before: at(notBefore * 1000),
                    expires_at: at((notBefore + life) * 1000)
                  })
                  yield* store.issueToken(token)
                  const results = yield* Effect.promise(() =>
                    Promise.all([
                      ...consumptions.map((c) =>
                        s.schedule(Promise.resolve(c)).then((c) => run(store.consumeToken(token.token_hash, c.purpose, at(c.t * 1000))))
                      ),
                      s.waitAll().then(() => undefined)
                    ])
                  )
                  const answered = results.slice(0, consumptions.length) as ReadonlyArray<
                    Effect.Success<ReturnType<typeof store.consumeToken>>
                  >
                  const usable = consumptions.map((c) => c.purpose === "recover" && c.t >= notBefore && c.t < notBefore + life)
                  const won = answered.filter((r) => r._tag === "Consumed").length
                  assert.strictEqual(won, usable.some(Boolean) ? 1 : 0)
                  answered.forEach((r, i) => {
                    const c = consumptions[i]!
                    if (c.purpose !== "recover") assert.deepStrictEqual(r, { _tag: "Refused", reason: "unknown" })
                    else if (!usable[i] && r._tag !== "Refused") assert.strictEqual(r._tag, "Early")
                    if (r._tag === "Consumed") assert.isTrue(usable[i])
                  })
                }))
            ),
            { numRuns: 20 }
          )
        )
      }), 120_000)
  })

  describe("identities", () => {
    it.effect("saveIdentity keeps an account's identity, replaced whole by the next save; unknown is undefined", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const accountId = yield* generateId("acct")
        const personId = yield* generateId(PERSON_ID_KIND)
        assert.isUndefined(yield* store.getIdentity(accountId))
        const provisioning = {
          account_id: accountId,
          person_id: personId,
          state: "provisioning" as const,
          did: null,
          wallet_address: null,
          error: null,
          updated_at: at()
        }
        yield* store.saveIdentity(provisioning)
        assert.deepStrictEqual(yield* store.getIdentity(accountId), provisioning)
        const ready = {
          ...provisioning,
          state: "ready" as const,
          did: `did:svc:human:${accountId}`,
          wallet_address: "0x00112233445566778899aabbccddeeff00112233",
          updated_at: at(MINUTE)
        }
        yield* store.saveIdentity(ready)
        assert.deepStrictEqual(yield* store.getIdentity(accountId), ready)
        const failed = { ...provisioning, state: "failed" as const, error: "refused: \"quota\" ünïcode", updated_at: at(2 * MINUTE) }
        yield* store.saveIdentity(failed)
        assert.deepStrictEqual(yield* store.getIdentity(accountId), failed)
        assert.isUndefined(yield* store.getIdentity(yield* generateId("acct")))
      }))
  })
}
