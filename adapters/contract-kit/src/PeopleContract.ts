/**
 * The contract suite of the people store port (core/src/accounts/PeopleStore.ts). Every
 * implementation runs it against its own layer: `peopleStoreContract("memory", PeopleStoreMemory)`.
 *
 * Tests work on fresh random ids, emails, credential ids and token hashes, and never assume an
 * empty store. Time is passed in: instants are offsets from the suite's start (a store may drop
 * items long expired, so none is written expired by much). Strings are NUL-free, as the boundary
 * guarantees (core/src/kernel/Text.ts); other characters travel as they are.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import {
  hashToken,
  type OneTimeTokenRecord,
  type PasskeyRecord,
  PeopleStore,
  PERSON_ID_KIND,
  type PersonRecord,
  type SessionRecord,
  type TokenPurpose
} from "@model-platform/core/accounts"
import { generateId, type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import { Effect, type Layer } from "effect"
import fc from "fast-check"
import { assertDies } from "./ContractSupport.ts"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

const unbounded = { concurrency: "unbounded" } as const

const MINUTE = 60_000
/** The suite's "now", on a whole second; every instant is an offset from it. */
const T0 = Math.floor(Date.now() / 1000) * 1000
const at = (offsetMs = 0): Timestamp => toTimestamp(T0 + offsetMs)


// ---------------------------------------------------------------------------------------------
// fresh records

const freshPerson = (overrides: Partial<PersonRecord> = {}) =>
  Effect.gen(function*() {
    const id = yield* generateId(PERSON_ID_KIND)
    const person: PersonRecord = {
      id,
      email: `${id.toLowerCase()}@example.test`,
      email_confirmed_at: null,
      account_id: null,
      created_at: at(),
      ...overrides
    }
    return person
  })

const freshPasskey = (personId: string, overrides: Partial<PasskeyRecord> = {}) =>
  Effect.map(generateId("cred"), (id): PasskeyRecord => ({
    credential_id: id.slice(5),
    person_id: personId,
    public_key: `pQECAyYgASFYI${id.slice(5)}`,
    counter: 0,
    transports: ["internal", "hybrid"],
    name: "Phone",
    created_at: at(),
    last_used_at: null,
    ...overrides
  }))

/** A person with their first passkey, inserted. */
const insertedPerson = (overrides: Partial<PersonRecord> = {}) =>
  Effect.gen(function*() {
    const store = yield* PeopleStore
    const person = yield* freshPerson(overrides)
    const passkey = yield* freshPasskey(person.id)
    assert.deepStrictEqual(yield* store.insertPerson(person, passkey), { _tag: "Inserted" })
    return { person, passkey }
  })

const freshHash = Effect.map(generateId("tok"), hashToken)

const freshSession = (personId: string, overrides: Partial<SessionRecord> = {}) =>
  Effect.gen(function*() {
    const session: SessionRecord = {
      token_hash: yield* freshHash,
      person_id: personId,
      csrf_hash: yield* freshHash,
      created_at: at(),
      expires_at: at(60 * MINUTE),
      ...overrides
    }
    return session
  })

const freshToken = (purpose: TokenPurpose, overrides: Partial<OneTimeTokenRecord> = {}) =>
  Effect.gen(function*() {
    const token: OneTimeTokenRecord = {
      token_hash: yield* freshHash,
      purpose,
      subject: yield* generateId(PERSON_ID_KIND),
      data: "",
      created_at: at(),
      not_before: at(),
      expires_at: at(30 * MINUTE),
      used_at: null,
      ...overrides
    }
    return token
  })

const byCredential = (a: PasskeyRecord, b: PasskeyRecord) => (a.credential_id < b.credential_id ? -1 : 1)

// ---------------------------------------------------------------------------------------------

const peopleTests = (it: Vitest.MethodsNonLive<PeopleStore>) => {
  describe("people", () => {
    it.effect("a person is inserted with their first passkey, found by id and by email", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey, person } = yield* insertedPerson()
        assert.deepStrictEqual(yield* store.getPerson(person.id), person)
        assert.deepStrictEqual(yield* store.findPersonByEmail(person.email), person)
        assert.deepStrictEqual(yield* store.listPasskeys(person.id), [passkey])
        assert.deepStrictEqual(yield* store.findPasskey(passkey.credential_id), passkey)
        assert.isUndefined(yield* store.getPerson(`${person.id}x`))
        assert.isUndefined(yield* store.findPersonByEmail(`x${person.email}`))
        // Lookups are exact: normalising is the caller's (Records.normaliseEmail).
        assert.isUndefined(yield* store.findPersonByEmail(person.email.toUpperCase()))
      }))

    it.effect("an email already taken: EmailTaken, and nothing of the second person is kept", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { person } = yield* insertedPerson()
        const other = yield* freshPerson({ email: person.email })
        const passkey = yield* freshPasskey(other.id)
        assert.deepStrictEqual(yield* store.insertPerson(other, passkey), { _tag: "EmailTaken" })
        assert.isUndefined(yield* store.getPerson(other.id))
        assert.isUndefined(yield* store.findPasskey(passkey.credential_id))
        assert.deepStrictEqual(yield* store.findPersonByEmail(person.email), person)
        // The credential is still free.
        const third = yield* freshPerson()
        assert.deepStrictEqual(yield* store.insertPerson(third, { ...passkey, person_id: third.id }), { _tag: "Inserted" })
      }))

    it.effect("a credential id already registered: CredentialTaken, and the person is not kept", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey } = yield* insertedPerson()
        const other = yield* freshPerson()
        assert.deepStrictEqual(
          yield* store.insertPerson(other, { ...passkey, person_id: other.id }),
          { _tag: "CredentialTaken" }
        )
        assert.isUndefined(yield* store.getPerson(other.id))
        assert.isUndefined(yield* store.findPersonByEmail(other.email))
        assert.deepStrictEqual(yield* store.insertPerson(other, yield* freshPasskey(other.id)), { _tag: "Inserted" })
      }))

    it.effect("concurrent sign-ups with one email: exactly one is inserted", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const email = `${yield* generateId("e")}@example.test`.toLowerCase()
        const attempts = yield* Effect.forEach(Array.from({ length: 8 }), () =>
          Effect.gen(function*() {
            const person = yield* freshPerson({ email })
            return { person, passkey: yield* freshPasskey(person.id) }
          }))
        const results = yield* Effect.all(attempts.map((a) => store.insertPerson(a.person, a.passkey)), unbounded)
        assert.strictEqual(results.filter((r) => r._tag === "Inserted").length, 1)
        assert.strictEqual(results.filter((r) => r._tag === "EmailTaken").length, 7)
        const winner = attempts[results.findIndex((r) => r._tag === "Inserted")]!
        assert.deepStrictEqual(yield* store.findPersonByEmail(email), winner.person)
        for (const attempt of attempts) {
          const kept = attempt === winner
          assert.strictEqual((yield* store.findPasskey(attempt.passkey.credential_id)) !== undefined, kept)
        }
      }))

    it.effect("a duplicate person id, a first passkey of another person, an email not normalised: defects", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { person } = yield* insertedPerson()
        const again = { ...person, email: `again-${person.email}` }
        yield* assertDies(store.insertPerson(again, yield* freshPasskey(person.id)), "duplicate id")
        const other = yield* freshPerson()
        yield* assertDies(store.insertPerson(other, yield* freshPasskey(person.id)), "passkey of another person")
        assert.isUndefined(yield* store.getPerson(other.id))
        const shouting = { ...other, email: other.email.toUpperCase() }
        yield* assertDies(store.insertPerson(shouting, yield* freshPasskey(other.id)), "an email not normalised")
        yield* assertDies(store.insertPerson({ ...other, email: ` ${other.email}` }, yield* freshPasskey(other.id)), "untrimmed")
        assert.isUndefined(yield* store.getPerson(other.id))
      }))

    it.effect("confirmEmail sets email_confirmed_at once; unknown people are undefined", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { person } = yield* insertedPerson()
        const confirmed = { ...person, email_confirmed_at: at(MINUTE) }
        assert.deepStrictEqual(yield* store.confirmEmail(person.id, at(MINUTE)), confirmed)
        assert.deepStrictEqual(yield* store.confirmEmail(person.id, at(2 * MINUTE)), confirmed)
        assert.deepStrictEqual(yield* store.getPerson(person.id), confirmed)
        assert.deepStrictEqual(yield* store.findPersonByEmail(person.email), confirmed)
        assert.isUndefined(yield* store.confirmEmail(`${person.id}x`, at()))
      }))

    it.effect("linkAccount sets account_id once, also when two links race", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { person } = yield* insertedPerson()
        const accounts = ["acct_a", "acct_b", "acct_c", "acct_d"]
        const results = yield* Effect.all(accounts.map((a) => store.linkAccount(person.id, a)), unbounded)
        const linked = results[0]?.account_id
        assert.isTrue(linked !== null && linked !== undefined && accounts.includes(linked))
        for (const result of results) assert.deepStrictEqual(result, { ...person, account_id: linked! })
        assert.deepStrictEqual(yield* store.linkAccount(person.id, "acct_e"), { ...person, account_id: linked! })
        assert.deepStrictEqual(yield* store.getPerson(person.id), { ...person, account_id: linked! })
        assert.isUndefined(yield* store.linkAccount(`${person.id}x`, "acct_f"))
      }))

    it.effect("text travels as it is: unicode, quotes, separators", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const id = yield* generateId(PERSON_ID_KIND)
        const person: PersonRecord = {
          id,
          email: `zoë.o'brien+"#1"#${id.toLowerCase()}@exämple.test`,
          email_confirmed_at: null,
          account_id: null,
          created_at: at()
        }
        const passkey = yield* freshPasskey(id, { name: "Zoë's 📱 \"work\" #PASSKEY#1\n\ttab", transports: [] })
        assert.deepStrictEqual(yield* store.insertPerson(person, passkey), { _tag: "Inserted" })
        assert.deepStrictEqual(yield* store.findPersonByEmail(person.email), person)
        assert.deepStrictEqual(yield* store.listPasskeys(id), [passkey])
      }))
  })

  describe("passkeys", () => {
    it.effect("added passkeys are listed oldest first and found by credential id", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey: first, person } = yield* insertedPerson()
        const third = yield* freshPasskey(person.id, { created_at: at(2 * MINUTE), name: "Laptop", transports: ["usb"] })
        const second = yield* freshPasskey(person.id, { created_at: at(MINUTE), counter: 7, last_used_at: at(MINUTE) })
        assert.deepStrictEqual(yield* store.addPasskey(third), { _tag: "Added" })
        assert.deepStrictEqual(yield* store.addPasskey(second), { _tag: "Added" })
        assert.deepStrictEqual(yield* store.listPasskeys(person.id), [first, second, third])
        assert.deepStrictEqual(yield* store.findPasskey(second.credential_id), second)
        assert.deepStrictEqual(yield* store.listPasskeys(`${person.id}x`), [])
        assert.isUndefined(yield* store.findPasskey(`${second.credential_id}x`))
      }))

    it.effect("a credential id is registered once, across people; an unknown person gets none", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const a = yield* insertedPerson()
        const b = yield* insertedPerson()
        assert.deepStrictEqual(
          yield* store.addPasskey({ ...a.passkey, person_id: b.person.id }),
          { _tag: "CredentialTaken" }
        )
        assert.deepStrictEqual(yield* store.addPasskey({ ...a.passkey }), { _tag: "CredentialTaken" })
        const orphan = yield* freshPasskey(`${a.person.id}x`)
        assert.deepStrictEqual(yield* store.addPasskey(orphan), { _tag: "UnknownPerson" })
        assert.isUndefined(yield* store.findPasskey(orphan.credential_id))
        assert.deepStrictEqual(yield* store.listPasskeys(b.person.id), [b.passkey])
      }))

    it.effect("concurrent adds of one credential to two people: exactly one is added", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const a = yield* insertedPerson()
        const b = yield* insertedPerson()
        const passkey = yield* freshPasskey(a.person.id)
        const results = yield* Effect.all(
          [store.addPasskey(passkey), store.addPasskey({ ...passkey, person_id: b.person.id })],
          unbounded
        )
        assert.deepStrictEqual(results.map((r) => r._tag).sort(), ["Added", "CredentialTaken"])
        const owner = results[0]!._tag === "Added" ? a.person.id : b.person.id
        assert.strictEqual((yield* store.findPasskey(passkey.credential_id))?.person_id, owner)
      }))

    it.effect("recordPasskeyUse moves counter and last_used_at forward only", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey } = yield* insertedPerson()
        const id = passkey.credential_id
        assert.deepStrictEqual(
          yield* store.recordPasskeyUse(id, 5, at(MINUTE)),
          { ...passkey, counter: 5, last_used_at: at(MINUTE) }
        )
        // An older sign-in recorded late keeps the later values.
        assert.deepStrictEqual(
          yield* store.recordPasskeyUse(id, 3, at(30_000)),
          { ...passkey, counter: 5, last_used_at: at(MINUTE) }
        )
        assert.deepStrictEqual(
          yield* store.recordPasskeyUse(id, 0xffff_ffff, at(2 * MINUTE)),
          { ...passkey, counter: 0xffff_ffff, last_used_at: at(2 * MINUTE) }
        )
        assert.deepStrictEqual(
          yield* store.findPasskey(id),
          { ...passkey, counter: 0xffff_ffff, last_used_at: at(2 * MINUTE) }
        )
        assert.isUndefined(yield* store.recordPasskeyUse(`${id}x`, 1, at()))
      }))

    it.effect("a counter that is not an unsigned 32-bit integer is a defect", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey, person } = yield* insertedPerson()
        for (const counter of [-1, 1.5, 2 ** 32, Number.NaN]) {
          yield* assertDies(store.recordPasskeyUse(passkey.credential_id, counter, at()), `use with ${counter}`)
          yield* assertDies(store.addPasskey(yield* freshPasskey(person.id, { counter })), `add with ${counter}`)
        }
        yield* assertDies(store.addPasskey(yield* freshPasskey(person.id, { credential_id: "" })), "empty credential id")
        assert.deepStrictEqual(yield* store.listPasskeys(person.id), [passkey])
      }))

    it.effect("concurrent uses keep the greatest counter and the latest time", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey } = yield* insertedPerson()
        const uses = Array.from({ length: 12 }, (_, i) => ({ counter: (i * 7) % 12, at: at(((i * 5) % 12) * 1000) }))
        yield* Effect.all(uses.map((u) => store.recordPasskeyUse(passkey.credential_id, u.counter, u.at)), unbounded)
        const found = yield* store.findPasskey(passkey.credential_id)
        assert.strictEqual(found?.counter, 11)
        assert.strictEqual(found?.last_used_at, at(11_000))
      }))

    it.effect("removePasskey removes one of several, refuses the last, finds none of another person", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey: first, person } = yield* insertedPerson()
        const second = yield* freshPasskey(person.id, { created_at: at(MINUTE) })
        assert.deepStrictEqual(yield* store.addPasskey(second), { _tag: "Added" })
        const other = yield* insertedPerson()
        assert.deepStrictEqual(yield* store.removePasskey(other.person.id, first.credential_id), { _tag: "NotFound" })
        assert.deepStrictEqual(yield* store.removePasskey(person.id, `${first.credential_id}x`), { _tag: "NotFound" })
        assert.deepStrictEqual(yield* store.removePasskey(person.id, first.credential_id), { _tag: "Removed" })
        assert.deepStrictEqual(yield* store.removePasskey(person.id, first.credential_id), { _tag: "NotFound" })
        assert.isUndefined(yield* store.findPasskey(first.credential_id))
        assert.deepStrictEqual(yield* store.removePasskey(person.id, second.credential_id), { _tag: "LastPasskey" })
        assert.deepStrictEqual(yield* store.listPasskeys(person.id), [second])
        // A removed credential id may be registered again.
        assert.deepStrictEqual(yield* store.addPasskey(first), { _tag: "Added" })
        assert.deepStrictEqual(yield* store.listPasskeys(person.id), [first, second])
      }))

    it.effect("removing every passkey at once leaves exactly one", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey, person } = yield* insertedPerson()
        const more = yield* Effect.forEach(Array.from({ length: 5 }), (_, i) =>
          freshPasskey(person.id, { created_at: at((i + 1) * 1000) }))
        for (const p of more) assert.deepStrictEqual(yield* store.addPasskey(p), { _tag: "Added" })
        const all = [passkey, ...more]
        const results = yield* Effect.all(all.map((p) => store.removePasskey(person.id, p.credential_id)), unbounded)
        assert.strictEqual(results.filter((r) => r._tag === "Removed").length, all.length - 1)
        assert.strictEqual(results.filter((r) => r._tag === "LastPasskey").length, 1)
        const left = yield* store.listPasskeys(person.id)
        assert.strictEqual(left.length, 1)
        assert.strictEqual(left[0]!.credential_id, all[results.findIndex((r) => r._tag === "LastPasskey")]!.credential_id)
      }))

    it.effect("property: adds and removals, sequential or concurrent, never leave a person without a passkey", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<PeopleStore>()
        const run = Effect.runPromiseWith(services)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.array(fc.oneof(fc.constant({ op: "add" as const, k: 0 }), fc.record({ op: fc.constant("remove" as const), k: fc.nat({ max: 5 }) })), {
                minLength: 1,
                maxLength: 12
              }),
              fc.boolean(),
              (ops, concurrent) =>
                run(Effect.gen(function*() {
                  const store = yield* PeopleStore
                  const { passkey, person } = yield* insertedPerson()
                  // Candidates for removal: the first passkey and those the adds will make.
                  const candidates = [passkey, ...yield* Effect.forEach(ops, () => freshPasskey(person.id))]
                  let next = 1
                  const steps = ops.map((o) => {
                    if (o.op === "add") {
                      const p = candidates[next++]!
                      return Effect.map(store.addPasskey(p), (r) => ({ o, p, r: r._tag as string }))
                    }
                    const p = candidates[Math.min(o.k, candidates.length - 1)]!
                    return Effect.map(store.removePasskey(person.id, p.credential_id), (r) => ({ o, p, r: r._tag as string }))
                  })
                  const results = yield* Effect.all(steps, concurrent ? unbounded : {})
                  const left = yield* store.listPasskeys(person.id)
                  assert.isAtLeast(left.length, 1)
                  const added = results.filter((x) => x.r === "Added").length
                  const removed = results.filter((x) => x.r === "Removed").length
                  assert.strictEqual(left.length, 1 + added - removed)
                  for (const x of results) assert.include(["Added", "Removed", "NotFound", "LastPasskey"], x.r)
                  if (!concurrent) {
                    // Sequentially, LastPasskey is answered exactly when the passkey was the only one.
                    const model = new Set([passkey.credential_id])
                    for (const x of results) {
                      if (x.o.op === "add") model.add(x.p.credential_id)
                      else if (!model.has(x.p.credential_id)) assert.strictEqual(x.r, "NotFound")
                      else if (model.size === 1) assert.strictEqual(x.r, "LastPasskey")
                      else {
                        assert.strictEqual(x.r, "Removed")
                        model.delete(x.p.credential_id)
                      }
                    }
                    assert.deepStrictEqual(left.map((p) => p.credential_id).sort(), [...model].sort())
                  }
                }))
            ),
            { numRuns: 15 }
          )
        )
      }), 120_000)
  })

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

/** Declares the people store contract on `storeLayer` (built once for the suite). */
export const peopleStoreContract = <E>(name: string, storeLayer: Layer.Layer<PeopleStore, E>): void =>
  layer(storeLayer, layerOptions)(name, peopleTests)

/** Exported for adapter-specific tests. */
export const PeopleFixtures = { at, freshPerson, freshPasskey, freshSession, freshToken, insertedPerson, byCredential }
