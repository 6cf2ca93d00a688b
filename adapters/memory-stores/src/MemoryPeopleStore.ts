/**
 * The people store port (core/src/accounts/PeopleStore.ts) in memory, for tests and the in-process
 * shell. State lives in one Ref and every operation is a single `Ref.modify` (or read), which is
 * what makes "email and credential id unique", "never the last passkey" and "consume once" atomic
 * between fibers. Records are copied in and out, so callers never share the stored objects.
 */
import type {
  IdentityRecord,
  OneTimeTokenRecord,
  PasskeyRecord,
  PersonRecord,
  SessionRecord,
  TokenPurpose
} from "@model-platform/core/accounts"
import {
  type AddPasskeyResult,
  consumeRefusal,
  counterProblem,
  isOutstanding,
  type ConsumeTokenResult,
  type InsertPersonResult,
  passkeyProblem,
  PeopleStore,
  personProblem,
  type RemovePasskeyResult
} from "@model-platform/core/accounts"
import type { Timestamp } from "@model-platform/core/kernel"
import { Effect, Layer, Ref } from "effect"

interface State {
  readonly people: ReadonlyMap<string, PersonRecord>
  readonly personByEmail: ReadonlyMap<string, string>
  /** By credential id; `seq` keeps insertion order among equal created_at. */
  readonly passkeys: ReadonlyMap<string, { readonly record: PasskeyRecord; readonly seq: number }>
  readonly sessions: ReadonlyMap<string, SessionRecord>
  readonly tokens: ReadonlyMap<string, OneTimeTokenRecord>
  /** By account id. */
  readonly identities: ReadonlyMap<string, IdentityRecord>
  readonly seq: number
  /** Writes of sessions and tokens, for pruning. */
  readonly writes: number
}

type Step<A> = readonly [A, State] | { readonly defect: string }

/** Writes of sessions and tokens between two prunes; expired ones are kept a day, then dropped. */
const PRUNE_EVERY = 200
const RETAIN_EXPIRED_MS = 24 * 60 * 60_000

/** The sessions and tokens of `s` without those expired more than RETAIN_EXPIRED_MS before `now`. */
const pruned = (s: State, now: Timestamp): State => {
  const before = new Date(Date.parse(now) - RETAIN_EXPIRED_MS).toISOString()
  return {
    ...s,
    sessions: new Map([...s.sessions].filter(([, session]) => session.expires_at >= before)),
    tokens: new Map([...s.tokens].filter(([, token]) => token.expires_at >= before))
  }
}

const copyPasskey = (passkey: PasskeyRecord): PasskeyRecord => ({ ...passkey, transports: [...passkey.transports] })
const later = (a: Timestamp | null, b: Timestamp): Timestamp => (a !== null && a > b ? a : b)

export const PeopleStoreMemory: Layer.Layer<PeopleStore> = Layer.effect(
  PeopleStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<State>({
      people: new Map(),
      personByEmail: new Map(),
      passkeys: new Map(),
      sessions: new Map(),
      tokens: new Map(),
      identities: new Map(),
      seq: 0,
      writes: 0
    })
    /** Counts a session or token write; every PRUNE_EVERY, drops the long expired. */
    const written = (s: State, now: Timestamp): State => {
      const next = { ...s, writes: s.writes + 1 }
      return next.writes % PRUNE_EVERY === 0 ? pruned(next, now) : next
    }

    const modify = <A>(operation: string, f: (s: State) => Step<A>): Effect.Effect<A> =>
      Ref.modify(state, (s): readonly [Step<A>, State] => {
        const step = f(s)
        return "defect" in step ? [step, s] : [step, step[1]]
      }).pipe(
        Effect.flatMap((step) =>
          "defect" in step ? Effect.die(new Error(`PeopleStore.${operation}: ${step.defect}`)) : Effect.succeed(step[0])
        ),
        Effect.withSpan(`PeopleStore.${operation}`)
      )
    const read = <A>(operation: string, f: (s: State) => A): Effect.Effect<A> =>
      Effect.map(Ref.get(state), f).pipe(Effect.withSpan(`PeopleStore.${operation}`))

    const withPasskey = (s: State, passkey: PasskeyRecord): State => ({
      ...s,
      passkeys: new Map(s.passkeys).set(passkey.credential_id, { record: copyPasskey(passkey), seq: s.seq }),
      seq: s.seq + 1
    })
    const updatePerson = (s: State, person: PersonRecord): State => ({ ...s, people: new Map(s.people).set(person.id, person) })

    const insertPerson = (person: PersonRecord, passkey: PasskeyRecord) =>
      modify("insertPerson", (s): Step<InsertPersonResult> => {
        const problem = personProblem(person, passkey)
        if (problem !== undefined) return { defect: problem }
        if (s.people.has(person.id)) return { defect: `duplicate person id ${person.id}` }
        if (s.personByEmail.has(person.email)) return [{ _tag: "EmailTaken" }, s]
        if (s.passkeys.has(passkey.credential_id)) return [{ _tag: "CredentialTaken" }, s]
        const next = withPasskey(updatePerson(s, { ...person }), passkey)
        return [{ _tag: "Inserted" }, { ...next, personByEmail: new Map(s.personByEmail).set(person.email, person.id) }]
      })

    const getPerson = (personId: string) => read("getPerson", (s) => copy(s.people.get(personId)))
    const copy = (person: PersonRecord | undefined) => (person === undefined ? undefined : { ...person })

    const findPersonByEmail = (email: string) =>
      read("findPersonByEmail", (s) => {
        const id = s.personByEmail.get(email)
        return id === undefined ? undefined : copy(s.people.get(id))
      })

    const setOnce = (operation: string, personId: string, f: (person: PersonRecord) => PersonRecord) =>
      modify(operation, (s): Step<PersonRecord | undefined> => {
        const person = s.people.get(personId)
        if (person === undefined) return [undefined, s]
        const next = f(person)
        return [{ ...next }, next === person ? s : updatePerson(s, next)]
      })

    const confirmEmail = (personId: string, at: Timestamp) =>
      setOnce("confirmEmail", personId, (p) => (p.email_confirmed_at === null ? { ...p, email_confirmed_at: at } : p))

    const linkAccount = (personId: string, accountId: string) =>
      setOnce("linkAccount", personId, (p) => (p.account_id === null ? { ...p, account_id: accountId } : p))

    const addPasskey = (passkey: PasskeyRecord) =>
      modify("addPasskey", (s): Step<AddPasskeyResult> => {
        const problem = passkeyProblem(passkey)
        if (problem !== undefined) return { defect: problem }
        if (!s.people.has(passkey.person_id)) return [{ _tag: "UnknownPerson" }, s]
        if (s.passkeys.has(passkey.credential_id)) return [{ _tag: "CredentialTaken" }, s]
        return [{ _tag: "Added" }, withPasskey(s, passkey)]
      })

    const listPasskeys = (personId: string) =>
      read("listPasskeys", (s) =>
        [...s.passkeys.values()]
          .filter((stored) => stored.record.person_id === personId)
          .sort((a, b) =>
            a.record.created_at < b.record.created_at ? -1 : a.record.created_at > b.record.created_at ? 1 : a.seq - b.seq
          )
          .map((stored) => copyPasskey(stored.record)))

    const findPasskey = (credentialId: string) =>
      read("findPasskey", (s) => {
        const stored = s.passkeys.get(credentialId)
        return stored === undefined ? undefined : copyPasskey(stored.record)
      })

    const recordPasskeyUse = (credentialId: string, counter: number, at: Timestamp) =>
      modify("recordPasskeyUse", (s): Step<PasskeyRecord | undefined> => {
        const problem = counterProblem(counter)
        if (problem !== undefined) return { defect: problem }
        const stored = s.passkeys.get(credentialId)
        if (stored === undefined) return [undefined, s]
        const record: PasskeyRecord = {
          ...stored.record,
          counter: Math.max(stored.record.counter, counter),
          last_used_at: later(stored.record.last_used_at, at)
        }
        return [copyPasskey(record), { ...s, passkeys: new Map(s.passkeys).set(credentialId, { ...stored, record }) }]
      })

    const removePasskey = (personId: string, credentialId: string) =>
      modify("removePasskey", (s): Step<RemovePasskeyResult> => {
        const stored = s.passkeys.get(credentialId)
        if (stored === undefined || stored.record.person_id !== personId) return [{ _tag: "NotFound" }, s]
        let count = 0
        for (const other of s.passkeys.values()) if (other.record.person_id === personId) count++
        if (count <= 1) return [{ _tag: "LastPasskey" }, s]
        const passkeys = new Map(s.passkeys)
        passkeys.delete(credentialId)
        return [{ _tag: "Removed" }, { ...s, passkeys }]
      })

    const createSession = (session: SessionRecord) =>
      modify("createSession", (s): Step<void> =>
        s.sessions.has(session.token_hash)
          ? { defect: "duplicate session token hash" }
          : [undefined, written({ ...s, sessions: new Map(s.sessions).set(session.token_hash, { ...session }) }, session.created_at)])

    const getSession = (tokenHash: string, at: Timestamp) =>
      read("getSession", (s) => {
        const session = s.sessions.get(tokenHash)
        return session === undefined || session.expires_at <= at ? undefined : { ...session }
      })

    const deleteSession = (tokenHash: string) =>
      modify("deleteSession", (s): Step<void> => {
        if (!s.sessions.has(tokenHash)) return [undefined, s]
        const sessions = new Map(s.sessions)
        sessions.delete(tokenHash)
        return [undefined, { ...s, sessions }]
      })

    const deletePersonSessions = (personId: string) =>
      modify("deletePersonSessions", (s): Step<number> => {
        const sessions = new Map(s.sessions)
        let deleted = 0
        for (const [hash, session] of s.sessions) {
          if (session.person_id === personId) {
            sessions.delete(hash)
            deleted++
          }
        }
        return [deleted, deleted === 0 ? s : { ...s, sessions }]
      })

    const issueToken = (token: OneTimeTokenRecord) =>
      modify("issueToken", (s): Step<void> =>
        s.tokens.has(token.token_hash)
          ? { defect: "duplicate token hash" }
          : [undefined, written({ ...s, tokens: new Map(s.tokens).set(token.token_hash, { ...token, used_at: null }) }, token.created_at)])

    const consumeToken = (tokenHash: string, purpose: TokenPurpose, at: Timestamp) =>
      modify("consumeToken", (s): Step<ConsumeTokenResult> => {
        const token = s.tokens.get(tokenHash)
        const refusal = consumeRefusal(token, purpose, at)
        if (refusal !== undefined || token === undefined) return [refusal ?? { _tag: "Refused", reason: "unknown" }, s]
        const used: OneTimeTokenRecord = { ...token, used_at: at }
        return [{ _tag: "Consumed", token: { ...used } }, { ...s, tokens: new Map(s.tokens).set(tokenHash, used) }]
      })

    const ofSubject = (s: State, subject: string, purpose: TokenPurpose, at: Timestamp) =>
      subject === ""
        ? []
        : [...s.tokens.values()].filter((t) => t.subject === subject && t.purpose === purpose && isOutstanding(t, at))

    const listTokens = (subject: string, purpose: TokenPurpose, at: Timestamp) =>
      read("listTokens", (s) =>
        ofSubject(s, subject, purpose, at)
          .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
          .map((t) => ({ ...t })))

    const revokeTokens = (subject: string, purpose: TokenPurpose, at: Timestamp) =>
      modify("revokeTokens", (s): Step<number> => {
        const revoked = ofSubject(s, subject, purpose, at)
        if (revoked.length === 0) return [0, s]
        const tokens = new Map(s.tokens)
        for (const t of revoked) tokens.set(t.token_hash, { ...t, used_at: at })
        return [revoked.length, { ...s, tokens }]
      })

    const saveIdentity = (identity: IdentityRecord) =>
      modify("saveIdentity", (s): Step<void> => [
        undefined,
        { ...s, identities: new Map(s.identities).set(identity.account_id, { ...identity }) }
      ])

    const getIdentity = (accountId: string) =>
      read("getIdentity", (s) => {
        const identity = s.identities.get(accountId)
        return identity === undefined ? undefined : { ...identity }
      })

    return PeopleStore.of({
      insertPerson,
      getPerson,
      findPersonByEmail,
      confirmEmail,
      linkAccount,
      addPasskey,
      listPasskeys,
      findPasskey,
      recordPasskeyUse,
      removePasskey,
      createSession,
      getSession,
      deleteSession,
      deletePersonSessions,
      issueToken,
      consumeToken,
      listTokens,
      revokeTokens,
      saveIdentity,
      getIdentity
    })
  })
)
