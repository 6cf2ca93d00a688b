/**
 * The document store on DynamoDB Local: the shared contract suite for agents and approvals
 * (`documentStoresContract`, with its concurrency test and the two kinds with one id never
 * meeting) on a fresh table, then what only this store has: its items (a record as its encoded
 * form beside the columns conditions use, keyed by kind and id, listed under its kind's owner
 * partition without an index, both gone after a remove), the DocumentStores port on the same
 * items, and a stored record that does not decode being a defect. One
 * DynamoDB Local serves the file; it is stopped after it.
 */
import { GetItemCommand, PutItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb"
import { assert, layer } from "@effect/vitest"
import { ApprovalDocuments, ApprovalStore } from "@model-platform/core/accounts"
import { AgentDocuments, AgentStore, encodeAgent } from "@model-platform/core/agents"
import { DocumentStores, generateId } from "@model-platform/core/kernel"
import { AgentDocumentsContract, makeAgent } from "@model-platform/contract-kit/AgentContract"
import { ApprovalDocumentsContract, makeApproval } from "@model-platform/contract-kit/ApprovalContract"
import { assertDies } from "@model-platform/contract-kit/ContractSupport"
import { documentStoresContract } from "@model-platform/contract-kit/DocumentContract"
import { Effect, Layer } from "effect"
import { AgentStoreDynamo, ApprovalStoreDynamo, DocumentKeys, DocumentStoresDynamo } from "../src/DynamoDocuments.ts"
import { DynamoConfig, type ItemKey } from "../src/DynamoTable.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("documents-test")
const FreshTable = freshTable()
const Stores = Layer.mergeAll(AgentStoreDynamo, ApprovalStoreDynamo, DocumentStoresDynamo)

documentStoresContract(
  "AgentStoreDynamo + ApprovalStoreDynamo + DocumentStoresDynamo on DynamoDB Local",
  Stores.pipe(Layer.provide(FreshTable)),
  [AgentDocumentsContract, ApprovalDocumentsContract]
)

// ---------------------------------------------------------------------------------------------
// this store's own items

const StoresAndTable = Stores.pipe(Layer.provideMerge(FreshTable))

layer(StoresAndTable, { excludeTestServices: true, timeout: "60 seconds" })("DocumentStore items on DynamoDB", (it) => {
  const rawItem = (key: ItemKey) =>
    Effect.gen(function*() {
      const { client, tableName } = yield* DynamoConfig
      const output = yield* Effect.promise(() =>
        client.send(
          new GetItemCommand({ TableName: tableName, Key: { pk: { S: key.pk }, sk: { S: key.sk } }, ConsistentRead: true })
        )
      )
      return output.Item
    })

  const ownerSortKeys = (kind: string, owner: string) =>
    Effect.gen(function*() {
      const { client, tableName } = yield* DynamoConfig
      const output = yield* Effect.promise(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: "pk = :pk",
            ExpressionAttributeValues: { ":pk": { S: DocumentKeys.ownerDocument(kind, owner, "", "").pk } },
            ConsistentRead: true
          })
        )
      )
      return (output.Items ?? []).map((item) => item.sk?.S)
    })

  const putRaw = (key: ItemKey, attributes: Record<string, { S: string } | { N: string }>) =>
    Effect.gen(function*() {
      const { client, tableName } = yield* DynamoConfig
      yield* Effect.promise(() =>
        client.send(new PutItemCommand({ TableName: tableName, Item: { ...attributes, pk: { S: key.pk }, sk: { S: key.sk } } }))
      )
    })

  it.effect("an agent: its encoded record and columns in one item by kind and id, one list item in its owner's partition", () =>
    Effect.gen(function*() {
      const store = yield* AgentStore
      const account = yield* generateId("acct")
      const agent = yield* makeAgent(account)
      yield* store.insert(agent)
      assert.deepStrictEqual(DocumentKeys.document("agent", agent.id), { pk: `DOC#agent#${agent.id}`, sk: "DOC" })
      const stored = yield* rawItem(DocumentKeys.document("agent", agent.id))
      assert.deepStrictEqual(JSON.parse(stored?.record?.S ?? "null"), encodeAgent(agent))
      assert.deepStrictEqual(
        [stored?.owner_id, stored?.version, stored?.created_at],
        [{ S: account }, { N: "0" }, { S: agent.created_at }]
      )
      assert.deepStrictEqual(yield* ownerSortKeys("agent", account), [`${agent.created_at}#${agent.id}`])
      const listItem = yield* rawItem(DocumentKeys.ownerDocument("agent", account, agent.created_at, agent.id))
      assert.strictEqual(listItem?.pk?.S, `DOCOWNER#agent#${account}`)
      assert.strictEqual(listItem?.id?.S, agent.id)
      // A swap rewrites the record's item (its version column too); the list item stays as it is.
      assert.isTrue(yield* store.swap({ ...agent, name: "renamed", version: 1 }))
      assert.deepStrictEqual((yield* rawItem(DocumentKeys.document("agent", agent.id)))?.version, { N: "1" })
      assert.deepStrictEqual(yield* store.list(account), [{ ...agent, name: "renamed", version: 1 }])
      assert.lengthOf(yield* ownerSortKeys("agent", account), 1)
    }))

  it.effect("an approval: the same items under its own kind, owned by the person who approves it", () =>
    Effect.gen(function*() {
      const store = yield* ApprovalStore
      const sub = yield* generateId("person")
      const approval = yield* makeApproval(sub)
      yield* store.insert(approval)
      const stored = yield* rawItem(DocumentKeys.document("approval", approval.id))
      assert.deepStrictEqual(JSON.parse(stored?.record?.S ?? "null"), ApprovalDocuments.encode(approval))
      assert.deepStrictEqual(stored?.owner_id, { S: sub })
      assert.deepStrictEqual(yield* ownerSortKeys("approval", sub), [`${approval.created_at}#${approval.id}`])
      assert.isUndefined(yield* rawItem(DocumentKeys.document("agent", approval.id)))
      assert.deepStrictEqual(yield* ownerSortKeys("agent", sub), [])
    }))

  it.effect("a remove deletes both items; a stale one deletes neither", () =>
    Effect.gen(function*() {
      const store = yield* AgentStore
      const account = yield* generateId("acct")
      const agent = yield* makeAgent(account)
      yield* store.insert(agent)
      const moved = { ...agent, name: "moved", version: 1 }
      assert.isTrue(yield* store.swap(moved))
      assert.isFalse(yield* store.remove(agent))
      // The same version with another created_at is not the stored record (the list item's key).
      assert.isFalse(yield* store.remove({ ...moved, created_at: "2026-02-01T00:00:00.000Z" }))
      assert.isDefined(yield* rawItem(DocumentKeys.document("agent", agent.id)))
      assert.lengthOf(yield* ownerSortKeys("agent", account), 1)
      assert.isTrue(yield* store.remove(moved))
      assert.isUndefined(yield* rawItem(DocumentKeys.document("agent", agent.id)))
      assert.deepStrictEqual(yield* ownerSortKeys("agent", account), [])
    }))

  it.effect("DocumentStores: a kind's store is on the same items as its own port's; a name with # is refused", () =>
    Effect.gen(function*() {
      const stores = yield* DocumentStores
      const agents = stores.of(AgentDocuments)
      const agent = yield* makeAgent(yield* generateId("acct"))
      yield* (yield* AgentStore).insert(agent)
      assert.deepStrictEqual(yield* agents.get(agent.id), agent)
      assert.isTrue(yield* agents.remove(agent))
      assert.isUndefined(yield* (yield* AgentStore).get(agent.id))
      yield* assertDies(stores.of({ ...AgentDocuments, kind: "a#b" }).get(agent.id), "a kind's name with #")
    }))

  it.effect("a stored record that does not decode is a defect, by id and in its owner's list", () =>
    Effect.gen(function*() {
      const store = yield* AgentStore
      const account = yield* generateId("acct")
      const agent = yield* makeAgent(account)
      yield* store.insert(agent)
      const columns = { owner_id: { S: account }, version: { N: "0" }, created_at: { S: agent.created_at } }
      const broken = { ...(encodeAgent(agent) as Record<string, unknown>), status: "sleeping" }
      yield* putRaw(DocumentKeys.document("agent", agent.id), { record: { S: JSON.stringify(broken) }, ...columns })
      yield* assertDies(store.get(agent.id), "a record that does not decode")
      yield* assertDies(store.list(account), "a listed record that does not decode")
      yield* putRaw(DocumentKeys.document("agent", agent.id), { record: { S: "{not json" }, ...columns })
      yield* assertDies(store.get(agent.id), "a record that is not JSON")
      // Columns that disagree with the record.
      yield* putRaw(DocumentKeys.document("agent", agent.id), {
        record: { S: JSON.stringify(encodeAgent(agent)) },
        ...columns,
        version: { N: "4" }
      })
      yield* assertDies(store.get(agent.id), "a version column that disagrees with the record")
    }))
})
