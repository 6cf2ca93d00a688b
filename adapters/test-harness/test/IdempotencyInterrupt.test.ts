/**
 * A request that is interrupted (the client went away, a Lambda deadline) must not leave its
 * Idempotency-Key stuck "in progress": the retry runs.
 */
import { KeyStore } from "@model-platform/core/keys"
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import type { ShellUnderTest } from "../src/HttpSuite.ts"
import { startInProcess } from "../src/InProcess.ts"
import { AccountStoreMemory, IdempotencyStoreMemory, KeyStoreMemory } from "@model-platform/memory-stores/MemoryStores"

/** Memory stores whose key inserts take 300 ms, so a request can be cut off mid-write. */
const SlowKeyInserts = Layer.mergeAll(
  AccountStoreMemory,
  IdempotencyStoreMemory,
  Layer.effect(
    KeyStore,
    Effect.map(KeyStore, (store) => KeyStore.of({ ...store, insert: (key) => Effect.delay(store.insert(key), "300 millis") }))
  ).pipe(Layer.provide(KeyStoreMemory))
)

describe("idempotency and interrupted requests", () => {
  let platform: ShellUnderTest
  beforeAll(async () => {
    platform = await startInProcess(fixtureCatalogue, SlowKeyInserts)
  })
  afterAll(() => platform.close())

  const post = (signal?: AbortSignal) =>
    platform.fetch("/keys", {
      method: "POST",
      headers: {
        authorization: `Bearer ${platform.ownerSecret}`,
        "content-type": "application/json",
        "idempotency-key": "interrupted-once"
      },
      body: JSON.stringify({ name: "slow" }),
      ...(signal === undefined ? {} : { signal })
    })

  it("releases the claim, so the retry creates the key", async () => {
    const controller = new AbortController()
    const first = post(controller.signal).catch(() => undefined)
    await new Promise((resolve) => setTimeout(resolve, 50))
    controller.abort()
    await first
    await new Promise((resolve) => setTimeout(resolve, 400))
    const retry = await post()
    expect(retry.status, await retry.clone().text()).toBe(200)
    expect(retry.headers.get("idempotent-replayed")).toBeNull()
  })
})
