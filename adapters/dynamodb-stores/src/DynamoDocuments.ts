/**
 * The document store port (core/src/kernel/Documents.ts) on the one DynamoDB table of
 * DynamoTable.ts (no index), one generic store for every kind of record: `documentStoreDynamo(kind)`;
 * `AgentStoreDynamo` and `ApprovalStoreDynamo` are it for their kinds, `DocumentStoresDynamo` (the
 * DocumentStores port) for any kind. Low-level commands and
 * hand-written attributes, as DynamoPlanStore.ts. Every key carries the kind, so records of two
 * kinds never meet, even with the same id. The items (`DocumentKeys`), and how each rule of the
 * port holds between processes:
 *
 * - A record is one item keyed by its kind and id (`DOC#<kind>#<id>`, sk `DOC`): `record`, its
 *   encoded form (the kind's `encode`) as a JSON string, read back with the kind's `decode`;
 *   beside it the columns the store writes conditions on, `owner_id` and `version` (a number),
 *   and `created_at`. `get` is one strongly consistent GetItem. A record that does not decode, or
 *   whose columns disagree with it, is a defect.
 * - Listing by owner without an index: the partition `DOCOWNER#<kind>#<owner>` holds one item per
 *   record (sk `<created_at>#<id>`, `id` pointing at the record). `insert` writes it and the
 *   record's item in one TransactWriteItems, the record's item conditioned `attribute_not_exists`:
 *   both or neither; a failed condition is a duplicate id, a defect. `list` queries the partition
 *   (strongly consistent, every page), reads the records with BatchGetItem and sorts them newest
 *   first, then by id (`newestFirst`); a record removed between the two reads is left out.
 *   created_at never changes, so the list item never does.
 * - `swap` is one PutItem of the whole record item conditioned `version = :expected AND
 *   owner_id = :owner` (expected = next.version - 1): DynamoDB evaluates the condition and
 *   writes atomically, so of concurrent swaps from one version exactly one lands; a failed
 *   condition (another version, another owner, no such record) answers false and writes nothing.
 * - `remove` deletes the record's item and its owner's list item in one TransactWriteItems, the
 *   record's item conditioned `version = :version AND owner_id = :owner AND created_at =
 *   :created_at` (the list item's key is made from the owner and created_at): both or neither. A
 *   failed condition (another version, another owner, gone already) answers false and deletes
 *   nothing; of concurrent removes of one version exactly one commits.
 *
 * Input `documentProblem` refuses is a defect; so is any store failure. A kind's name holds no
 * `#` (it ends a key's prefix); ids are whole key values, never parsed back out of a key.
 */
import { PutItemCommand } from "@aws-sdk/client-dynamodb"
import { ApprovalDocuments, ApprovalStore } from "@model-platform/core/accounts"
import { AgentDocuments, AgentStore } from "@model-platform/core/agents"
import {
  type DocumentKind,
  documentProblem,
  type DocumentStore,
  DocumentStores,
  type VersionedRecord
} from "@model-platform/core/kernel"
import { newestFirst } from "@model-platform/core/plans"
import { Effect, Layer, Schema } from "effect"
import { decode, IntAttr, type Item, keyOf, num, str, StringAttr } from "./DynamoAttributes.ts"
import { call, isConditionFailed, makeItemTable, retryConflictsBriefly } from "./DynamoErrors.ts"
import { DynamoConfig, type DynamoSettings, type ItemKey } from "./DynamoTable.ts"

// ---------------------------------------------------------------------------------------------
// keys

/** The key of every document store item. */
export const DocumentKeys = {
  /** The record itself. */
  document: (kind: string, id: string): ItemKey => ({ pk: `DOC#${kind}#${id}`, sk: "DOC" }),
  /** Points at the record from its owner's list; the sort key orders the list by creation. */
  ownerDocument: (kind: string, owner: string, createdAt: string, id: string): ItemKey => ({
    pk: `DOCOWNER#${kind}#${owner}`,
    sk: `${createdAt}#${id}`
  })
} as const

// ---------------------------------------------------------------------------------------------
// attribute values

const DocumentItem = Schema.Struct({
  record: StringAttr,
  owner_id: StringAttr,
  version: IntAttr,
  created_at: StringAttr
})

const OwnerDocumentItem = Schema.Struct({ id: StringAttr })

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

// ---------------------------------------------------------------------------------------------
// the store

/** A kind's name ends a key's prefix: non-empty, without "#". */
const kindNameProblem = (kind: DocumentKind<any>): string | undefined =>
  kind.kind.length === 0 || kind.kind.includes("#")
    ? `DocumentStore(${kind.kind}): a kind's name is non-empty and holds no "#"`
    : undefined

/** A store whose every operation is the defect `problem`. */
const refused = <R extends VersionedRecord>(problem: string): DocumentStore<R> => {
  const die = () => Effect.die(new Error(problem))
  return { insert: die, get: die, list: die, swap: die, remove: die }
}

/** The store of `kind`'s records on the table of `settings` (whose name `kindNameProblem` accepts). */
const storeOn = <R extends VersionedRecord>({ client, tableName }: DynamoSettings, kind: DocumentKind<R>): DocumentStore<R> => {
  const name = `DocumentStore(${kind.kind})`
  const { createItem, deleteItem, getItem, getItems, queryItems, transact } = makeItemTable(client, tableName, name)
  const decodeDocumentItem = decode(DocumentItem)
  const decodeOwnerDocumentItem = decode(OwnerDocumentItem)
  const recordKey = (id: string) => DocumentKeys.document(kind.kind, id)

  const die = (operation: string, problem: string) => Effect.die(new Error(`${name}.${operation}: ${problem}`))

  const attributes = (record: R): Item => ({
    record: str(JSON.stringify(kind.encode(record))),
    owner_id: str(kind.owner(record)),
    version: num(record.version),
    created_at: str(record.created_at)
  })

  /** A stored record's item read back: its record, which its columns must agree with. */
  const readRecord = Effect.fnUntraced(function*(item: Item) {
    const columns = yield* decodeDocumentItem(item)
    const record = kind.decode(parseJson(columns.record))
    if (record === undefined) return yield* die("read", `a stored ${kind.kind} does not decode`)
    if (kind.owner(record) !== columns.owner_id || record.version !== columns.version || record.created_at !== columns.created_at) {
      return yield* die("read", `the columns of ${kind.kind} ${record.id} disagree with its record`)
    }
    return record
  })

  // The record (0) and its entry in the owner's list (1), both or neither.
  const insert = Effect.fn(`${name}.insert`)(function*(record: R) {
    const problem = documentProblem(kind, record, "insert")
    if (problem !== undefined) return yield* die("insert", problem)
    const owner = kind.owner(record)
    const result = yield* transact("insert", [
      createItem(recordKey(record.id), attributes(record)),
      createItem(DocumentKeys.ownerDocument(kind.kind, owner, record.created_at, record.id), { id: str(record.id) })
    ])
    if (result.committed) return
    if (result.failed.includes(0)) return yield* die("insert", `duplicate id ${record.id}`)
    return yield* die("insert", `the owner's list item of ${kind.kind} ${record.id} exists`)
  })

  const get = (id: string) =>
    Effect.flatMap(getItem(recordKey(id)), (item) => (item === undefined ? Effect.undefined : readRecord(item))).pipe(
      Effect.withSpan(`${name}.get`)
    )

  const list = Effect.fn(`${name}.list`)(function*(owner: string) {
    const listed = yield* queryItems({
      KeyConditionExpression: "pk = :pk",
      ExpressionAttributeValues: { ":pk": str(DocumentKeys.ownerDocument(kind.kind, owner, "", "").pk) },
      ScanIndexForward: false
    })
    const ids: Array<string> = []
    for (const item of listed) ids.push((yield* decodeOwnerDocumentItem(item)).id)
    const found: Array<R> = []
    for (const item of yield* getItems(ids.map(recordKey))) {
      const record = yield* readRecord(item)
      if (kind.owner(record) !== owner) return yield* die("list", `${kind.kind} ${record.id} is listed under another owner`)
      found.push(record)
    }
    // A record missing here was removed after the query (remove takes both items at once): the
    // list is then as it is after that removal.
    return found.sort(newestFirst)
  })

  const swap = Effect.fn(`${name}.swap`)(function*(next: R) {
    const problem = documentProblem(kind, next, "swap")
    if (problem !== undefined) return yield* die("swap", problem)
    const item = { ...attributes(next), ...keyOf(recordKey(next.id)) }
    return yield* call((signal) =>
      client.send(
        new PutItemCommand({
          TableName: tableName,
          Item: item,
          ConditionExpression: "#version = :expected AND #owner = :owner",
          ExpressionAttributeNames: { "#version": "version", "#owner": "owner_id" },
          ExpressionAttributeValues: { ":expected": num(next.version - 1), ":owner": str(kind.owner(next)) }
        }),
        { abortSignal: signal }
      )
    ).pipe(
      retryConflictsBriefly,
      Effect.as(true),
      Effect.catchIf(isConditionFailed, () => Effect.succeed(false)),
      Effect.orDie
    )
  })

  // The record, if still as `record` (the list item's key is made from its columns), and its
  // entry in the owner's list: both or neither.
  const remove = Effect.fn(`${name}.remove`)(function*(record: R) {
    const owner = kind.owner(record)
    const result = yield* transact("remove", [
      {
        Delete: {
          TableName: tableName,
          Key: keyOf(recordKey(record.id)),
          ConditionExpression: "#version = :version AND #owner = :owner AND #created = :created",
          ExpressionAttributeNames: { "#version": "version", "#owner": "owner_id", "#created": "created_at" },
          ExpressionAttributeValues: { ":version": num(record.version), ":owner": str(owner), ":created": str(record.created_at) }
        }
      },
      deleteItem(DocumentKeys.ownerDocument(kind.kind, owner, record.created_at, record.id))
    ])
    return result.committed
  })

  return { insert, get, list, swap, remove }
}

/** The store of `kind`'s records on the table. */
export const documentStoreDynamo = <R extends VersionedRecord>(
  kind: DocumentKind<R>
): Effect.Effect<DocumentStore<R>, never, DynamoConfig> =>
  Effect.suspend(() => {
    const problem = kindNameProblem(kind)
    return problem === undefined ? Effect.map(DynamoConfig, (settings) => storeOn(settings, kind)) : Effect.die(new Error(problem))
  })

/** The agent store port (core/src/agents/AgentStore.ts) on DynamoDB. */
export const AgentStoreDynamo: Layer.Layer<AgentStore, never, DynamoConfig> = Layer.effect(
  AgentStore,
  Effect.map(documentStoreDynamo(AgentDocuments), AgentStore.of)
)

/** The approval store port (core/src/accounts/ApprovalStore.ts) on DynamoDB. */
export const ApprovalStoreDynamo: Layer.Layer<ApprovalStore, never, DynamoConfig> = Layer.effect(
  ApprovalStore,
  Effect.map(documentStoreDynamo(ApprovalDocuments), ApprovalStore.of)
)

/**
 * The DocumentStores port (core/src/kernel/DocumentStores.ts) on DynamoDB: every kind on the one
 * table; a kind's store is made on its first `of` and kept for the next. Every operation of a
 * kind whose name `kindNameProblem` refuses is a defect.
 */
export const DocumentStoresDynamo: Layer.Layer<DocumentStores, never, DynamoConfig> = Layer.effect(
  DocumentStores,
  Effect.map(DynamoConfig, (settings) => {
    const made = new Map<string, { readonly kind: DocumentKind<any>; readonly store: DocumentStore<any> }>()
    return DocumentStores.of({
      of: <R extends VersionedRecord>(kind: DocumentKind<R>): DocumentStore<R> => {
        const known = made.get(kind.kind)
        if (known !== undefined && known.kind === kind) return known.store
        const problem = kindNameProblem(kind)
        const store = problem === undefined ? storeOn(settings, kind) : refused<R>(problem)
        if (known === undefined) made.set(kind.kind, { kind, store })
        return store
      }
    })
  })
)
