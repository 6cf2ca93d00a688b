/**
 * Machine failure accounting through the Node server and reference machines (issue 10, findings
 * 1 and 12): a failure a request causes never cools its machine down (a canary of the gateway's
 * own decides), and a machine that breaks every stream after its head is cooled down for
 * sequential callers too (a success is a complete answer, not a head).
 */
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { canaryBody, Gateway, machinePath, validateCall } from "@model-platform/core/gateway"
import { Effect } from "effect"
import OpenAI from "openai"
import { afterEach, describe, expect, it } from "vitest"
import { gatewayCatalogue, type GatewayServer, MACHINE_CLIENTS, MACHINE_MODELS, newAccount, startGatewayServer } from "./gatewaySupport.ts"

describe("canaries", () => {
  it("every canary is a well-formed call: valid for the platform, answered 200 whole by the reference machine", async () => {
    const m = await startReferenceMachine({ port: 0, models: MACHINE_MODELS })
    try {
      const catalogue = gatewayCatalogue([{ id: "m-a", url: m.url, score: 1 }])
      for (const model of catalogue.models) {
        for (const stream of model.endpoint === "/v1/chat/completions" ? [false, true] : [false]) {
          const body = canaryBody({ endpoint: model.endpoint, model, stream })
          await Effect.runPromise(validateCall(model.endpoint, body, catalogue))
          const res = await fetch(`${m.url}${machinePath(model.endpoint)}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body)
          })
          expect(res.status).toBe(200)
          const text = await res.text()
          if (stream) expect(text.endsWith("data: [DONE]\n\n")).toBe(true)
          else expect(() => JSON.parse(text)).not.toThrow()
        }
      }
    } finally {
      await m.close()
    }
  })
})

describe.each(MACHINE_CLIENTS)("machine client $name", ({ layer: machineClient }) => {
  const machines: Array<ReferenceMachine> = []
  let server: GatewayServer | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
    for (const m of machines.splice(0)) await m.close()
  })
  const gateway = <A>(f: (g: Gateway["Service"]) => Effect.Effect<A>) => server!.run(Effect.flatMap(Gateway, f))

  it("finding 1: one key sending bodies its only machine resets cannot cool the machine down; every other caller is served", async () => {
    // The machine resets bodies above 64 KiB, unanswered (the reference machine does it above
    // 16 MiB): a limit below the platform's own, so the platform cannot refuse these first.
    const m = await startReferenceMachine({ port: 0, models: MACHINE_MODELS, maxBodyBytes: 64 * 1024 })
    machines.push(m)
    server = await startGatewayServer(gatewayCatalogue([{ id: "m-only", url: m.url, score: 0.9 }], { charging: false }), {}, machineClient)
    const attacker = await server.run(newAccount({ permissions: ["inference"] }))
    const pad = "x".repeat(100 * 1024)
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${server.url}/v1/embeddings`, {
        method: "POST",
        headers: { authorization: `Bearer ${attacker.secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "ref-embed", input: "hi", user: pad })
      })
      expect(res.status).toBe(502)
      expect((await res.json()).error.code).toBe("machine_unreachable")
    }
    await gateway((g) => g.idle)
    expect(await gateway((g) => g.coolingDown)).toEqual([])
    const other = await server.run(newAccount())
    const sdk = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: other.secret, maxRetries: 0 })
    const reply = await sdk.chat.completions.create({ model: "free-chat", messages: [{ role: "user", content: "hi" }] })
    expect(reply.choices[0]!.message.content).toBe("You said: hi")
    const embedding = await sdk.embeddings.create({ model: "ref-embed", input: "hello", encoding_format: "float" })
    expect(embedding.data[0]!.embedding).toHaveLength(1024)
  })

  it("finding 12: a machine dropping every stream after its first bytes is cooled down for a sequential caller; the calls go to the healthy one", async () => {
    const a = await startReferenceMachine({ port: 0, faults: true, id: "a", models: MACHINE_MODELS, initialFaults: { drop_after_chunks: 1 } })
    const b = await startReferenceMachine({ port: 0, faults: true, id: "b", models: MACHINE_MODELS })
    machines.push(a, b)
    server = await startGatewayServer(
      gatewayCatalogue([{ id: "m-a", url: a.url, score: 0.9 }, { id: "m-b", url: b.url, score: 0.8 }], { charging: false }),
      { keepAliveMs: 50, canaryRetryMs: 20 },
      machineClient
    )
    const { secret } = await server.run(newAccount())
    const sdk = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: secret, maxRetries: 0 })
    const streamOnce = async (): Promise<boolean> => {
      const stream = await sdk.chat.completions.create({ model: "free-chat", messages: [{ role: "user", content: "count to 5" }], stream: true })
      let text = ""
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
      return text === "1 2 3 4 5"
    }
    // One call at a time, as a sequential client does, until a call completes (at most 5 s).
    const outcomes: Array<boolean> = []
    const deadline = Date.now() + 5_000
    while (Date.now() < deadline && outcomes[outcomes.length - 1] !== true) outcomes.push(await streamOnce().catch(() => false))
    expect(outcomes[0]).toBe(false)
    expect(outcomes[outcomes.length - 1]).toBe(true)
    expect(await gateway((g) => g.coolingDown)).toEqual(["m-a"])
    // From then on every call completes, on the healthy machine.
    const served = b.stats().served["free-chat"] ?? 0
    for (let i = 0; i < 10; i++) expect(await streamOnce()).toBe(true)
    expect(b.stats().served["free-chat"]).toBe(served + 10)
  })
})
