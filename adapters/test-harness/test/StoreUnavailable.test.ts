/**
 * While a store cannot be reached (its adapter marks the failure StoreUnavailable), every request
 * that needs it answers 503 `store_unavailable` in its surface's shape with Retry-After, never 500
 * (issue 10, finding 11; docs/gateway.md "Metering that survives faults").
 */
import { GatewayStore } from "@model-platform/core/gateway"
import { KeyStore } from "@model-platform/core/keys"
import { StoreUnavailable } from "@model-platform/core/kernel"
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import type { ShellUnderTest } from "../src/HttpSuite.ts"
import { startInProcess } from "../src/InProcess.ts"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"

const down = (store: string) => Effect.die(new StoreUnavailable(store, new Error("connect ECONNREFUSED 10.0.0.7:5432")))

/** Switches: which stores are down now. */
const outage = { keys: false, gateway: false }

const FlakyStores = Layer.mergeAll(
  Layer.effect(KeyStore, Effect.map(KeyStore, ({ findCaller: _withoutJoin, ...store }) => KeyStore.of({
    ...store,
    findByHash: (hash) => outage.keys ? down("KeyStore.findByHash") : store.findByHash(hash)
  }))),
  Layer.effect(GatewayStore, Effect.map(GatewayStore, (store) => GatewayStore.of({
    admit: (admissions) => outage.gateway ? down("GatewayStore.admit") : store.admit(admissions),
    commit: (calls) => store.commit(calls)
  })))
).pipe(Layer.provide(MemoryPlatformStores))

describe("a store that cannot be reached", () => {
  let platform: ShellUnderTest
  beforeAll(async () => {
    platform = await startInProcess(fixtureCatalogue, FlakyStores)
  })
  afterAll(() => platform.close())

  const owner = () => ({ authorization: `Bearer ${platform.ownerSecret}` })

  it("management: 503 store_unavailable in the platform shape, with Retry-After", async () => {
    outage.keys = true
    try {
      const response = await platform.fetch("/me", { headers: owner() })
      const text = await response.text()
      expect(response.status, text).toBe(503)
      expect(response.headers.get("retry-after")).toBe("2")
      expect(JSON.parse(text)).toEqual({ error: { code: "store_unavailable", message: expect.any(String) } })
      expect(text).not.toContain("ECONNREFUSED")
    } finally {
      outage.keys = false
    }
    expect((await platform.fetch("/me", { headers: owner() })).status).toBe(200)
  })

  it("inference, the key lookup down: 503 store_unavailable in the inference shape", async () => {
    outage.keys = true
    try {
      const response = await platform.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { ...owner(), "content-type": "application/json" },
        body: JSON.stringify({ model: fixtureCatalogue.models.find((m) => m.endpoint === "/v1/chat/completions")!.id, messages: [{ role: "user", content: "hi" }] })
      })
      const text = await response.text()
      expect(response.status, text).toBe(503)
      expect(JSON.parse(text)).toEqual({ error: { message: expect.any(String), type: "server_error", code: "store_unavailable" } })
    } finally {
      outage.keys = false
    }
  })
})
