/**
 * What a Lambda cold start reads from DynamoDB (docs/lambda.md "Cold start"): the first start's
 * reads and nothing of the background jobs (the reservation sweeper's shards, plan renewals, the
 * order queue, dataset deletions), whose first pass waits for the end of the container's first
 * invocation (core/src/kernel/BackgroundJobs.ts), once its answer is handed back; then they run.
 */
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeDocumentClient } from "@model-platform/dynamodb-stores"
import { makeHandler } from "../src/Handler.ts"
import { type DynamoLocal, localClientConfig, startDynamoLocal, tableOn } from "../../dynamodb-stores/test/dynamoLocal.ts"
import { invoke } from "./support.ts"

let local: DynamoLocal | undefined
beforeAll(async () => {
  local = await startDynamoLocal()
}, 60_000)
afterAll(() => local?.stop())

/** The background jobs' queries, by the partition each reads. */
const JOB_PARTITIONS = /RESERVATIONS#PENDING|PLANRENEWING|ORDERQUEUE#UNFULFILLED|DOCOWNER#dataset_deletion/

/** A client that notes each command it sends: its name and its input, as sent. */
const recordingClient = () => {
  const client = makeDocumentClient(localClientConfig(local!.endpoint))
  const sent: Array<string> = []
  client.middlewareStack.add(
    (next, context) => (args) => {
      sent.push(`${context.commandName} ${JSON.stringify(args.input)}`)
      return next(args)
    },
    { step: "initialize" }
  )
  return { client, sent }
}

const eventually = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  return check()
}

describe("a Lambda cold start", () => {
  it("reads only what the first start needs; the background jobs make their first pass after the first invocation's answer", async () => {
    // The function's first container makes the owner; the cold start looked at is the next one.
    const made = await tableOn(local!)
    const first = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", dynamo: made })
    const owner = await first.firstStart()
    await first.dispose()
    made.client.destroy()
    const { tableName } = made

    const { client, sent } = recordingClient()
    // The jobs as src/lambda.ts turns them on.
    const platform = { sweepReservations: {}, renewPlans: {}, healthCheck: {} }
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", dynamo: { tableName, client }, platform })
    try {
      expect(await handler.firstStart()).toBeUndefined()
      // Time for a job's first pass to have started, were it not held back.
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(sent.filter((line) => JOB_PARTITIONS.test(line))).toEqual([])
      expect(sent.filter((line) => line.startsWith("QueryCommand"))).toEqual([])
      // The owner (the first account, then its record) and its identity, each read once.
      expect(sent.map((line) => line.split(" ")[0]), sent.join("\n")).toEqual(["GetItemCommand", "GetItemCommand", "GetItemCommand"])

      const me = await invoke(handler, new Request("https://api.platform.test/me", { headers: { authorization: `Bearer ${owner!.key.secret}` } }))
      expect(me.status).toBe(200)
      // The answer came back before any job's first read was sent.
      expect(sent.filter((line) => JOB_PARTITIONS.test(line))).toEqual([])
      // Then the jobs run: the sweeper's shards, renewals, the order queue and deletions are read.
      for (const partition of ["RESERVATIONS#PENDING", "PLANRENEWING", "ORDERQUEUE#UNFULFILLED", "DOCOWNER#dataset_deletion"]) {
        expect(await eventually(() => sent.some((line) => line.includes(partition))), `${partition} in:\n${sent.join("\n")}`).toBe(true)
      }
    } finally {
      await handler.dispose()
      client.destroy()
    }
  }, 60_000)
})
