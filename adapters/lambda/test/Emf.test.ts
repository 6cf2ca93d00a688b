/**
 * The Lambda shell writes the platform's metrics as CloudWatch embedded metric format lines after
 * each invocation (docs/operations.md "Metrics"): a chat call's duration, time to first token,
 * tokens and credits (exactly its usage record's), the HTTP request by route and status, each
 * line a valid EMF document whose metrics and dimensions are on it; the next invocation's lines
 * say only what changed since.
 */
import { LedgerStore } from "@model-platform/core/ledger"
import { UsageStore } from "@model-platform/core/billing"
import { loggingLayer } from "@model-platform/core/observability"
import { FUZZ_MACHINE_MODELS, fuzzCatalogue } from "@model-platform/test-harness/FuzzCatalogue"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { startReferenceMachine, type ReferenceMachine } from "../../reference-machine/src/ReferenceMachine.ts"
import { type LambdaHandler, makeHandler } from "../src/Handler.ts"
import { invoke } from "./support.ts"

interface EmfLine {
  readonly _aws: {
    readonly Timestamp: number
    readonly CloudWatchMetrics: ReadonlyArray<{
      readonly Namespace: string
      readonly Dimensions: ReadonlyArray<ReadonlyArray<string>>
      readonly Metrics: ReadonlyArray<{ readonly Name: string; readonly Unit: string }>
    }>
  }
  readonly [key: string]: unknown
}

describe("EMF lines from the Lambda shell", () => {
  let machine: ReferenceMachine
  let stores: ManagedRuntime.ManagedRuntime<any, never>
  let handler: LambdaHandler
  let secret: string
  let accountId: string
  const written: Array<string> = []
  beforeAll(async () => {
    machine = await startReferenceMachine({ port: 0, models: FUZZ_MACHINE_MODELS })
    // One set of memory stores, shared by the handler and this test (to fund the account, read its usage).
    stores = ManagedRuntime.make(MemoryPlatformStores)
    const context = await stores.context()
    handler = makeHandler({
      catalogue: fuzzCatalogue(machine.url),
      ownerEmail: "owner@test.local",
      stores: Layer.succeedContext(context),
      logging: loggingLayer({ format: "json", level: "Warn" }),
      emfNamespace: "PlatformTest"
    })
    const owner = (await handler.firstStart())!
    secret = owner.key.secret
    accountId = owner.account.id
    await stores.runPromise(Effect.flatMap(LedgerStore, (ledger) =>
      ledger.post({
        id: `le_${crypto.randomUUID()}`, account_id: owner.account.id, machine_id: null, amount: 5_000_000n,
        type: "credit_added", ref: "grant_emf", created_at: new Date().toISOString()
      })))
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      if (typeof line === "string") written.push(line)
    })
  }, 60_000)
  afterAll(async () => {
    vi.restoreAllMocks()
    await handler?.dispose()
    await stores?.dispose()
    await machine?.close()
  })

  const emf = () =>
    written.flatMap((line) => {
      const parsed = JSON.parse(line) as EmfLine
      return parsed._aws === undefined ? [] : [parsed]
    })

  /** The value of `name` on the line whose dimensions include `dimensions`. */
  const valueOf = (lines: ReadonlyArray<EmfLine>, name: string, dimensions: Record<string, string>) =>
    lines.find((l) => name in l && Object.entries(dimensions).every(([k, v]) => l[k] === v))?.[name]

  it("after one chat call: its duration, time to first token, tokens and credits, each line valid EMF", async () => {
    const response = await invoke(handler, new Request("https://api.platform.test/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "ref-chat", messages: [{ role: "user", content: "Count to 12." }] })
    }))
    expect(response.status, await response.clone().text()).toBe(200)
    // The Lambda shell meters before it answers: the usage record is there.
    const [record] = await stores.runPromise(Effect.flatMap(UsageStore, (usage) =>
      usage.list({ account_id: accountId, from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" })))
    expect(record).toBeDefined()
    const lines = emf()
    expect(lines.length).toBeGreaterThan(0)
    for (const line of lines) {
      const [directive] = line._aws.CloudWatchMetrics
      expect(directive!.Namespace).toBe("PlatformTest")
      for (const dimension of directive!.Dimensions.flat()) expect(typeof line[dimension]).toBe("string")
      for (const metric of directive!.Metrics) expect(line[metric.Name]).toBeDefined()
    }
    const call = { gen_ai_operation_name: "chat", gen_ai_request_model: "ref-chat", machine: "m-fuzz-a" }
    const duration = valueOf(lines, "gen_ai_server_request_duration_seconds", call) as { Values: Array<number>; Counts: Array<number> }
    expect(duration.Counts).toEqual([1])
    expect((valueOf(lines, "gen_ai_server_time_to_first_token_seconds", call) as { Counts: Array<number> }).Counts).toEqual([1])
    const tokens = { gen_ai_operation_name: "chat", gen_ai_request_model: "ref-chat" }
    const input = valueOf(lines, "gen_ai_client_token_usage", { ...tokens, gen_ai_token_type: "input" }) as { Counts: Array<number> }
    expect(input.Counts).toEqual([1])
    expect(record!.credits).toBeGreaterThan(0n)
    expect(valueOf(lines, "model_platform_credits_charged_total", tokens)).toBe(Number(record!.credits))
    const output = valueOf(lines, "gen_ai_client_token_usage", { ...tokens, gen_ai_token_type: "output" }) as { Values: Array<number> }
    // A bucket's upper bound: at least the tokens the record has.
    expect(output.Values[0]).toBeGreaterThanOrEqual(Number(record!.output_tokens))
    expect(valueOf(lines, "http_server_request_duration_seconds", {
      http_route: "/v1/chat/completions", http_response_status_code: "200"
    })).toMatchObject({ Counts: [1] })
    const unit = lines.flatMap((l) => l._aws.CloudWatchMetrics[0]!.Metrics).find((m) => m.Name === "gen_ai_server_request_duration_seconds")
    expect(unit!.Unit).toBe("Seconds")
  })

  it("the next invocation's lines say only what changed since", async () => {
    written.length = 0
    expect((await invoke(handler, new Request("https://api.platform.test/models"))).status).toBe(200)
    const lines = emf()
    expect(valueOf(lines, "http_server_request_duration_seconds", { http_route: "/models" })).toMatchObject({ Counts: [1] })
    // The chat call of before is not written again.
    expect(lines.some((l) => "gen_ai_server_request_duration_seconds" in l)).toBe(false)
    expect(lines.some((l) => "model_platform_credits_charged_total" in l)).toBe(false)
  })
})
