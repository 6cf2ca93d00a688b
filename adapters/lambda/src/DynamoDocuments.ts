/**
 * The agent store port (core/src/ports/AgentStore.ts) on the one DynamoDB table of DynamoTable.ts
 * (no index), with the low-level commands and hand-written attributes of DynamoPlanStore.ts. The
 * items (`AgentKeys`), and how each rule of the port holds between processes:
 *
 * - An agent is one item keyed by its id (`AGENT#<id>`, sk `AGENT`): `record`, its encoded form
 *   (`encodeAgent`) as a JSON string, read back with `decodeAgent`; beside it the columns the
 *   store writes conditions on, `account_id` and `version` (a number), and `created_at`. `get` is
 *   one strongly consistent GetItem. A record that does not decode, or whose columns disagree
 *   with it, is a defect.
 * - Listing by account without an index: the partition `AGENTACCOUNT#<account id>` holds one item
 *   per agent (sk `<created_at>#<id>`, `agent_id` pointing at the agent). `insert` writes it and
 *   the agent item in one TransactWriteItems, the agent item conditioned `attribute_not_exists`:
 *   both or neither; a failed condition is a duplicate id, a defect. `list` queries the partition
 *   (strongly consistent, every page), reads the agents with BatchGetItem and sorts them newest
 *   first, then by id (`newestFirst`). created_at never changes, so the list item never does.
 * - `swap` is one PutItem of the whole agent item conditioned `version = :expected AND
 *   account_id = :account` (expected = next.version - 1): DynamoDB evaluates the condition and
 *   writes atomically, so of concurrent swaps from one version exactly one lands; a failed
 *   condition (another version, another account, no such agent) answers false and writes nothing.
 *
 * Input breaking `agentProblem` is a defect; so is any store failure.
 */
import { PutItemCommand } from "@aws-sdk/client-dynamodb"
import { type AgentRecord, decodeAgent, encodeAgent } from "@model-platform/core/agents/Records"
import { agentProblem, AgentStore } from "@model-platform/core/ports/AgentStore"
import { newestFirst } from "@model-platform/core/ports/PlanStore"
import { Effect, Layer, Schema } from "effect"
import { decode, IntAttr, type Item, keyOf, num, str, StringAttr } from "./DynamoAttributes.ts"
import { call, isConditionFailed, makeItemTable, retryConflictsBriefly } from "./DynamoErrors.ts"
import { DynamoConfig, type ItemKey } from "./DynamoTable.ts"

// ---------------------------------------------------------------------------------------------
// keys

/** The key of every agent store item. Ids are whole key values, never parsed back out of a key. */
export const AgentKeys = {
  /** The agent itself. */
  agent: (id: string): ItemKey => ({ pk: `AGENT#${id}`, sk: "AGENT" }),
  /** Points at the agent from its account's list; the sort key orders the list by creation. */
  accountAgent: (accountId: string, createdAt: string, id: string): ItemKey => ({
    pk: `AGENTACCOUNT#${accountId}`,
    sk: `${createdAt}#${id}`
  })
} as const

// ---------------------------------------------------------------------------------------------
// attribute values

const AgentItem = Schema.Struct({
  record: StringAttr,
  account_id: StringAttr,
  version: IntAttr,
  created_at: StringAttr
})

const AccountAgentItem = Schema.Struct({ agent_id: StringAttr })

const agentAttributes = (record: AgentRecord): Item => ({
  record: str(JSON.stringify(encodeAgent(record))),
  account_id: str(record.account_id),
  version: num(record.version),
  created_at: str(record.created_at)
})

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

// ---------------------------------------------------------------------------------------------
// the store

export const AgentStoreDynamo: Layer.Layer<AgentStore, never, DynamoConfig> = Layer.effect(
  AgentStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const { createItem, getItem, getItems, queryItems, transact } = makeItemTable(client, tableName, "AgentStore")
    const decodeAgentItem = decode(AgentItem)
    const decodeAccountAgentItem = decode(AccountAgentItem)

    const die = (operation: string, problem: string) => Effect.die(new Error(`AgentStore.${operation}: ${problem}`))

    /** A stored agent item read back: its record, which its columns must agree with. */
    const readAgent = Effect.fnUntraced(function*(item: Item) {
      const columns = yield* decodeAgentItem(item)
      const record = decodeAgent(parseJson(columns.record))
      if (record === undefined) return yield* die("read", "a stored agent does not decode")
      if (record.account_id !== columns.account_id || record.version !== columns.version || record.created_at !== columns.created_at) {
        return yield* die("read", `the columns of agent ${record.id} disagree with its record`)
      }
      return record
    })

    // The agent (0) and its entry in the account's list (1), both or neither.
    const insert = Effect.fn("AgentStore.insert")(function*(record: AgentRecord) {
      const problem = agentProblem(record, "insert")
      if (problem !== undefined) return yield* die("insert", problem)
      const result = yield* transact("insert", [
        createItem(AgentKeys.agent(record.id), agentAttributes(record)),
        createItem(AgentKeys.accountAgent(record.account_id, record.created_at, record.id), { agent_id: str(record.id) })
      ])
      if (result.committed) return
      if (result.failed.includes(0)) return yield* die("insert", `duplicate id ${record.id}`)
      return yield* die("insert", `the account's list item of agent ${record.id} exists`)
    })

    const get = (id: string) =>
      Effect.flatMap(getItem(AgentKeys.agent(id)), (item) => (item === undefined ? Effect.undefined : readAgent(item))).pipe(
        Effect.withSpan("AgentStore.get")
      )

    const list = Effect.fn("AgentStore.list")(function*(accountId: string) {
      const listed = yield* queryItems({
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": str(AgentKeys.accountAgent(accountId, "", "").pk) },
        ScanIndexForward: false
      })
      const ids: Array<string> = []
      for (const item of listed) ids.push((yield* decodeAccountAgentItem(item)).agent_id)
      const found: Array<AgentRecord> = []
      for (const item of yield* getItems(ids.map(AgentKeys.agent))) {
        const record = yield* readAgent(item)
        if (record.account_id !== accountId) return yield* die("list", `agent ${record.id} is listed under another account`)
        found.push(record)
      }
      if (found.length !== ids.length) return yield* die("list", `a listed agent of account ${accountId} is missing`)
      return found.sort(newestFirst)
    })

    const swap = Effect.fn("AgentStore.swap")(function*(next: AgentRecord) {
      const problem = agentProblem(next, "swap")
      if (problem !== undefined) return yield* die("swap", problem)
      const item = { ...agentAttributes(next), ...keyOf(AgentKeys.agent(next.id)) }
      return yield* call((signal) =>
        client.send(
          new PutItemCommand({
            TableName: tableName,
            Item: item,
            ConditionExpression: "#version = :expected AND #account = :account",
            ExpressionAttributeNames: { "#version": "version", "#account": "account_id" },
            ExpressionAttributeValues: { ":expected": num(next.version - 1), ":account": str(next.account_id) }
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

    return AgentStore.of({ insert, get, list, swap })
  })
)
