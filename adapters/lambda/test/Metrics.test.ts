/**
 * GET /metrics on the Lambda shell (docs/operations.md "Metrics"): a function has no loopback
 * client, so it answers only the bearer of METRICS_TOKEN (403 otherwise).
 */
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { parseExposition } from "@model-platform/test-harness/Prometheus"
import { Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type LambdaHandler, makeHandler } from "../src/Handler.ts"
import { invoke } from "./support.ts"

describe("GET /metrics on the Lambda shell", () => {
  let handler: LambdaHandler
  beforeAll(async () => {
    handler = makeHandler({
      catalogue: fixtureCatalogue,
      ownerEmail: "owner@test.local",
      stores: MemoryPlatformStores,
      platform: { metricsToken: Redacted.make("lambda-scrape-1") }
    })
    await handler.firstStart()
  })
  afterAll(() => handler.dispose())

  const metrics = (headers: Record<string, string> = {}) =>
    invoke(handler, new Request("https://api.platform.test/metrics", { headers }))

  it("403 without the token: no client of a function is on its loopback interface", async () => {
    const response = await metrics()
    expect(response.status).toBe(403)
    expect(await response.json()).toEqual({ error: { code: "forbidden", message: expect.stringContaining("METRICS_TOKEN") } })
  })

  it("200 with the token, with the requests it answered", async () => {
    expect((await invoke(handler, new Request("https://api.platform.test/models"))).status).toBe(200)
    const response = await metrics({ authorization: "Bearer lambda-scrape-1" })
    expect(response.status).toBe(200)
    const exposition = parseExposition(await response.text())
    expect(exposition.value("http_server_request_duration_seconds_count", {
      http_request_method: "GET", http_route: "/models", http_response_status_code: "200"
    })).toBe(1)
  })
})
