/**
 * The people store port (core/src/accounts/PeopleStore.ts) on the one DynamoDB table of
 * DynamoTable.ts, through the document client. Items (PeopleKeys below; docs/accounts.md "Storage"):
 *
 *   PERSON#<id>          PERSON              the person, and `passkey_count`
 *   PERSONEMAIL#<email>  PERSONEMAIL         person_id: keeps emails unique, finds a person by email
 *   PERSON#<id>          PASSKEY#<cred>      a passkey (listed by querying the person's partition)
 *   CREDENTIAL#<cred>    CREDENTIAL          person_id: keeps credential ids unique, finds a passkey
 *   SESSION#<hash>       SESSION             a session, with `ttl`
 *   PERSON#<id>          SESSION#<hash>      token_hash: a session of the person, with `ttl`
 *   TOKEN#<hash>         TOKEN               a one-time token, with `ttl`
 *   TOKENS#<purpose>#<subject>  TOKEN#<created_at>#<hash>  token_hash: a token about a subject (not
 *                                                    written for an empty subject), with `ttl`
 *   IDENTITY#<account id>  IDENTITY          an account's identity on the network (replaced whole)
 *
 * As in the other stores, ids are never parsed back out of a key: pointers carry them.
 *
 * Every rule is kept by DynamoDB itself, never by a read followed by a write: uniqueness by
 * conditional puts in one TransactWriteItems (a person with their email and first passkey), "never
 * the last passkey" by a transaction that decrements the person's `passkey_count` only while it
 * is above 1 (two removals of one person's passkeys both write the person item, so they take
 * turns), set-once by `if_not_exists`, forward-only and consume-once by conditional updates.
 * Reads are strongly consistent. Items are read back through core's record Schemas, their
 * attributes being the Schemas' fields (null fields are absent attributes). DynamoDB Local does
 * not delete items past their TTL, nor does DynamoDB at once: expiry is checked on every read.
 */
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand
} from "@aws-sdk/lib-dynamodb"
import {
  type AddPasskeyResult,
  consumeRefusal,
  type ConsumeTokenResult,
  counterProblem,
  IdentityRecord,
  type InsertPersonResult,
  isOutstanding,
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
import { Effect, Layer, Schema } from "effect"
import { allPages, call, failedConditionsAllowingNone, isConditionFailed, retryConflicts, startingAt } from "./DynamoErrors.ts"
import { DynamoConfig, type ItemKey, TTL_ATTRIBUTE } from "./DynamoTable.ts"

export const PeopleKeys = {
  person: (personId: string): ItemKey => ({ pk: `PERSON#${personId}`, sk: "PERSON" }),
  personEmail: (email: string): ItemKey => ({ pk: `PERSONEMAIL#${email}`, sk: "PERSONEMAIL" }),
  passkey: (personId: string, credentialId: string): ItemKey => ({ pk: `PERSON#${personId}`, sk: `${PASSKEY_PREFIX}${credentialId}` }),
  credential: (credentialId: string): ItemKey => ({ pk: `CREDENTIAL#${credentialId}`, sk: "CREDENTIAL" }),
  session: (tokenHash: string): ItemKey => ({ pk: `SESSION#${tokenHash}`, sk: "SESSION" }),
  personSession: (personId: string, tokenHash: string): ItemKey => ({
    pk: `PERSON#${personId}`,
    sk: `${SESSION_PREFIX}${tokenHash}`
  }),
  token: (tokenHash: string): ItemKey => ({ pk: `TOKEN#${tokenHash}`, sk: "TOKEN" }),
  identity: (accountId: string): ItemKey => ({ pk: `IDENTITY#${accountId}`, sk: "IDENTITY" }),
  /** Points at a token of `purpose` about `subject` (a purpose holds no `#`, so the key is unambiguous). */
  subjectToken: (subject: string, purpose: TokenPurpose, createdAt: Timestamp, tokenHash: string): ItemKey => ({
    pk: subjectTokensPk(subject, purpose),
    sk: `${TOKEN_PREFIX}${createdAt}#${tokenHash}`
  })
} as const

const subjectTokensPk = (subject: string, purpose: TokenPurpose) => `TOKENS#${purpose}#${subject}`

/** Sort key prefixes of a person's passkeys and session pointers, for `begins_with`. */
export const PASSKEY_PREFIX = "PASSKEY#"
export const SESSION_PREFIX = "SESSION#"
export const TOKEN_PREFIX = "TOKEN#"

/** An item's TTL (epoch seconds) for a record that expires at `expiresAt`. */
export const ttlOf = (expiresAt: Timestamp): number => Math.ceil(Date.parse(expiresAt) / 1000)

type Item = Record<string, unknown>
type TransactItems = NonNullable<TransactWriteCommandInput["TransactItems"]>

const NOT_EXISTS = "attribute_not_exists(pk)"

/** The record's fields as attributes: null fields are left out (absent, so conditions can test them). */
const attributes = (record: object): Item =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== null))

/** Reads a record from an item by its Schema: the Schema's fields, absent ones as null. */
const recordDecoder = <S extends Schema.Top & { readonly fields: Schema.Struct.Fields }>(schema: S) => {
  const decode = Schema.decodeUnknownEffect(schema)
  const names = Object.keys(schema.fields)
  return (item: Item): Effect.Effect<S["Type"]> =>
    Effect.orDie(decode(Object.fromEntries(names.map((name) => [name, item[name] ?? null])))) as Effect.Effect<S["Type"]>
}
const PersonPointer = Schema.Struct({ person_id: Schema.String })
const HashPointer = Schema.Struct({ token_hash: Schema.String })

export const PeopleStoreDynamo: Layer.Layer<PeopleStore, never, DynamoConfig> = Layer.effect(
  PeopleStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const decodePerson = recordDecoder(PersonRecord)
    const decodePasskey = recordDecoder(PasskeyRecord)
    const decodeSession = recordDecoder(SessionRecord)
    const decodeToken = recordDecoder(OneTimeTokenRecord)
    const decodeIdentity = recordDecoder(IdentityRecord)
    const decodePointer = recordDecoder(PersonPointer)
    const decodeHashPointer = recordDecoder(HashPointer)

    const create = (key: ItemKey, item: Item) => ({
      Put: { TableName: tableName, Item: { ...item, ...key }, ConditionExpression: NOT_EXISTS }
    })
    const remove = (key: ItemKey) => ({ Delete: { TableName: tableName, Key: { ...key } } })

    /** One transaction, tried again while it conflicts; answers the indexes of failed conditions ([] when committed). */
    const transact = (operation: string, items: TransactItems): Effect.Effect<ReadonlyArray<number>> =>
      call((signal) => client.send(new TransactWriteCommand({ TransactItems: items }), { abortSignal: signal })).pipe(
        retryConflicts,
        Effect.as([] as ReadonlyArray<number>),
        Effect.catchIf(
          (error) => failedConditionsAllowingNone(error) !== undefined,
          (error) => Effect.succeed(failedConditionsAllowingNone(error) ?? [])
        ),
        Effect.orDie,
        Effect.withSpan(`PeopleStore.${operation}.transact`)
      )

    const getItem = (key: ItemKey) =>
      call((signal) =>
        client.send(new GetCommand({ TableName: tableName, Key: { ...key }, ConsistentRead: true }), { abortSignal: signal })
      ).pipe(Effect.map((output) => output.Item), Effect.orDie)

    const getRecord = <A>(key: ItemKey, decodeItem: (item: Item) => Effect.Effect<A>) =>
      Effect.flatMap(getItem(key), (item) => (item === undefined ? Effect.undefined : decodeItem(item)))

    /** An update whose failed condition answers undefined; else the item as it is afterwards. */
    const update = (key: ItemKey, input: Omit<ConstructorParameters<typeof UpdateCommand>[0], "TableName" | "Key">) =>
      call((signal) =>
        client.send(new UpdateCommand({ ...input, TableName: tableName, Key: { ...key }, ReturnValues: "ALL_NEW" }), {
          abortSignal: signal
        })
      ).pipe(
        retryConflicts,
        Effect.map((output): Item | undefined => output.Attributes),
        Effect.catchIf(isConditionFailed, () => Effect.undefined),
        Effect.orDie
      )

    /** Items of a person's partition whose sort key begins with `prefix`, every page. */
    const queryPerson = (personId: string, prefix: string) => queryPartition(PeopleKeys.person(personId).pk, prefix)

    /** Items of the partition `pk` whose sort key begins with `prefix`, every page, in sort key order. */
    const queryPartition = (pk: string, prefix: string) =>
      allPages((startKey: Item | undefined) =>
        call((signal) =>
          client.send(
            new QueryCommand({
              TableName: tableName,
              KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
              ExpressionAttributeValues: { ":pk": pk, ":prefix": prefix },
              ConsistentRead: true,
              ...startingAt(startKey)
            }),
            { abortSignal: signal }
          )
        )
      )

    // -------------------------------------------------------------------------------------------
    // people

    const insertPerson = Effect.fn("PeopleStore.insertPerson")(function*(person: PersonRecord, passkey: PasskeyRecord) {
      const problem = personProblem(person, passkey)
      if (problem !== undefined) return yield* Effect.die(new Error(`PeopleStore.insertPerson: ${problem}`))
      const failed = yield* transact("insertPerson", [
        create(PeopleKeys.person(person.id), { ...attributes(person), passkey_count: 1 }),
        create(PeopleKeys.personEmail(person.email), { person_id: person.id }),
        create(PeopleKeys.passkey(person.id, passkey.credential_id), attributes(passkey)),
        create(PeopleKeys.credential(passkey.credential_id), { person_id: person.id })
      ])
      if (failed.includes(0)) return yield* Effect.die(new Error(`PeopleStore.insertPerson: duplicate person id ${person.id}`))
      if (failed.includes(1)) return { _tag: "EmailTaken" } as InsertPersonResult
      if (failed.length > 0) return { _tag: "CredentialTaken" } as InsertPersonResult
      return { _tag: "Inserted" } as InsertPersonResult
    })

    const getPerson = (personId: string) =>
      getRecord(PeopleKeys.person(personId), decodePerson).pipe(Effect.withSpan("PeopleStore.getPerson"))

    const findPersonByEmail = Effect.fn("PeopleStore.findPersonByEmail")(function*(email: string) {
      const pointer = yield* getRecord(PeopleKeys.personEmail(email), decodePointer)
      return pointer === undefined ? undefined : yield* getRecord(PeopleKeys.person(pointer.person_id), decodePerson)
    })

    /** Sets `field` unless it is set; answers the person afterwards, undefined when unknown. */
    const setOnce = (personId: string, field: "email_confirmed_at" | "account_id", value: string) =>
      update(PeopleKeys.person(personId), {
        UpdateExpression: "SET #field = if_not_exists(#field, :value)",
        ConditionExpression: "attribute_exists(pk)",
        ExpressionAttributeNames: { "#field": field },
        ExpressionAttributeValues: { ":value": value }
      }).pipe(Effect.flatMap((item) => (item === undefined ? Effect.undefined : decodePerson(item))))

    const confirmEmail = (personId: string, at: Timestamp) =>
      setOnce(personId, "email_confirmed_at", at).pipe(Effect.withSpan("PeopleStore.confirmEmail"))

    const linkAccount = (personId: string, accountId: string) =>
      setOnce(personId, "account_id", accountId).pipe(Effect.withSpan("PeopleStore.linkAccount"))

    // -------------------------------------------------------------------------------------------
    // passkeys

    const addPasskey = Effect.fn("PeopleStore.addPasskey")(function*(passkey: PasskeyRecord) {
      const problem = passkeyProblem(passkey)
      if (problem !== undefined) return yield* Effect.die(new Error(`PeopleStore.addPasskey: ${problem}`))
      const failed = yield* transact("addPasskey", [
        {
          Update: {
            TableName: tableName,
            Key: { ...PeopleKeys.person(passkey.person_id) },
            UpdateExpression: "ADD passkey_count :one",
            ConditionExpression: "attribute_exists(pk)",
            ExpressionAttributeValues: { ":one": 1 }
          }
        },
        create(PeopleKeys.passkey(passkey.person_id, passkey.credential_id), attributes(passkey)),
        create(PeopleKeys.credential(passkey.credential_id), { person_id: passkey.person_id })
      ])
      if (failed.includes(0)) return { _tag: "UnknownPerson" } as AddPasskeyResult
      if (failed.length > 0) return { _tag: "CredentialTaken" } as AddPasskeyResult
      return { _tag: "Added" } as AddPasskeyResult
    })

    const listPasskeys = Effect.fn("PeopleStore.listPasskeys")(function*(personId: string) {
      const items = yield* queryPerson(personId, PASSKEY_PREFIX)
      const passkeys = yield* Effect.forEach(items, decodePasskey)
      // The partition is in credential id order; the port lists oldest first.
      return passkeys.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
    })

    const passkeyKeyOf = (credentialId: string) =>
      Effect.map(
        getRecord(PeopleKeys.credential(credentialId), decodePointer),
        (pointer) => (pointer === undefined ? undefined : PeopleKeys.passkey(pointer.person_id, credentialId))
      )

    const findPasskey = Effect.fn("PeopleStore.findPasskey")(function*(credentialId: string) {
      const key = yield* passkeyKeyOf(credentialId)
      return key === undefined ? undefined : yield* getRecord(key, decodePasskey)
    })

    // Usually both move forward: one conditional update. Otherwise each moves forward on its own
    // condition. `attribute_exists(pk)` everywhere: a passkey removed meanwhile is not recreated.
    const recordPasskeyUse = Effect.fn("PeopleStore.recordPasskeyUse")(function*(
      credentialId: string,
      counter: number,
      at: Timestamp
    ) {
      const problem = counterProblem(counter)
      if (problem !== undefined) return yield* Effect.die(new Error(`PeopleStore.recordPasskeyUse: ${problem}`))
      const key = yield* passkeyKeyOf(credentialId)
      if (key === undefined) return undefined
      const values = { ":counter": counter, ":at": at }
      const laterTime = "(attribute_not_exists(last_used_at) OR last_used_at <= :at)"
      const both = yield* update(key, {
        UpdateExpression: "SET #counter = :counter, last_used_at = :at",
        ConditionExpression: `attribute_exists(pk) AND #counter <= :counter AND ${laterTime}`,
        ExpressionAttributeNames: { "#counter": "counter" },
        ExpressionAttributeValues: values
      })
      if (both !== undefined) return yield* decodePasskey(both)
      yield* update(key, {
        UpdateExpression: "SET #counter = :counter",
        ConditionExpression: "attribute_exists(pk) AND #counter < :counter",
        ExpressionAttributeNames: { "#counter": "counter" },
        ExpressionAttributeValues: { ":counter": counter }
      })
      yield* update(key, {
        UpdateExpression: "SET last_used_at = :at",
        ConditionExpression: `attribute_exists(pk) AND ${laterTime}`,
        ExpressionAttributeValues: { ":at": at }
      })
      return yield* getRecord(key, decodePasskey)
    })

    const removePasskey = Effect.fn("PeopleStore.removePasskey")(function*(personId: string, credentialId: string) {
      const failed = yield* transact("removePasskey", [
        {
          Delete: {
            TableName: tableName,
            Key: { ...PeopleKeys.passkey(personId, credentialId) },
            ConditionExpression: "attribute_exists(pk)"
          }
        },
        {
          Delete: {
            TableName: tableName,
            Key: { ...PeopleKeys.credential(credentialId) },
            ConditionExpression: "person_id = :person",
            ExpressionAttributeValues: { ":person": personId }
          }
        },
        {
          Update: {
            TableName: tableName,
            Key: { ...PeopleKeys.person(personId) },
            UpdateExpression: "SET passkey_count = passkey_count - :one",
            ConditionExpression: "passkey_count > :one",
            ExpressionAttributeValues: { ":one": 1 }
          }
        }
      ])
      if (failed.includes(0) || failed.includes(1)) return { _tag: "NotFound" } as RemovePasskeyResult
      if (failed.length > 0) return { _tag: "LastPasskey" } as RemovePasskeyResult
      return { _tag: "Removed" } as RemovePasskeyResult
    })

    // -------------------------------------------------------------------------------------------
    // sessions

    const createSession = Effect.fn("PeopleStore.createSession")(function*(session: SessionRecord) {
      const ttl = { [TTL_ATTRIBUTE]: ttlOf(session.expires_at) }
      const failed = yield* transact("createSession", [
        create(PeopleKeys.session(session.token_hash), { ...attributes(session), ...ttl }),
        {
          Put: {
            TableName: tableName,
            Item: {
              ...PeopleKeys.personSession(session.person_id, session.token_hash),
              token_hash: session.token_hash,
              ...ttl
            }
          }
        }
      ])
      if (failed.length > 0) return yield* Effect.die(new Error("PeopleStore.createSession: duplicate session token hash"))
    })

    const getSession = Effect.fn("PeopleStore.getSession")(function*(tokenHash: string, at: Timestamp) {
      const session = yield* getRecord(PeopleKeys.session(tokenHash), decodeSession)
      return session === undefined || session.expires_at <= at ? undefined : session
    })

    const deleteSession = Effect.fn("PeopleStore.deleteSession")(function*(tokenHash: string) {
      const session = yield* getRecord(PeopleKeys.session(tokenHash), decodeSession)
      if (session === undefined) return
      yield* transact("deleteSession", [
        remove(PeopleKeys.session(tokenHash)),
        remove(PeopleKeys.personSession(session.person_id, tokenHash))
      ])
    })

    const deletePersonSessions = Effect.fn("PeopleStore.deletePersonSessions")(function*(personId: string) {
      const pointers = yield* queryPerson(personId, SESSION_PREFIX)
      const hashes = yield* Effect.forEach(pointers, (item) => Effect.map(decodeHashPointer(item), (p) => p.token_hash))
      // A session and its pointer per pair; 50 pairs fill one transaction.
      const chunks: Array<ReadonlyArray<string>> = []
      for (let i = 0; i < hashes.length; i += 50) chunks.push(hashes.slice(i, i + 50))
      yield* Effect.forEach(
        chunks,
        (chunk) =>
          transact(
            "deletePersonSessions",
            chunk.flatMap((hash) => [remove(PeopleKeys.session(hash)), remove(PeopleKeys.personSession(personId, hash))])
          ),
        { concurrency: 4 }
      )
      return hashes.length
    })

    // -------------------------------------------------------------------------------------------
    // one-time tokens

    // A token about nobody (a sign-in challenge) is one put; else the token and its subject's
    // pointer in one transaction.
    const issueToken = Effect.fn("PeopleStore.issueToken")(function*(token: OneTimeTokenRecord) {
      const ttl = { [TTL_ATTRIBUTE]: ttlOf(token.expires_at) }
      const item = { ...attributes({ ...token, used_at: null }), ...ttl }
      const duplicate = () => Effect.die(new Error("PeopleStore.issueToken: duplicate token hash"))
      if (token.subject === "") {
        return yield* call((signal) =>
          client.send(
            new PutCommand({
              TableName: tableName,
              Item: { ...item, ...PeopleKeys.token(token.token_hash) },
              ConditionExpression: NOT_EXISTS
            }),
            { abortSignal: signal }
          )
        ).pipe(Effect.catchIf(isConditionFailed, duplicate), Effect.asVoid, Effect.orDie)
      }
      const failed = yield* transact("issueToken", [
        create(PeopleKeys.token(token.token_hash), item),
        {
          Put: {
            TableName: tableName,
            Item: {
              ...PeopleKeys.subjectToken(token.subject, token.purpose, token.created_at, token.token_hash),
              token_hash: token.token_hash,
              ...ttl
            }
          }
        }
      ])
      if (failed.length > 0) return yield* duplicate()
    })

    const consumeToken = Effect.fn("PeopleStore.consumeToken")(function*(
      tokenHash: string,
      purpose: TokenPurpose,
      at: Timestamp
    ) {
      const key = PeopleKeys.token(tokenHash)
      const consumed = yield* update(key, {
        UpdateExpression: "SET used_at = :at",
        ConditionExpression: "attribute_exists(pk) AND purpose = :purpose AND attribute_not_exists(used_at) " +
          "AND not_before <= :at AND expires_at > :at",
        ExpressionAttributeValues: { ":at": at, ":purpose": purpose }
      })
      if (consumed !== undefined) return { _tag: "Consumed", token: yield* decodeToken(consumed) } as ConsumeTokenResult
      // Not consumed: say why from the token as it is now (the refusal itself was atomic).
      const token = yield* getRecord(key, decodeToken)
      return consumeRefusal(token, purpose, at) ?? ({ _tag: "Refused", reason: "used" } as ConsumeTokenResult)
    })

    /** The token hashes a subject's pointers name, oldest first. */
    const subjectTokenHashes = (subject: string, purpose: TokenPurpose) =>
      Effect.flatMap(
        queryPartition(subjectTokensPk(subject, purpose), TOKEN_PREFIX),
        (items) => Effect.forEach(items, (item) => Effect.map(decodeHashPointer(item), (p) => p.token_hash))
      )

    const listTokens = Effect.fn("PeopleStore.listTokens")(function*(subject: string, purpose: TokenPurpose, at: Timestamp) {
      if (subject === "") return []
      const hashes = yield* subjectTokenHashes(subject, purpose)
      const tokens = yield* Effect.forEach(hashes, (hash) => getRecord(PeopleKeys.token(hash), decodeToken), {
        concurrency: 8
      })
      return tokens.filter((t): t is OneTimeTokenRecord => t !== undefined && isOutstanding(t, at))
    })

    // Each token is revoked by the same kind of conditional update that consumes it, so per token
    // one of a revocation and a consumption wins.
    const revokeTokens = Effect.fn("PeopleStore.revokeTokens")(function*(subject: string, purpose: TokenPurpose, at: Timestamp) {
      if (subject === "") return 0
      const hashes = yield* subjectTokenHashes(subject, purpose)
      const revoked = yield* Effect.forEach(
        hashes,
        (hash) =>
          update(PeopleKeys.token(hash), {
            UpdateExpression: "SET used_at = :at",
            ConditionExpression: "attribute_exists(pk) AND attribute_not_exists(used_at) AND expires_at > :at",
            ExpressionAttributeValues: { ":at": at }
          }),
        { concurrency: 8 }
      )
      return revoked.filter((item) => item !== undefined).length
    })

    const saveIdentity = (identity: IdentityRecord) =>
      call((signal) =>
        client.send(
          new PutCommand({ TableName: tableName, Item: { ...attributes(identity), ...PeopleKeys.identity(identity.account_id) } }),
          { abortSignal: signal }
        )
      ).pipe(retryConflicts, Effect.asVoid, Effect.orDie, Effect.withSpan("PeopleStore.saveIdentity"))

    const getIdentity = (accountId: string) =>
      getRecord(PeopleKeys.identity(accountId), decodeIdentity).pipe(Effect.withSpan("PeopleStore.getIdentity"))

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
