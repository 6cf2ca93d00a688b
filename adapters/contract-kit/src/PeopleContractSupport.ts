/**
 * What the people store contract's tests share (PeopleContract.ts and its parts): the suite's
 * "now", and people, passkeys, sessions and one-time tokens made with fresh ids, emails,
 * credential ids and token hashes.
 */
import { assert } from "@effect/vitest"
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
import { Effect } from "effect"

export const unbounded = { concurrency: "unbounded" } as const

export const MINUTE = 60_000
/** The suite's "now", on a whole second; every instant is an offset from it. */
const T0 = Math.floor(Date.now() / 1000) * 1000
export const at = (offsetMs = 0): Timestamp => toTimestamp(T0 + offsetMs)

// ---------------------------------------------------------------------------------------------
// fresh records

export const freshPerson = (overrides: Partial<PersonRecord> = {}) =>
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

export const freshPasskey = (personId: string, overrides: Partial<PasskeyRecord> = {}) =>
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
export const insertedPerson = (overrides: Partial<PersonRecord> = {}) =>
  Effect.gen(function*() {
    const store = yield* PeopleStore
    const person = yield* freshPerson(overrides)
    const passkey = yield* freshPasskey(person.id)
    assert.deepStrictEqual(yield* store.insertPerson(person, passkey), { _tag: "Inserted" })
    return { person, passkey }
  })

export const freshHash = Effect.map(generateId("tok"), hashToken)

export const freshSession = (personId: string, overrides: Partial<SessionRecord> = {}) =>
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

export const freshToken = (purpose: TokenPurpose, overrides: Partial<OneTimeTokenRecord> = {}) =>
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

export const byCredential = (a: PasskeyRecord, b: PasskeyRecord) => (a.credential_id < b.credential_id ? -1 : 1)
