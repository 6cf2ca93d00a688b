/**
 * The people store port (core/src/accounts/PeopleStore.ts) on Postgres; the tables come from the
 * `0008_people` and `0010_identities` migrations (./migrations.ts). Rows are read back through core's record Schemas
 * (core/src/accounts/Records.ts): the column lists are the Schemas' fields and a row is decoded
 * by its Schema once its Dates and int8s are made ISO strings and numbers, so a record's shape is
 * written once.
 *
 * The rules that must hold under concurrency, each in one statement or one transaction:
 * - uniqueness: `INSERT ... ON CONFLICT DO NOTHING RETURNING` (a person and their first passkey in
 *   one transaction, rolled back when the passkey's credential is taken);
 * - set once / forward only: `UPDATE ... SET x = COALESCE(x, $v)` / `GREATEST(x, $v)` (under READ
 *   COMMITTED an UPDATE that waited on a row lock re-evaluates on the row as it was left);
 * - never the last passkey: a transaction that locks the person's row (`FOR UPDATE`) before
 *   counting, so removals of one person's passkeys take turns and each counts what the previous
 *   one left (each statement of a READ COMMITTED transaction sees what committed before it);
 * - consume once: `UPDATE ... SET used_at WHERE used_at IS NULL AND <in time> RETURNING`; revoking
 *   a subject's tokens is the same UPDATE over their rows, so per token one of the two wins.
 * Expired sessions and tokens are filtered by every read and deleted now and then (PRUNE_EVERY
 * writes of this process, those expired more than RETAIN_EXPIRED_MS before).
 */
import {
  type AddPasskeyResult,
  consumeRefusal,
  type ConsumeTokenResult,
  counterProblem,
  IdentityRecord,
  type InsertPersonResult,
  OneTimeTokenRecord,
  passkeyProblem,
  PasskeyRecord,
  PeopleStore,
  personProblem,
  PersonRecord,
  type RemovePasskeyResult,
  SessionRecord,
  type TokenPurpose
} from "@model-platform/core/accounts"
import type { Timestamp } from "@model-platform/core/kernel"
import { Data, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"

/** Writes of sessions and tokens of one process between two prunes. */
export const PRUNE_EVERY = 200
/** Expired sessions and tokens are kept this long (a day), then pruned. */
export const RETAIN_EXPIRED_MS = 24 * 60 * 60_000

/** A row as the Schema reads it: timestamptz (Date) as ISO, int8 (bigint) as number. */
const plain = (row: object): Record<string, unknown> =>
  Object.fromEntries(
    Object.entries(row).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : typeof v === "bigint" ? Number(v) : v])
  )

const rowDecoder = <S extends Schema.Top>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(schema)
  return (rows: ReadonlyArray<object>) =>
    rows[0] === undefined ? Effect.undefined : (Effect.orDie(decode(plain(rows[0]))) as Effect.Effect<S["Type"]>)
}
const rowsDecoder = <S extends Schema.Top>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(schema)
  return (rows: ReadonlyArray<object>) =>
    Effect.forEach(rows, (row) => Effect.orDie(decode(plain(row))) as Effect.Effect<S["Type"]>)
}

/** An expected refusal inside a transaction: fails it (so it rolls back) and becomes the answer. */
class Refused<A> extends Data.TaggedError("Refused")<{ readonly answer: A }> {}

export const PeopleStorePg: Layer.Layer<PeopleStore, never, SqlClient.SqlClient> = Layer.effect(
  PeopleStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = (schema: { readonly fields: object }) => sql.literal(Object.keys(schema.fields).join(", "))
    const personColumns = columns(PersonRecord)
    const passkeyColumns = columns(PasskeyRecord)
    const sessionColumns = columns(SessionRecord)
    const tokenColumns = columns(OneTimeTokenRecord)
    const identityColumns = columns(IdentityRecord)
    const oneIdentity = rowDecoder(IdentityRecord)
    const onePerson = rowDecoder(PersonRecord)
    const onePasskey = rowDecoder(PasskeyRecord)
    const passkeys = rowsDecoder(PasskeyRecord)
    const oneSession = rowDecoder(SessionRecord)
    const oneToken = rowDecoder(OneTimeTokenRecord)
    const tokens = rowsDecoder(OneTimeTokenRecord)

    let writes = 0
    const pruneNow = (now: Timestamp): Effect.Effect<void> => {
      writes++
      if (writes % PRUNE_EVERY !== 0) return Effect.void
      const before = new Date(Date.parse(now) - RETAIN_EXPIRED_MS).toISOString()
      return Effect.all([
        sql`DELETE FROM sessions WHERE expires_at < ${before}::timestamptz`,
        sql`DELETE FROM one_time_tokens WHERE expires_at < ${before}::timestamptz`
      ]).pipe(Effect.asVoid, Effect.orDie)
    }

    const insertPasskeyRow = (p: PasskeyRecord) =>
      sql`INSERT INTO passkeys (${passkeyColumns}) VALUES (
            ${p.credential_id}, ${p.person_id}, ${p.public_key}, ${p.counter}, ${p.transports}::text[], ${p.name},
            ${p.created_at}::timestamptz, ${p.last_used_at}::timestamptz)
          ON CONFLICT (credential_id) DO NOTHING RETURNING credential_id`

    const insertPerson = (person: PersonRecord, passkey: PasskeyRecord) => {
      const problem = personProblem(person, passkey)
      if (problem !== undefined) return Effect.die(new Error(`PeopleStore.insertPerson: ${problem}`))
      return Effect.gen(function*() {
        const inserted = yield* sql`
          INSERT INTO people (${personColumns}) VALUES (
            ${person.id}, ${person.email}, ${person.email_confirmed_at}::timestamptz, ${person.account_id},
            ${person.created_at}::timestamptz)
          ON CONFLICT (email) DO NOTHING RETURNING id`
        if (inserted.length === 0) return yield* new Refused<InsertPersonResult>({ answer: { _tag: "EmailTaken" } })
        const added = yield* insertPasskeyRow(passkey)
        if (added.length === 0) return yield* new Refused<InsertPersonResult>({ answer: { _tag: "CredentialTaken" } })
        return { _tag: "Inserted" } as InsertPersonResult
      }).pipe(
        sql.withTransaction,
        Effect.catchTag("Refused", (refused) => Effect.succeed(refused.answer)),
        Effect.orDie,
        Effect.withSpan("PeopleStore.insertPerson")
      )
    }

    const getPerson = (personId: string) =>
      sql`SELECT ${personColumns} FROM people WHERE id = ${personId}`.pipe(
        Effect.flatMap(onePerson),
        Effect.orDie,
        Effect.withSpan("PeopleStore.getPerson")
      )

    const findPersonByEmail = (email: string) =>
      sql`SELECT ${personColumns} FROM people WHERE email = ${email}`.pipe(
        Effect.flatMap(onePerson),
        Effect.orDie,
        Effect.withSpan("PeopleStore.findPersonByEmail")
      )

    const confirmEmail = (personId: string, at: Timestamp) =>
      sql`UPDATE people SET email_confirmed_at = COALESCE(email_confirmed_at, ${at}::timestamptz)
          WHERE id = ${personId} RETURNING ${personColumns}`.pipe(
        Effect.flatMap(onePerson),
        Effect.orDie,
        Effect.withSpan("PeopleStore.confirmEmail")
      )

    const linkAccount = (personId: string, accountId: string) =>
      sql`UPDATE people SET account_id = COALESCE(account_id, ${accountId})
          WHERE id = ${personId} RETURNING ${personColumns}`.pipe(
        Effect.flatMap(onePerson),
        Effect.orDie,
        Effect.withSpan("PeopleStore.linkAccount")
      )

    const addPasskey = (passkey: PasskeyRecord) => {
      const problem = passkeyProblem(passkey)
      if (problem !== undefined) return Effect.die(new Error(`PeopleStore.addPasskey: ${problem}`))
      return Effect.gen(function*() {
        // People are never deleted, so a person seen here still exists when the passkey is written.
        const person = yield* sql`SELECT id FROM people WHERE id = ${passkey.person_id}`
        if (person.length === 0) return { _tag: "UnknownPerson" } as AddPasskeyResult
        const added = yield* insertPasskeyRow(passkey)
        return (added.length === 0 ? { _tag: "CredentialTaken" } : { _tag: "Added" }) as AddPasskeyResult
      }).pipe(Effect.orDie, Effect.withSpan("PeopleStore.addPasskey"))
    }

    const listPasskeys = (personId: string) =>
      sql`SELECT ${passkeyColumns} FROM passkeys WHERE person_id = ${personId} ORDER BY created_at, seq`.pipe(
        Effect.flatMap(passkeys),
        Effect.orDie,
        Effect.withSpan("PeopleStore.listPasskeys")
      )

    const findPasskey = (credentialId: string) =>
      sql`SELECT ${passkeyColumns} FROM passkeys WHERE credential_id = ${credentialId}`.pipe(
        Effect.flatMap(onePasskey),
        Effect.orDie,
        Effect.withSpan("PeopleStore.findPasskey")
      )

    const recordPasskeyUse = (credentialId: string, counter: number, at: Timestamp) => {
      const problem = counterProblem(counter)
      if (problem !== undefined) return Effect.die(new Error(`PeopleStore.recordPasskeyUse: ${problem}`))
      return sql`UPDATE passkeys SET counter = GREATEST(counter, ${counter}),
                   last_used_at = GREATEST(last_used_at, ${at}::timestamptz)
                 WHERE credential_id = ${credentialId} RETURNING ${passkeyColumns}`.pipe(
        Effect.flatMap(onePasskey),
        Effect.orDie,
        Effect.withSpan("PeopleStore.recordPasskeyUse")
      )
    }

    const removePasskey = (personId: string, credentialId: string) =>
      Effect.gen(function*() {
        const person = yield* sql`SELECT id FROM people WHERE id = ${personId} FOR UPDATE`
        if (person.length === 0) return { _tag: "NotFound" } as RemovePasskeyResult
        const held = yield* sql<{ readonly credential_id: string }>`
          SELECT credential_id FROM passkeys WHERE person_id = ${personId}`
        if (!held.some((row) => row.credential_id === credentialId)) return { _tag: "NotFound" } as RemovePasskeyResult
        if (held.length <= 1) return { _tag: "LastPasskey" } as RemovePasskeyResult
        yield* sql`DELETE FROM passkeys WHERE credential_id = ${credentialId} AND person_id = ${personId}`
        return { _tag: "Removed" } as RemovePasskeyResult
      }).pipe(sql.withTransaction, Effect.orDie, Effect.withSpan("PeopleStore.removePasskey"))

    const createSession = (s: SessionRecord) =>
      sql`INSERT INTO sessions (${sessionColumns}) VALUES (
            ${s.token_hash}, ${s.person_id}, ${s.csrf_hash}, ${s.created_at}::timestamptz, ${s.expires_at}::timestamptz)`.pipe(
        Effect.andThen(pruneNow(s.created_at)),
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("PeopleStore.createSession")
      )

    const getSession = (tokenHash: string, at: Timestamp) =>
      sql`SELECT ${sessionColumns} FROM sessions
          WHERE token_hash = ${tokenHash} AND expires_at > ${at}::timestamptz`.pipe(
        Effect.flatMap(oneSession),
        Effect.orDie,
        Effect.withSpan("PeopleStore.getSession")
      )

    const deleteSession = (tokenHash: string) =>
      sql`DELETE FROM sessions WHERE token_hash = ${tokenHash}`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("PeopleStore.deleteSession")
      )

    const deletePersonSessions = (personId: string) =>
      sql`DELETE FROM sessions WHERE person_id = ${personId} RETURNING token_hash`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie,
        Effect.withSpan("PeopleStore.deletePersonSessions")
      )

    const issueToken = (t: OneTimeTokenRecord) =>
      sql`INSERT INTO one_time_tokens (${tokenColumns}) VALUES (
            ${t.token_hash}, ${t.purpose}, ${t.subject}, ${t.data}, ${t.created_at}::timestamptz,
            ${t.not_before}::timestamptz, ${t.expires_at}::timestamptz, NULL)`.pipe(
        Effect.andThen(pruneNow(t.created_at)),
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("PeopleStore.issueToken")
      )

    const consumeToken = (tokenHash: string, purpose: TokenPurpose, at: Timestamp) =>
      Effect.gen(function*() {
        const consumed = yield* sql`
          UPDATE one_time_tokens SET used_at = ${at}::timestamptz
          WHERE token_hash = ${tokenHash} AND purpose = ${purpose} AND used_at IS NULL
            AND not_before <= ${at}::timestamptz AND expires_at > ${at}::timestamptz
          RETURNING ${tokenColumns}`.pipe(Effect.flatMap(oneToken))
        if (consumed !== undefined) return { _tag: "Consumed", token: consumed } as ConsumeTokenResult
        // Not consumed: say why from the token as it is now (the refusal itself was atomic).
        const token = yield* sql`SELECT ${tokenColumns} FROM one_time_tokens WHERE token_hash = ${tokenHash}`.pipe(
          Effect.flatMap(oneToken)
        )
        const refusal = consumeRefusal(token, purpose, at)
        return refusal ?? ({ _tag: "Refused", reason: "used" } as ConsumeTokenResult)
      }).pipe(Effect.orDie, Effect.withSpan("PeopleStore.consumeToken"))

    const listTokens = (subject: string, purpose: TokenPurpose, at: Timestamp) =>
      sql`SELECT ${tokenColumns} FROM one_time_tokens
          WHERE subject = ${subject} AND subject <> '' AND purpose = ${purpose}
            AND used_at IS NULL AND expires_at > ${at}::timestamptz
          ORDER BY created_at`.pipe(
        Effect.flatMap(tokens),
        Effect.orDie,
        Effect.withSpan("PeopleStore.listTokens")
      )

    const revokeTokens = (subject: string, purpose: TokenPurpose, at: Timestamp) =>
      sql`UPDATE one_time_tokens SET used_at = ${at}::timestamptz
          WHERE subject = ${subject} AND subject <> '' AND purpose = ${purpose}
            AND used_at IS NULL AND expires_at > ${at}::timestamptz
          RETURNING token_hash`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie,
        Effect.withSpan("PeopleStore.revokeTokens")
      )

    const saveIdentity = (i: IdentityRecord) =>
      sql`INSERT INTO identities (${identityColumns}) VALUES (
            ${i.account_id}, ${i.person_id}, ${i.state}, ${i.did}, ${i.wallet_address}, ${i.error},
            ${i.updated_at}::timestamptz)
          ON CONFLICT (account_id) DO UPDATE SET person_id = EXCLUDED.person_id, state = EXCLUDED.state,
            did = EXCLUDED.did, wallet_address = EXCLUDED.wallet_address, error = EXCLUDED.error,
            updated_at = EXCLUDED.updated_at`.pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("PeopleStore.saveIdentity"))

    const getIdentity = (accountId: string) =>
      sql`SELECT ${identityColumns} FROM identities WHERE account_id = ${accountId}`.pipe(
        Effect.flatMap(oneIdentity),
        Effect.orDie,
        Effect.withSpan("PeopleStore.getIdentity")
      )

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
