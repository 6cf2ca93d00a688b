/**
 * The agent store on DynamoDB Local: the shared contract suite (`agentStoreContract`, with its
 * concurrency test) on a fresh table, then what only this store has: its items (the agent as its
 * encoded record beside the columns conditions use, listed under the account's partition without
 * an index) and a stored record that does not decode being a defect. One DynamoDB Local serves
 * the file; it is stopped after it.
 */
import { GetItemCommand, PutItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb"
import { assert, layer } from "@effect/vitest"
import { encodeAgent } from "@model-platform/core/agents/Records"
import { generateId } from "@model-platform/core/Keys"
import { AgentStore } from "@model-platform/core/ports/AgentStore"
import { agentStoreContract, makeAgent } from "@model-platform/test-harness/AgentContract"
import { assertDies } from "@model-platform/test-harness/ContractSupport"
import { Effect, Layer } from "effect"
import { AgentKeys, AgentStoreDynamo } from "../src/DynamoAgentStore.ts"
import { DynamoConfig, type ItemKey } from "../src/DynamoTable.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("agents-test")
const FreshTable = freshTable()

agentStoreContract("AgentStoreDynamo on DynamoDB Local", AgentStoreDynamo.pipe(Layer.provide(FreshTable)))

// ---------------------------------------------------------------------------------------------
// this store's own items

const StoreAndTable = AgentStoreDynamo.pipe(Layer.provideMerge(FreshTable))

layer(StoreAndTable, { excludeTestServices: true, timeout: "60 seconds" })("AgentStoreDynamo items", (it) => {
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

  const accountSortKeys = (accountId: string) =>
    Effect.gen(function*() {
      const { client, tableName } = yield* DynamoConfig
      const output = yield* Effect.promise(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: "pk = :pk",
            ExpressionAttributeValues: { ":pk": { S: AgentKeys.accountAgent(accountId, "", "").pk } },
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

  it.effect("an agent: its encoded record and columns in one item by id, one list item in its account's partition", () =>
    Effect.gen(function*() {
      const store = yield* AgentStore
      const account = yield* generateId("acct")
      const agent = yield* makeAgent(account)
      yield* store.insert(agent)
      const stored = yield* rawItem(AgentKeys.agent(agent.id))
      assert.deepStrictEqual(JSON.parse(stored?.record?.S ?? "null"), encodeAgent(agent))
      assert.deepStrictEqual(
        [stored?.account_id, stored?.version, stored?.created_at],
        [{ S: account }, { N: "0" }, { S: agent.created_at }]
      )
      assert.deepStrictEqual(yield* accountSortKeys(account), [`${agent.created_at}#${agent.id}`])
      assert.strictEqual((yield* rawItem(AgentKeys.accountAgent(account, agent.created_at, agent.id)))?.agent_id?.S, agent.id)
      // A swap rewrites the agent's item (its version column too); the list item stays as it is.
      assert.isTrue(yield* store.swap({ ...agent, name: "renamed", version: 1 }))
      assert.deepStrictEqual((yield* rawItem(AgentKeys.agent(agent.id)))?.version, { N: "1" })
      assert.deepStrictEqual(yield* store.list(account), [{ ...agent, name: "renamed", version: 1 }])
      assert.lengthOf(yield* accountSortKeys(account), 1)
    }))

  it.effect("a stored record that does not decode is a defect, by id and in its account's list", () =>
    Effect.gen(function*() {
      const store = yield* AgentStore
      const account = yield* generateId("acct")
      const agent = yield* makeAgent(account)
      yield* store.insert(agent)
      const broken = { ...(encodeAgent(agent) as Record<string, unknown>), status: "sleeping" }
      yield* putRaw(AgentKeys.agent(agent.id), {
        record: { S: JSON.stringify(broken) },
        account_id: { S: account },
        version: { N: "0" },
        created_at: { S: agent.created_at }
      })
      yield* assertDies(store.get(agent.id), "a record that does not decode")
      yield* assertDies(store.list(account), "a listed record that does not decode")
      yield* putRaw(AgentKeys.agent(agent.id), {
        record: { S: "{not json" },
        account_id: { S: account },
        version: { N: "0" },
        created_at: { S: agent.created_at }
      })
      yield* assertDies(store.get(agent.id), "a record that is not JSON")
    }))
})
