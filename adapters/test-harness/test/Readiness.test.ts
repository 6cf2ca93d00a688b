/**
 * GET /health/ready answers 503 in the platform's shape, its message saying why, while the
 * platform drains and while the store cannot be reached or does not answer in time; liveness
 * stays 200 throughout (docs/operations.md "Probes").
 */
import { AccountStore } from "@model-platform/core/keys"
import { StoreUnavailable } from "@model-platform/core/kernel"
import { Lifecycle, READY_STORE_TIMEOUT_MS } from "@model-platform/core/http"
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import type { ShellUnderTest } from "../src/HttpSuite.ts"
import { startInProcess } from "../src/InProcess.ts"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"

/** What the account store does now. */
const store = { mode: "up" as "up" | "down" | "hung" }

const FlakyAccounts = Layer.effect(AccountStore, Effect.map(AccountStore, (accounts) => AccountStore.of({
  ...accounts,
  get: (id) =>
    store.mode === "down"
      ? Effect.die(new StoreUnavailable("AccountStore.get", new Error("connect ECONNREFUSED 10.0.0.7:5432")))
      : store.mode === "hung"
      ? Effect.never
      : accounts.get(id)
}))).pipe(Layer.provide(MemoryPlatformStores))

describe("readiness", () => {
  let platform: ShellUnderTest
  beforeAll(async () => {
    platform = await startInProcess(fixtureCatalogue, FlakyAccounts)
  })
  afterAll(() => platform.close())

  const probe = async (path: string) => {
    const response = await platform.fetch(path)
    return { status: response.status, body: await response.json() as any }
  }

  it("503 store_unavailable while the store cannot be reached, without naming its address; 200 again once it can", async () => {
    expect((await probe("/health/ready")).status).toBe(200)
    store.mode = "down"
    try {
      const down = await probe("/health/ready")
      expect(down).toEqual({ status: 503, body: { error: { code: "store_unavailable", message: expect.stringContaining("cannot be reached") } } })
      expect(JSON.stringify(down.body)).not.toContain("10.0.0.7")
      expect((await probe("/health/live")).status).toBe(200)
    } finally {
      store.mode = "up"
    }
    expect((await probe("/health/ready")).status).toBe(200)
  })

  it("503 store_unavailable when the store does not answer in time", async () => {
    store.mode = "hung"
    try {
      const started = Date.now()
      const hung = await probe("/health/ready")
      expect(hung).toEqual({ status: 503, body: { error: { code: "store_unavailable", message: expect.stringContaining(`${READY_STORE_TIMEOUT_MS} ms`) } } })
      expect(Date.now() - started).toBeLessThan(READY_STORE_TIMEOUT_MS + 2_000)
    } finally {
      store.mode = "up"
    }
  })

  it("503 draining from the moment the platform drains, with the reason; liveness stays 200", async () => {
    // The seed runs on the platform's own services (its Lifecycle among them).
    await platform.seed!(Effect.flatMap(Lifecycle, (lifecycle) => lifecycle.drain("SIGTERM")) as never)
    const draining = await probe("/health/ready")
    expect(draining).toEqual({ status: 503, body: { error: { code: "draining", message: expect.stringContaining("SIGTERM") } } })
    expect((await probe("/health/live")).status).toBe(200)
  })
})
