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
import { PeopleStore, PERSON_ID_KIND, type PersonRecord } from "@model-platform/core/accounts"
import { generateId } from "@model-platform/core/kernel"
import { Effect, type Layer } from "effect"
import { assertDies } from "./ContractSupport.ts"
import {
  unbounded,
  MINUTE,
  at,
  freshPerson,
  freshPasskey,
  insertedPerson,
  freshSession,
  freshToken,
  byCredential
} from "./PeopleContractSupport.ts"
import { passkeyTests } from "./PeoplePasskeysContract.ts"
import { sessionTests } from "./PeopleSessionsContract.ts"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

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

}

/** Declares the people store contract on `storeLayer` (built once for the suite). */
export const peopleStoreContract = <E>(name: string, storeLayer: Layer.Layer<PeopleStore, E>): void =>
  layer(storeLayer, layerOptions)(name, (it) => {
    peopleTests(it)
    passkeyTests(it)
    sessionTests(it)
  })

/** Exported for adapter-specific tests. */
export const PeopleFixtures = { at, freshPerson, freshPasskey, freshSession, freshToken, insertedPerson, byCredential }
