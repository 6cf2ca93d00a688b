/**
 * The inference gateway end to end: the official `openai` SDK against the platform's Node server,
 * whose catalogue points at reference machines. Every body and stream chunk is checked against
 * OpenAI's own schema; every charge against the machine's reported usage.
 */
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { validate } from "@model-platform/reference-machine/test/openaiSchema"
import { Gateway, MachineClient } from "@model-platform/core/gateway"
import { ApiKeys, KeyStore } from "@model-platform/core/keys"
import { MachineStatus } from "@model-platform/core/catalogue"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Effect, Layer } from "effect"
import OpenAI from "openai"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import {
  balanceOf,
  gatewayCatalogue,
  type GatewayServer,
  MACHINE_CLIENTS,
  MACHINE_MODELS,
  MODELS,
  newAccount,
  startGatewayServer,
  tokenCost,
  usageOf
} from "./gatewaySupport.ts"
import { startNodeServer } from "./support.ts"

const CHAT_IN = 2_000_000n // micro-credits per million tokens (2 credits)
const CHAT_OUT = 6_000_000n
const CREDITS = 1_000_000_000n // 1000 credits

const expectValid = (component: string, value: unknown) => expect(validate(component, value)).toEqual([])

describe.each(MACHINE_CLIENTS)("machine client $name", ({ layer: machineClient }) => {
  describe("gateway: calls, metering and errors through the openai SDK", () => {
    let a: ReferenceMachine
    let b: ReferenceMachine
    let server: GatewayServer
    const sdk = (secret: string) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: secret, maxRetries: 0 })
    const idle = () => server.run(Effect.flatMap(Gateway, (g) => g.idle))

    beforeAll(async () => {
      a = await startReferenceMachine({ port: 0, faults: true, id: "a", models: MACHINE_MODELS })
      b = await startReferenceMachine({ port: 0, faults: true, id: "b", models: MACHINE_MODELS })
      server = await startGatewayServer(
        gatewayCatalogue([{ id: "m-a", url: a.url, score: 0.9 }, { id: "m-b", url: b.url, score: 0.8 }], { rpm: 5 }),
        { keepAliveMs: 50, drainTimeoutMs: 5_000 },
        machineClient
      )
    })
    afterAll(async () => {
      await server?.close()
      await a?.close()
      await b?.close()
    })
    beforeEach(() => {
      a.faults.reset()
      b.faults.reset()
    })

    it("chat: the machine's answer as it is, charged exactly its usage, one usage record", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      const reply = await sdk(secret).chat.completions.create({
        model: "ref-chat",
        messages: [{ role: "user", content: "Hello there, gateway!" }]
      })
      expectValid("CreateChatCompletionResponse", reply)
      expect(reply.choices[0]!.message.content).toBe("You said: Hello there, gateway!")
      const usage = reply.usage!
      await idle()
      const cost = tokenCost(usage.prompt_tokens, usage.completion_tokens, CHAT_IN, CHAT_OUT)
      const balance = await server.run(balanceOf(accountId))
      expect(balance).toEqual({ available: CREDITS - cost, held: 0n })
      const records = await server.run(usageOf(accountId))
      expect(records).toHaveLength(1)
      expect(records[0]).toMatchObject({
        machine_id: "m-a",
        model: "ref-chat",
        service: "chat",
        unit: "tokens",
        input_tokens: BigInt(usage.prompt_tokens),
        output_tokens: BigInt(usage.completion_tokens),
        quantity: BigInt(usage.total_tokens),
        list_credits: cost,
        credits: cost
      })
    })

    it("chat stream: chunk by chunk, OpenAI's schema, the last chunk carries usage, charged exactly that", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      const stream = await sdk(secret).chat.completions.create({
        model: "ref-chat",
        messages: [{ role: "user", content: "count to 20" }],
        stream: true
      })
      const chunks: Array<OpenAI.Chat.Completions.ChatCompletionChunk> = []
      for await (const chunk of stream) {
        expectValid("CreateChatCompletionStreamResponse", chunk)
        chunks.push(chunk)
      }
      const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")
      expect(text).toBe(Array.from({ length: 20 }, (_, i) => i + 1).join(" "))
      const last = chunks[chunks.length - 1]!
      expect(last.choices).toEqual([])
      const usage = last.usage!
      expect(usage.completion_tokens).toBe(20)
      await idle()
      const cost = tokenCost(usage.prompt_tokens, usage.completion_tokens, CHAT_IN, CHAT_OUT)
      expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS - cost, held: 0n })
      const records = await server.run(usageOf(accountId))
      expect(records.map((r) => [r.output_tokens, r.credits])).toEqual([[20n, cost]])
    })

    it("chat stream: server-sent event headers and framing, keep-alive while the first token is slow", async () => {
      const { secret } = await server.run(newAccount({ credits: CREDITS }))
      a.faults.set({ first_chunk_delay_ms: 200 })
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "ref-chat", messages: [{ role: "user", content: "hi" }], stream: true })
      })
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/)
      expect(res.headers.get("cache-control")).toBe("no-cache")
      const body = await res.text()
      expect(body.startsWith(": keep-alive\n\n")).toBe(true)
      const events = body.split("\n\n").filter((e) => e !== "")
      const data = events.filter((e) => e.startsWith("data: ")).map((e) => e.slice(6))
      expect(data[data.length - 1]).toBe("[DONE]")
      expect(JSON.parse(data[data.length - 2]!).usage.total_tokens).toBeGreaterThan(0)
      expect(events.every((e) => e.startsWith("data: ") || e === ": keep-alive")).toBe(true)
    })

    it("embeddings, forecasts (both paths) and images, each charged once", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      const emb = await sdk(secret).embeddings.create({ model: "ref-embed", input: ["alpha beta", "gamma"], dimensions: 64 })
      expect(emb.data).toHaveLength(2)
      expect(emb.data[0]!.embedding).toHaveLength(64)
      expect(emb.usage.prompt_tokens).toBe(3)
      const raw = await fetch(`${server.url}/v1/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "ref-embed", input: "alpha", encoding_format: "float" })
      }).then((r) => r.json())
      expectValid("CreateEmbeddingResponse", raw)

      for (const path of ["/v1/forecasts", "/forecasts"]) {
        const res = await fetch(`${server.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "ref-forecast", history: [1, 2, 3, 4, 5], horizon: 3 })
        })
        expect(res.status).toBe(200)
        const forecast = await res.json()
        expect(forecast).toMatchObject({ object: "forecast", model: "ref-forecast", history_used: 5 })
        expect(forecast.point).toHaveLength(3)
      }

      const image = await sdk(secret).images.generate({ model: "ref-image", prompt: "a red circle", n: 2 })
      expectValid("ImagesResponse", image)
      expect(image.data).toHaveLength(2)

      await idle()
      const records = await server.run(usageOf(accountId))
      const byModel = (m: string) => records.filter((r) => r.model === m)
      expect(byModel("ref-embed").map((r) => r.input_tokens)).toEqual(expect.arrayContaining([3n, 1n]))
      expect(byModel("ref-forecast").map((r) => [r.unit, r.quantity, r.credits])).toEqual([
        ["requests", 1n, 250_000n],
        ["requests", 1n, 250_000n]
      ])
      expect(byModel("ref-image").map((r) => [r.quantity, r.credits])).toEqual([[2n, 3_000_000n]])
      const charged = records.reduce((n, r) => n + r.credits, 0n)
      expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS - charged, held: 0n })
    })

    it("images: 503 no_capacity while no image model is serving", async () => {
      const { secret } = await server.run(newAccount({ credits: CREDITS }))
      await server.run(Effect.gen(function*() {
        const status = yield* MachineStatus
        for (const id of ["m-a", "m-b"]) {
          yield* status.set(id, { health: "online", serving_now: MODELS.filter((m) => m !== "ref-image") })
        }
      }))
      try {
        const error = await sdk(secret).images.generate({ model: "ref-image", prompt: "x" }).catch((e) => e)
        expect(error).toBeInstanceOf(OpenAI.APIError)
        expect(error.status).toBe(503)
        expect(error.code).toBe("no_capacity")
      } finally {
        await server.run(Effect.gen(function*() {
          const status = yield* MachineStatus
          for (const id of ["m-a", "m-b"]) yield* status.set(id, { health: "online", serving_now: [...MODELS] })
        }))
      }
    })

    it("GET /v1/models through the SDK", async () => {
      const { secret } = await server.run(newAccount({ credits: CREDITS }))
      const ids: Array<string> = []
      for await (const m of sdk(secret).models.list()) ids.push(m.id)
      expect(ids).toEqual(expect.arrayContaining([...MODELS]))
    })

    it("errors come back as the SDK's typed errors in the inference shape", async () => {
      const { secret } = await server.run(newAccount({ credits: CREDITS }))
      const body = { model: "ref-chat", messages: [{ role: "user" as const, content: "hi" }] }
      const fail = (client: OpenAI, b: any = body) => client.chat.completions.create(b).then(() => undefined, (e) => e)

      const noKey = await fetch(`${server.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify(body) })
      expect(noKey.status).toBe(401)
      expect(await noKey.json()).toEqual({
        error: { message: expect.any(String), type: "authentication_error", code: "missing_api_key" }
      })
      const badKey = await fail(sdk("mpk_" + "x".repeat(43)))
      expect(badKey).toBeInstanceOf(OpenAI.AuthenticationError)
      expect(badKey.code).toBe("invalid_api_key")

      const unknown = await fail(sdk(secret), { ...body, model: "nope" })
      expect(unknown).toBeInstanceOf(OpenAI.NotFoundError)
      expect(unknown.code).toBe("model_not_found")

      const invalid = await fail(sdk(secret), { ...body, messages: [] })
      expect(invalid).toBeInstanceOf(OpenAI.BadRequestError)
      expect(invalid.code).toBe("invalid_input")

      const wrong = await fail(sdk(secret), { ...body, model: "ref-embed" })
      expect(wrong).toBeInstanceOf(OpenAI.BadRequestError)
      expect(wrong.code).toBe("wrong_endpoint")

      const badJson = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: "{not json"
      })
      expect(badJson.status).toBe(400)
      expect((await badJson.json()).error.code).toBe("invalid_json")

      const readOnly = await server.run(newAccount({ credits: CREDITS, permissions: ["read"] }))
      const lacks = await fail(sdk(readOnly.secret))
      expect(lacks).toBeInstanceOf(OpenAI.PermissionDeniedError)
      expect(lacks.code).toBe("key_lacks_inference_permission")

      const pinned = await server.run(newAccount({ credits: CREDITS, machine_id: "m-b" }))
      const elsewhere = await fail(sdk(pinned.secret), { ...body, machine: "m-a" })
      expect(elsewhere).toBeInstanceOf(OpenAI.PermissionDeniedError)
      expect(elsewhere.code).toBe("key_not_scoped_to_machine")
      const before = b.stats().served["ref-chat"] ?? 0
      await sdk(pinned.secret).chat.completions.create(body)
      expect(b.stats().served["ref-chat"]).toBe(before + 1)

      const noMachine = await fail(sdk(secret), { ...body, machine: "m-zzz" })
      expect(noMachine).toBeInstanceOf(OpenAI.NotFoundError)
      expect(noMachine.code).toBe("machine_not_found")

      // The machine's own client error (context too long is the machine's verdict) is passed on.
      const tooLong = await fail(sdk(secret), { ...body, messages: [{ role: "user", content: "word ".repeat(9000) }] })
      expect(tooLong).toBeInstanceOf(OpenAI.BadRequestError)
      expect(tooLong.code).toBe("context_length_exceeded")
    })

    it("402 insufficient_credit when the balance cannot cover the call's bound; a free model needs no balance", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: 100n }))
      const error = await sdk(secret).chat.completions
        .create({ model: "ref-chat", messages: [{ role: "user", content: "hi" }] })
        .catch((e) => e)
      expect(error).toBeInstanceOf(OpenAI.APIError)
      expect(error.status).toBe(402)
      expect(error.code).toBe("insufficient_credit")
      expect(error.type).toBe("insufficient_quota")

      const free = await sdk(secret).chat.completions.create({ model: "free-chat", messages: [{ role: "user", content: "hi" }] })
      expect(free.choices[0]!.message.content).toBe("You said: hi")
      await idle()
      expect(await server.run(balanceOf(accountId))).toEqual({ available: 100n, held: 0n })
      const records = await server.run(usageOf(accountId))
      expect(records.map((r) => [r.model, r.list_credits, r.credits])).toEqual([["free-chat", 0n, 0n]])
    })

    it("rpm: the call past the key's tier rpm answers 429 rate_limited with Retry-After", async () => {
      const { secret } = await server.run(newAccount({ credits: CREDITS }))
      const client = sdk(secret)
      const body = { model: "free-chat", messages: [{ role: "user" as const, content: "hi" }] }
      for (let i = 0; i < 5; i++) await client.chat.completions.create(body)
      const error = await client.chat.completions.create(body).catch((e) => e)
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      expect(error.code).toBe("rate_limited")
      const retryAfter = Number(error.headers.get("retry-after"))
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(60)
      // Another key of the same tier has its own count.
      const other = await server.run(newAccount({ credits: CREDITS }))
      await sdk(other.secret).chat.completions.create(body)
    })
  })

  describe("gateway: speculative dispatch and remembered keys", () => {
    let a: ReferenceMachine
    let server: GatewayServer
    const sdk = (secret: string) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: secret, maxRetries: 0 })
    const idle = () => server.run(Effect.flatMap(Gateway, (g) => g.idle))
    // Calls the gateway starts towards a machine (also those aborted before the machine saw them).
    let posts = 0
    const counting = Layer.effect(
      MachineClient,
      Effect.map(MachineClient, (client) =>
        MachineClient.of({
          ...client,
          post: (...args) => Effect.suspend(() => {
            posts += 1
            return client.post(...args)
          })
        }))
    ).pipe(Layer.provide(machineClient))
    const hi = { model: "ref-chat", messages: [{ role: "user" as const, content: "hi" }], max_tokens: 4 }

    beforeAll(async () => {
      a = await startReferenceMachine({ port: 0, faults: true, id: "a", models: MACHINE_MODELS })
      server = await startGatewayServer(gatewayCatalogue([{ id: "m-a", url: a.url, score: 0.9 }], { rpm: 1000 }), {}, counting)
    })
    afterAll(async () => {
      await server?.close()
      await a?.close()
    })
    beforeEach(() => {
      a.faults.reset()
    })

    it("a call refused after an admitted one: the machine was already called, the client gets only the 402, nothing is charged", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: 2_000n }))
      await sdk(secret).chat.completions.create(hi)
      await idle()
      const after = await server.run(balanceOf(accountId))
      const records = await server.run(usageOf(accountId))
      expect(records).toHaveLength(1)

      // Now the bound (8192 output tokens) does not fit: admission refuses while the machine works.
      a.faults.set({ latency_ms: 1_000 })
      const before = posts
      const started = Date.now()
      const error = await sdk(secret).chat.completions.create({ ...hi, max_tokens: 8192 }).catch((e) => e)
      expect(error).toBeInstanceOf(OpenAI.APIError)
      expect(error.status).toBe(402)
      expect(Date.now() - started).toBeLessThan(900) // answered by admission, not after the machine
      await idle()
      expect(posts).toBe(before + 1) // dispatched speculatively, then aborted
      expect(await server.run(balanceOf(accountId))).toEqual(after)
      expect(await server.run(usageOf(accountId))).toHaveLength(1)

      // Refused once: the next call of the key waits for admission before calling the machine.
      const again = await sdk(secret).chat.completions.create({ ...hi, max_tokens: 8192 }).catch((e) => e)
      expect(again.status).toBe(402)
      expect(posts).toBe(before + 1)
    })

    it("a key revoked by another process is refused by the next call's admission (401), not charged, and forgotten", async () => {
      const { accountId, keyId, secret } = await server.run(newAccount({ credits: CREDITS }))
      await sdk(secret).chat.completions.create(hi)
      await idle()
      // Revoked in the store directly, as another server process would: this process still remembers the key.
      await server.run(Effect.flatMap(KeyStore, (keys) => keys.revoke(accountId, keyId, new Date().toISOString())))
      const balance = await server.run(balanceOf(accountId))
      const dispatched = posts
      const error = await sdk(secret).chat.completions.create(hi).catch((e) => e)
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError)
      expect(error.code).toBe("invalid_api_key")
      expect(error.message).toContain("revoked")
      await idle()
      expect(posts).toBe(dispatched + 1) // remembered and admitted lately: dispatched speculatively, then aborted
      expect(await server.run(balanceOf(accountId))).toEqual(balance)
      expect(await server.run(usageOf(accountId))).toHaveLength(1)
      // Forgotten: the next call reads the key again and is refused before any machine is called.
      const before = posts
      const next = await sdk(secret).chat.completions.create(hi).catch((e) => e)
      expect(next).toBeInstanceOf(OpenAI.AuthenticationError)
      expect(posts).toBe(before)
    })

    it("a key revoked through this process is refused at once, before any machine is called", async () => {
      const { accountId, keyId, secret } = await server.run(newAccount({ credits: CREDITS }))
      await sdk(secret).chat.completions.create(hi)
      await server.run(Effect.flatMap(ApiKeys, (keys) =>
        Effect.flatMap(keys.identify(secret), (caller) => keys.revoke(caller, keyId))))
      const before = posts
      const error = await sdk(secret).chat.completions.create(hi).catch((e) => e)
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError)
      expect(posts).toBe(before)
      await idle()
      expect(await server.run(usageOf(accountId))).toHaveLength(1)
    })

    it("many concurrent calls of many keys: each metered once, balances down by exactly their records", async () => {
      const accounts = await Promise.all(Array.from({ length: 4 }, () => server.run(newAccount({ credits: CREDITS }))))
      const replies = await Promise.all(accounts.flatMap(({ secret }) =>
        Array.from({ length: 12 }, () => sdk(secret).chat.completions.create(hi))))
      expect(replies).toHaveLength(48)
      await idle()
      for (const { accountId } of accounts) {
        const records = await server.run(usageOf(accountId))
        expect(records).toHaveLength(12)
        const charged = records.reduce((n, r) => n + r.credits, 0n)
        expect(charged).toBeGreaterThan(0n)
        expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS - charged, held: 0n })
      }
    })
  })

  describe("gateway: client disconnects, failing machines, missing usage", () => {
    let a: ReferenceMachine
    let b: ReferenceMachine
    let server: GatewayServer
    const sdk = (secret: string) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: secret, maxRetries: 0 })
    const gateway = <A>(f: (g: Gateway["Service"]) => Effect.Effect<A>) => server.run(Effect.flatMap(Gateway, f))
    const idle = () => gateway((g) => g.idle)
    const hi = { model: "ref-chat", messages: [{ role: "user" as const, content: "hi" }] }

    beforeAll(async () => {
      a = await startReferenceMachine({ port: 0, faults: true, id: "a", models: MACHINE_MODELS })
      b = await startReferenceMachine({ port: 0, faults: true, id: "b", models: MACHINE_MODELS })
    })
    afterAll(async () => {
      await a?.close()
      await b?.close()
    })
    // A gateway per test: cooldown state is per process and must not leak between tests.
    beforeEach(async () => {
      a.faults.reset()
      b.faults.reset()
      server = await startGatewayServer(
        gatewayCatalogue([{ id: "m-a", url: a.url, score: 0.9 }, { id: "m-b", url: b.url, score: 0.8 }]),
        { keepAliveMs: 50, drainTimeoutMs: 5_000, cooldownMs: 60_000 },
        machineClient
      )
    })
    afterEach(async () => {
      await server?.close()
    })

    it("a client killed mid-stream: the stream is drained to its usage, exactly one usage record, charged in full", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      a.faults.set({ token_delay_ms: 5 })
      const controller = new AbortController()
      const stream = await sdk(secret).chat.completions.create(
        { model: "ref-chat", messages: [{ role: "user", content: "count to 100" }], stream: true },
        { signal: controller.signal }
      )
      let seen = 0
      await (async () => {
        for await (const chunk of stream) {
          expectValid("CreateChatCompletionStreamResponse", chunk)
          if (++seen === 5) controller.abort()
        }
      })().catch(() => undefined)
      expect(seen).toBeLessThan(20)
      await idle()
      const records = await server.run(usageOf(accountId))
      expect(records).toHaveLength(1)
      expect(records[0]!.output_tokens).toBe(100n)
      const cost = tokenCost(Number(records[0]!.input_tokens), 100, CHAT_IN, CHAT_OUT)
      expect(records[0]!.credits).toBe(cost)
      expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS - cost, held: 0n })
      expect(a.stats().dropped).toBe(0)
    })

    it("a failing machine is routed around and charged once on the machine that answered", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      a.faults.set({ fail_next: 1, fail_status: 500 })
      const reply = await sdk(secret).chat.completions.create(hi)
      expectValid("CreateChatCompletionResponse", reply)
      await idle() // the canary the failure started has run (it must not take the next fault)
      a.faults.set({ fail_next: 1, fail_kind: "reset" })
      await sdk(secret).chat.completions.create({ ...hi, stream: true }).then(async (s) => {
        for await (const _ of s) void _
      })
      await idle()
      const records = await server.run(usageOf(accountId))
      expect(records.map((r) => r.machine_id)).toEqual(["m-b", "m-b"])
      const charged = records.reduce((n, r) => n + r.credits, 0n)
      expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS - charged, held: 0n })
    })

    it("every machine failing: 502 or 503, no usage record, no charge, nothing held", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      a.faults.set({ fail_next: 1, fail_status: 500 })
      b.faults.set({ fail_next: 1, fail_status: 502 })
      const error = await sdk(secret).chat.completions.create(hi).catch((e) => e)
      expect(error).toBeInstanceOf(OpenAI.InternalServerError)
      expect(error.status).toBe(502)
      expect(error.code).toBe("machine_error")
      await idle() // the canaries the failures started have run (they must not take the next faults)
      a.faults.set({ fail_next: 1, fail_status: 503 })
      b.faults.set({ fail_next: 1, fail_status: 503 })
      const busy = await sdk(secret).chat.completions.create(hi).catch((e) => e)
      expect(busy.status).toBe(503)
      expect(busy.code).toBe("no_capacity")
      await idle()
      expect(await server.run(usageOf(accountId))).toEqual([])
      expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS, held: 0n })
    })

    /** A stream of `count to 30` read whole with fetch: the data of its events. */
    const brokenStream = async (secret: string) => {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ ...hi, messages: [{ role: "user", content: "count to 30" }], stream: true })
      })
      expect(res.status).toBe(200)
      return (await res.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => JSON.parse(e.slice(6)))
    }
    const machineError = { error: { message: expect.any(String), type: "server_error", code: "machine_error" } }

    it("a stream broken by the machine before its first event ends with an SSE error event and is not charged", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      // The answer head came, then the connection broke: the client got nothing but keep-alives.
      a.faults.set({ drop_after_chunks: 0, first_chunk_delay_ms: 100 })
      expect(await brokenStream(secret)).toEqual([machineError])
      await idle()
      expect(await server.run(usageOf(accountId))).toEqual([])
      expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS, held: 0n })
    })

    it("a stream broken by the machine after three events ends with an SSE error event and is charged the estimate of what it sent", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      a.faults.set({ drop_after_chunks: 3 })
      const events = await brokenStream(secret)
      expect(events).toHaveLength(4)
      expect(events[3]).toEqual(machineError)
      await idle()
      const chars = events.slice(0, 3).reduce((n, e) => n + (e.choices[0]?.delta?.content ?? "").length, 0)
      const records = await server.run(usageOf(accountId))
      expect(records).toHaveLength(1)
      expect(records[0]!.output_tokens).toBe(BigInt(Math.ceil(chars / 4)))
      const cost = tokenCost(Number(records[0]!.input_tokens), Number(records[0]!.output_tokens), CHAT_IN, CHAT_OUT)
      expect(cost).toBeGreaterThan(0n)
      expect(records[0]!.credits).toBe(cost)
      expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS - cost, held: 0n })
    })

    it("a machine reporting no usage: billed on the estimate, still one record, the stream still ends with usage", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      a.faults.set({ usage: "omit" })
      await sdk(secret).chat.completions.create(hi)
      const stream = await sdk(secret).chat.completions.create({ ...hi, stream: true })
      const chunks: Array<OpenAI.Chat.Completions.ChatCompletionChunk> = []
      for await (const chunk of stream) {
        expectValid("CreateChatCompletionStreamResponse", chunk)
        chunks.push(chunk)
      }
      expect(chunks[chunks.length - 1]!.usage?.total_tokens).toBeGreaterThan(0)
      await idle()
      const records = await server.run(usageOf(accountId))
      expect(records).toHaveLength(2)
      for (const r of records) expect(r.credits).toBeGreaterThan(0n)
      const charged = records.reduce((n, r) => n + r.credits, 0n)
      expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS - charged, held: 0n })
    })

    it("a machine that went away: routed around, then cooled down and skipped", async () => {
      const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
      await sdk(secret).chat.completions.create(hi)
      await a.close()
      for (let i = 0; i < 4; i++) {
        const reply = await sdk(secret).chat.completions.create(i % 2 === 0 ? hi : { ...hi, model: "free-chat" })
        expect(reply.choices[0]!.message.content).toBe("You said: hi")
      }
      await idle() // the canaries the failures started have run, and failed
      expect(await gateway((g) => g.coolingDown)).toEqual(["m-a"])
      const records = await server.run(usageOf(accountId))
      expect(records.map((r) => r.machine_id)).toEqual(["m-a", "m-b", "m-b", "m-b", "m-b"])
      const charged = records.reduce((n, r) => n + r.credits, 0n)
      expect(await server.run(balanceOf(accountId))).toEqual({ available: CREDITS - charged, held: 0n })
    })
  })

  describe("gateway: charging closed, no drain slot", () => {
    let m: ReferenceMachine
    let server: GatewayServer
    const sdk = (secret: string) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: secret, maxRetries: 0 })

    beforeAll(async () => {
      m = await startReferenceMachine({ port: 0, faults: true, models: MACHINE_MODELS })
      server = await startGatewayServer(gatewayCatalogue([{ id: "m-a", url: m.url, score: 0.9 }], { charging: false }), {
        maxDrains: 0
      }, machineClient)
    })
    afterAll(async () => {
      await server?.close()
      await m?.close()
    })

    it("until a payment rail is set, usage is recorded at list price and charged nothing (no balance needed)", async () => {
      const { accountId, secret } = await server.run(newAccount())
      const reply = await sdk(secret).chat.completions.create({ model: "ref-chat", messages: [{ role: "user", content: "hi" }] })
      await server.run(Effect.flatMap(Gateway, (g) => g.idle))
      const records = await server.run(usageOf(accountId))
      const list = tokenCost(reply.usage!.prompt_tokens, reply.usage!.completion_tokens, CHAT_IN, CHAT_OUT)
      expect(records.map((r) => [r.list_credits, r.credits])).toEqual([[list, 0n]])
      expect(await server.run(balanceOf(accountId))).toEqual({ available: 0n, held: 0n })
    })

    it("a client leaving when no drain slot is free: the machine's stream is cut, the estimate recorded once", async () => {
      const { accountId, secret } = await server.run(newAccount())
      m.faults.set({ token_delay_ms: 20 })
      const controller = new AbortController()
      const stream = await sdk(secret).chat.completions.create(
        { model: "ref-chat", messages: [{ role: "user", content: "count to 200" }], stream: true },
        { signal: controller.signal }
      )
      let seen = 0
      await (async () => {
        for await (const _ of stream) if (++seen === 3) controller.abort()
      })().catch(() => undefined)
      await server.run(Effect.flatMap(Gateway, (g) => g.idle))
      const records = await server.run(usageOf(accountId))
      expect(records).toHaveLength(1)
      expect(records[0]!.output_tokens).toBeGreaterThan(0n)
      expect(records[0]!.output_tokens).toBeLessThan(200n)
      m.faults.reset()
    })
  })
})

describe("gateway: mounted in the platform's own Node server (AppRoutes, PlatformServices)", () => {
  it("answers /v1 calls with the owner's key: a free model, and 402 on a priced one without credits", async () => {
    const machine = await startReferenceMachine({ port: 0, models: MACHINE_MODELS })
    const platform = await startNodeServer(gatewayCatalogue([{ id: "m-a", url: machine.url, score: 1 }]), MemoryPlatformStores)
    try {
      const client = new OpenAI({ baseURL: `${platform.url}/v1`, apiKey: platform.ownerSecret, maxRetries: 0 })
      const reply = await client.chat.completions.create({ model: "free-chat", messages: [{ role: "user", content: "hi" }] })
      expectValid("CreateChatCompletionResponse", reply)
      const error = await client.chat.completions
        .create({ model: "ref-chat", messages: [{ role: "user", content: "hi" }] })
        .catch((e) => e)
      expect(error.status).toBe(402)
      expect(error.code).toBe("insufficient_credit")
      const models = await client.models.list()
      expect(models.data.map((m) => m.id)).toEqual(expect.arrayContaining(["ref-chat", "free-chat"]))
    } finally {
      await platform.close()
      await machine.close()
    }
  })
})
