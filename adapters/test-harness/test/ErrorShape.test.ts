/**
 * A defect (a store that breaks) answers 500 in the surface's shape with a generic message:
 * nothing of the failure's internals reaches the client.
 */
import { KeyStore } from "@model-platform/core/keys"
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import type { ShellUnderTest } from "../src/HttpSuite.ts"
import { startInProcess } from "../src/InProcess.ts"
import { AccountStoreMemory, IdempotencyStoreMemory, KeyStoreMemory } from "@model-platform/memory-stores/MemoryStores"

const SECRET_DETAIL = "connection to db-internal-7.corp refused"

/** The memory stores, except that looking a key up by hash dies. */
const BrokenKeyLookup = Layer.mergeAll(
  AccountStoreMemory,
  IdempotencyStoreMemory,
  Layer.effect(
    KeyStore,
    Effect.map(KeyStore, (store) => KeyStore.of({ ...store, findByHash: () => Effect.die(new Error(SECRET_DETAIL)) }))
  ).pipe(Layer.provide(KeyStoreMemory))
)

describe("defects", () => {
  let platform: ShellUnderTest
  beforeAll(async () => {
    platform = await startInProcess(fixtureCatalogue, BrokenKeyLookup)
  })
  afterAll(() => platform.close())

  it("answer 500 internal_error without internals", async () => {
    const response = await platform.fetch("/me", { headers: { authorization: `Bearer mpk_${"B".repeat(43)}` } })
    const text = await response.text()
    expect(response.status).toBe(500)
    expect(JSON.parse(text)).toEqual({ error: { code: "internal_error", message: expect.any(String) } })
    expect(text).not.toContain("db-internal")
    expect(text).not.toContain("Error")
  })
})
