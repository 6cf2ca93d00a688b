/**
 * A DynamoDB endpoint that cannot be reached is StoreUnavailable
 * (adapters/dynamodb-stores/src/DynamoUnavailable.ts), so the platform answers 503
 * store_unavailable and the gateway retries its metering (docs/gateway.md "Metering that survives
 * faults"); other failures stay defects of their own.
 */
import { AccountStore } from "@model-platform/core/keys"
import { LedgerStore } from "@model-platform/core/ledger"
import { PeopleStore } from "@model-platform/core/accounts"
import { isStoreUnavailableCause } from "@model-platform/core/kernel"
import { Effect, Exit, Layer } from "effect"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { describe, expect, it } from "vitest"
import { DynamoPlatformStores } from "@model-platform/dynamodb-stores"
import { createTable, DynamoConfig, makeDocumentClient } from "@model-platform/dynamodb-stores"
import { isDynamoUnavailable } from "@model-platform/dynamodb-stores"
import { makeHandler } from "../src/Handler.ts"
import { localClientConfig, startOwnDynamoLocal } from "../../dynamodb-stores/test/dynamoLocal.ts"
import { invoke } from "./support.ts"

describe("DynamoDB unreachable", () => {
  it("every store operation dies with StoreUnavailable", async () => {
    // Nothing listens on port 1; one attempt, so the test does not wait for the SDK's backoff.
    const client = makeDocumentClient({ ...localClientConfig("http://127.0.0.1:1"), maxAttempts: 1 })
    const stores = DynamoPlatformStores.pipe(Layer.provide(DynamoConfig.layer({ tableName: "unreachable", client })))
    try {
      const exits: ReadonlyArray<Exit.Exit<unknown>> = await Effect.runPromise(Effect.all([
        Effect.exit(Effect.flatMap(AccountStore, (s) => s.get("acct_1"))),
        Effect.exit(Effect.flatMap(LedgerStore, (s) => s.balances("acct_1"))),
        Effect.exit(Effect.flatMap(PeopleStore, (s) => s.getPerson("per_1")))
      ]).pipe(Effect.provide(stores)))
      for (const exit of exits) expect(Exit.isFailure(exit) && isStoreUnavailableCause(exit.cause)).toBe(true)
    } finally {
      client.destroy()
    }
  })

  it("recognises throttling and unavailability, not a failed condition", () => {
    const named = (name: string) => Object.assign(new Error(name), { name })
    expect(isDynamoUnavailable(named("ProvisionedThroughputExceededException"))).toBe(true)
    expect(isDynamoUnavailable(named("ServiceUnavailable"))).toBe(true)
    expect(isDynamoUnavailable(Object.assign(new Error("connect"), { code: "ECONNREFUSED" }))).toBe(true)
    expect(isDynamoUnavailable(named("ConditionalCheckFailedException"))).toBe(false)
    expect(isDynamoUnavailable(named("ValidationException"))).toBe(false)
  })
})

describe("the Lambda handler while DynamoDB is down", () => {
  it("answers 503 store_unavailable on both surfaces, never 500", async () => {
    // Its own: the test stops it under the handler.
    const local = await startOwnDynamoLocal()
    const client = makeDocumentClient({ ...localClientConfig(local.endpoint), maxAttempts: 1 })
    const dynamo = { tableName: `platform-test-${crypto.randomUUID()}`, client }
    await Effect.runPromise(Effect.provideService(createTable, DynamoConfig, dynamo))
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", dynamo })
    try {
      const owner = await handler.firstStart()
      const auth = { authorization: `Bearer ${owner!.key.secret}` }
      expect((await invoke(handler, new Request("https://api.platform.test/me", { headers: auth }))).status).toBe(200)
      await local.stop()

      const me = await invoke(handler, new Request("https://api.platform.test/me", { headers: auth }))
      expect(me.status).toBe(503)
      expect(await me.json()).toEqual({ error: { code: "store_unavailable", message: expect.any(String) } })
      const model = fixtureCatalogue.models.find((m) => m.endpoint === "/v1/chat/completions")!.id
      const chat = await invoke(handler, new Request("https://api.platform.test/v1/chat/completions", {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] })
      }))
      expect(chat.status).toBe(503)
      expect(await chat.json()).toEqual({ error: { message: expect.any(String), type: "server_error", code: "store_unavailable" } })
    } finally {
      await handler.dispose()
      client.destroy()
      await local.stop()
    }
  }, 60_000)
})
