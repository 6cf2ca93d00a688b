import OpenAI from "openai"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { startReferenceMachine } from "../src/ReferenceMachine.ts"
import type { ReferenceMachine } from "../src/ReferenceMachine.ts"
import { assertValid } from "./openaiSchema.ts"
import { client, get, post, sseEvents } from "./support.ts"

let machine: ReferenceMachine
let openai: OpenAI

beforeAll(async () => {
  machine = await startReferenceMachine({ port: 0, faults: true })
  openai = client(machine)
})
afterAll(() => machine.close())
beforeEach(async () => {
  const r = await post(machine, "/_control", { reset: true })
  expect(r.status).toBe(200)
})

const control = (patch: Record<string, unknown>) => post(machine, "/_control", patch)
const messages: Array<OpenAI.ChatCompletionMessageParam> = [{ role: "user", content: "count to 10" }]
const streamBody = { model: "ref-chat", messages, stream: true, stream_options: { include_usage: true } }

describe("fault injection", () => {
  it("is off unless started with faults: true", async () => {
    const plain = await startReferenceMachine({ port: 0 })
    try {
      expect((await post(plain, "/_control", { healthy: false })).status).toBe(404)
      // the programmatic controls always work
      plain.faults.set({ healthy: false })
      expect((await get(plain, "/health")).status).toBe(503)
    } finally {
      await plain.close()
    }
  })

  it("reports and refuses control bodies", async () => {
    const r = await get(machine, "/_control")
    expect(r.body.faults).toMatchObject({ latency_ms: 0, fail_next: 0, healthy: true, usage: "honest" })
    expect((await control({ bogus: 1 })).status).toBe(400)
    expect((await control({ usage: "maybe" })).status).toBe(400)
    expect((await control({ fail_status: 200 })).status).toBe(400)
  })

  it("adds latency before the first byte", async () => {
    await control({ latency_ms: 150 })
    const t0 = performance.now()
    await openai.chat.completions.create({ model: "ref-chat", messages })
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140)
  })

  it("fails the next N requests with 500, then serves again", async () => {
    await control({ fail_next: 2 })
    for (let i = 0; i < 2; i++) {
      const e = await openai.chat.completions.create({ model: "ref-chat", messages }).catch((e) => e)
      expect(e).toBeInstanceOf(OpenAI.InternalServerError)
      expect(e.code).toBe("server_error")
    }
    const ok = await openai.chat.completions.create({ model: "ref-chat", messages })
    expect(ok.choices[0]!.finish_reason).toBe("stop")
    // the SDK's own retries get through a single failure
    await control({ fail_next: 1 })
    const retried = await client(machine, 2).chat.completions.create({ model: "ref-chat", messages })
    expect(retried.choices[0]!.finish_reason).toBe("stop")
  })

  it("fails with 503 no_capacity or by resetting the connection", async () => {
    await control({ fail_next: 1, fail_status: 503 })
    const r = await post(machine, "/v1/embeddings", { model: "ref-embed", input: "x" })
    expect(r.status).toBe(503)
    expect(r.body.error.code).toBe("no_capacity")
    assertValid("ErrorResponse", r.body)
    await control({ fail_next: 1, fail_kind: "reset" })
    await expect(post(machine, "/v1/embeddings", { model: "ref-embed", input: "x" })).rejects.toThrow()
    expect((await post(machine, "/v1/embeddings", { model: "ref-embed", input: "x" })).status).toBe(200)
  })

  it("drops the connection mid-stream after K chunks", async () => {
    await control({ drop_after_chunks: 3 })
    const seen: Array<OpenAI.ChatCompletionChunk> = []
    const run = async () => {
      for await (const c of await openai.chat.completions.create(streamBody as OpenAI.ChatCompletionCreateParamsStreaming)) {
        seen.push(c)
      }
    }
    await expect(run()).rejects.toThrow()
    expect(seen).toHaveLength(3)
    expect(seen.every((c) => c.choices[0]!.finish_reason === null)).toBe(true)
    expect((await get(machine, "/_control")).body.stats.dropped).toBe(1)
    await control({ drop_after_chunks: 0 })
    seen.length = 0
    await expect(run()).rejects.toThrow()
    expect(seen).toHaveLength(0)
    await control({ drop_after_chunks: null })
    await run()
    expect(seen[seen.length - 1]!.usage).toBeDefined()
  })

  it("omits, inflates, zeroes or breaks the usage", async () => {
    const honest = await openai.chat.completions.create({ model: "ref-chat", messages })
    const u = honest.usage!

    await control({ usage: "omit" })
    const raw = await post(machine, "/v1/chat/completions", streamBody)
    const events = sseEvents(raw.body)
    expect(events[events.length - 1]).toBe("[DONE]")
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e))
    expect(chunks.some((c) => c.usage)).toBe(false)
    expect(chunks[chunks.length - 1].choices[0].finish_reason).toBe("stop")
    expect((await openai.chat.completions.create({ model: "ref-chat", messages })).usage).toBeUndefined()

    await control({ usage: "inflate" })
    const inflated = sseEvents((await post(machine, "/v1/chat/completions", streamBody)).body)
    expect(JSON.parse(inflated[inflated.length - 2]!).usage).toEqual({
      prompt_tokens: u.prompt_tokens * 10,
      completion_tokens: u.completion_tokens * 10,
      total_tokens: u.total_tokens * 10
    })

    await control({ usage: "zero" })
    expect((await openai.chat.completions.create({ model: "ref-chat", messages })).usage!.total_tokens).toBe(0)

    await control({ usage: "invalid" })
    const bad = await openai.chat.completions.create({ model: "ref-chat", messages })
    expect(bad.usage!.prompt_tokens).toBe(-1)
    const emb = await post(machine, "/v1/embeddings", { model: "ref-embed", input: "x" })
    expect(emb.body.usage.total_tokens).toBe(-2)
  })

  it("reports unhealthy, and narrows the models it serves", async () => {
    await control({ healthy: false })
    const h = await get(machine, "/health")
    expect(h.status).toBe(503)
    expect(h.body.status).toBe("unhealthy")
    await control({ healthy: true, serving: ["ref-embed"] })
    expect((await get(machine, "/health")).body).toMatchObject({ status: "ok", models: ["ref-embed"] })
    expect((await get(machine, "/v1/models")).body.data.map((m: { id: string }) => m.id)).toEqual(["ref-embed"])
    const e = await openai.chat.completions.create({ model: "ref-chat", messages }).catch((e) => e)
    expect(e.status).toBe(503)
    expect(e.code).toBe("no_capacity")
  })

  it("slows streams with a per-token delay", async () => {
    await control({ token_delay_ms: 20 })
    const times: Array<number> = []
    for await (const _ of await openai.chat.completions.create(streamBody as OpenAI.ChatCompletionCreateParamsStreaming)) {
      times.push(performance.now())
    }
    // 10 words + role + finish + usage chunks, 20 ms apart
    expect(times.length).toBe(13)
    expect(times[times.length - 1]! - times[0]!).toBeGreaterThanOrEqual(12 * 20 - 20)
  })

  it("sends a stream's headers at once and its first chunk late", async () => {
    await control({ first_chunk_delay_ms: 150 })
    const t0 = performance.now()
    const res = await fetch(`${machine.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(streamBody)
    })
    const headersAt = performance.now() - t0
    const reader = res.body!.getReader()
    const first = await reader.read()
    const firstAt = performance.now() - t0
    expect(headersAt).toBeLessThan(100)
    expect(firstAt).toBeGreaterThanOrEqual(140)
    expect(new TextDecoder().decode(first.value)).toMatch(/^data: \{/)
    await reader.cancel()
  })

  it("counts requests and served calls", async () => {
    const before = machine.stats()
    await openai.chat.completions.create({ model: "ref-chat", messages })
    const after = machine.stats()
    expect(after.requests["POST /v1/chat/completions"]).toBe((before.requests["POST /v1/chat/completions"] ?? 0) + 1)
    expect(after.served["ref-chat"]).toBe((before.served["ref-chat"] ?? 0) + 1)
  })
})
