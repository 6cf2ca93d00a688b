/**
 * A micro-benchmark of the gateway engine alone (not a test): `Gateway.call` in process, with no
 * HTTP on either side — a fake machine answering at once, constant-time stores (fastStores.ts) —
 * so what it measures is the engine's own CPU per call: authentication, validation, routing,
 * admission (rpm, reservation), reading the answer, and the metering that follows it.
 * docs/performance.md uses it beside the end-to-end benchmark (gateway.ts).
 *
 *   ./platform node adapters/node-http/bench/gatewayCall.ts [calls per run] [stream | tokens]
 *
 * Default: a non-streamed chat completion. `stream`: the same six events as gateway.ts's mock, in
 * one piece; `tokens`: a 200-token reply, one event per chunk (the per-event cost of streaming).
 * Prints the minimum and median over 8 runs of CPU per call at concurrency 1 and 16 (the client's
 * stream is read to its end), and the median wall time per call at concurrency 1.
 */
import { ApiKeysLive } from "@model-platform/core/http"
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { Catalogue } from "@model-platform/core/catalogue"
import { Gateway, MachineClient } from "@model-platform/core/gateway"
import { Ledger } from "@model-platform/core/ledger"
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import { FastMemoryStores } from "./fastStores.ts"
import { BENCH_COMPLETION, BENCH_MODEL, BENCH_STREAM, benchCatalogue, benchDelta, benchEvent } from "./fixtures.ts"

const MODEL = BENCH_MODEL
const mode = process.argv[3] ?? "chat"
if (!["chat", "stream", "tokens"].includes(mode)) throw new Error(`mode is chat, stream or tokens, got ${mode}`)
const streamed = mode !== "chat"
const encoder = new TextEncoder()

const completion = encoder.encode(BENCH_COMPLETION)
const sixEvents = encoder.encode(BENCH_STREAM.join(""))
const tokenEvents = [
  benchDelta({ role: "assistant", content: "" }),
  ...Array.from({ length: 200 }, (_, i) => benchDelta({ content: ` ${i}` })),
  benchDelta({}, "stop"),
  benchEvent({ choices: [], usage: { prompt_tokens: 20, completion_tokens: 200, total_tokens: 220 } }),
  "data: [DONE]\n\n"
].map((text) => encoder.encode(text))

const machine = Layer.succeed(MachineClient, MachineClient.of({
  post: () =>
    Effect.succeed(
      streamed
        ? {
          status: 200,
          headers: { "content-type": "text/event-stream" },
          body: mode === "tokens" ? Stream.fromIterable(tokenEvents) : Stream.succeed(sixEvents)
        }
        : { status: 200, headers: { "content-type": "application/json" }, body: Stream.succeed(completion) }
    ),
  models: () => Effect.succeed([MODEL])
}))

const catalogue = await benchCatalogue("http://127.0.0.1:9/v1")

const runtime = ManagedRuntime.make(Gateway.layer().pipe(
  Layer.provideMerge(Layer.mergeAll(Ledger.layer, ApiKeysLive, machine)),
  Layer.provideMerge(Catalogue.layer(catalogue)),
  Layer.provideMerge(FastMemoryStores)
))
const secret = await runtime.runPromise(Effect.gen(function*() {
  yield* (yield* AccountStore).insert({ id: "acct_bench", email: "bench@bench.local", created_at: new Date().toISOString() })
  const key = yield* (yield* ApiKeys).issue("acct_bench", { name: "bench", permissions: ["inference"] })
  yield* (yield* Ledger).credit("acct_bench", { ref: "grant", machine_id: null, amount: 10n ** 15n, type: "credit_added" })
  return key.secret
}))
const gateway = await runtime.runPromise(Gateway)
const body = JSON.stringify({
  model: MODEL,
  messages: [{ role: "user", content: "Say hello to the benchmark." }],
  max_tokens: 16,
  ...(streamed ? { stream: true } : {})
})
const one = Effect.flatMap(
  gateway.call("/v1/chat/completions", `Bearer ${secret}`, body),
  (response) => (response._tag === "Events" ? Stream.runDrain(response.stream) : Effect.void)
)

const run = async (n: number, concurrency: number) => {
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next++ < n) await runtime.runPromise(one)
  }))
  await runtime.runPromise(gateway.idle)
  const cpu = process.cpuUsage(cpu0)
  return { wallUs: ((performance.now() - t0) * 1000) / n, cpuUs: (cpu.user + cpu.system) / n }
}

const n = Number(process.argv[2] ?? (mode === "tokens" ? 500 : 10_000))
await run(n, 16) // warm-up
const c1: Array<number> = []
const c16: Array<number> = []
const wall1: Array<number> = []
for (let round = 0; round < 8; round++) {
  const one = await run(n, 1)
  c1.push(one.cpuUs)
  wall1.push(one.wallUs)
  c16.push((await run(n, 16)).cpuUs)
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
const f = (x: number) => x.toFixed(0)
console.log(
  `gateway.call in process (${mode}, ${n} calls x 8 runs): CPU per call c=1 min ${f(Math.min(...c1))} / median ${f(median(c1))} µs, ` +
    `c=16 min ${f(Math.min(...c16))} / median ${f(median(c16))} µs; wall per call c=1 median ${f(median(wall1))} µs`
)
await runtime.dispose()
