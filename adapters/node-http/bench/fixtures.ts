/**
 * What the benchmarks share: the mock machine's answers (a chat completion with usage, and the
 * same reply as six stream events), and the catalogue: one machine (`mock`) at `baseUrl` serving one priced chat model,
 * charging open (a card rail is configured, no start date), one tier whose rpm no run
 * reaches, so every call is counted and none refused, and a `builder` plan on the machine whose
 * allowance (200 micro-credits, two calls) the budgeted scenario's key spends first.
 */
import { parseCatalogue } from "@model-platform/core/catalogue"
import { Effect } from "effect"

export const BENCH_MODEL = "bench-chat"
/** Credits per million input and output tokens. */
export const BENCH_PRICE = { input: 2, output: 6 } as const

/** What the mock machine reports per call. */
export const BENCH_USAGE = { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 } as const

/** The mock's non-streamed answer, a JSON text. */
export const BENCH_COMPLETION = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1_700_000_000,
  model: BENCH_MODEL,
  choices: [{
    index: 0,
    message: { role: "assistant", content: "Hello from the benchmark machine.", refusal: null },
    logprobs: null,
    finish_reason: "stop"
  }],
  usage: BENCH_USAGE
})

/** One SSE event of a chat completion chunk with these fields. */
export const benchEvent = (fields: object) =>
  `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model: BENCH_MODEL, ...fields })}\n\n`
export const benchDelta = (delta: object, finish: string | null = null) =>
  benchEvent({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })

/** The mock's streamed answer: the same reply and usage as six events. */
export const BENCH_STREAM: ReadonlyArray<string> = [
  benchDelta({ role: "assistant", content: "" }),
  benchDelta({ content: "Hello from " }),
  benchDelta({ content: "the benchmark machine." }),
  benchDelta({}, "stop"),
  benchEvent({ choices: [], usage: BENCH_USAGE }),
  "data: [DONE]\n\n"
]

export const benchCatalogue = (baseUrl: string) =>
  Effect.runPromise(parseCatalogue(JSON.stringify({
    operators: [{ id: "bench-op", name: "Bench", website: "https://bench.example", description: "", featured: false, certifications: [] }],
    machines: [{
      id: "mock",
      name: "Fixed-latency mock",
      operator: "bench-op",
      region: "local",
      base_url: baseUrl,
      hardware: { gpus: [], cpu_cores: 2, memory_gb: 4, storage_gb: 10 },
      serverless_models: [BENCH_MODEL],
      rent: null,
      // The budgeted scenario's key is scoped to this plan (its allowance is spent in the warm-up).
      subscribe: {
        currency: "USD",
        period_days: 30,
        plans: [{ id: "builder", name: "Builder", usd_per_period: 20, models: [BENCH_MODEL], payment_methods: ["card"] }]
      },
      network: { status: "registered", reachability: "public" },
      score: 1,
      initial_health: "online"
    }],
    models: [{
      id: BENCH_MODEL,
      name: BENCH_MODEL,
      family: "bench",
      description: "The benchmark's chat model",
      modality: "text",
      service: "chat",
      owned_by: "bench",
      endpoint: "/v1/chat/completions",
      context_length: 8192,
      max_output_tokens: 1024,
      features: [],
      pricing: { input_credits_per_mtok: BENCH_PRICE.input, output_credits_per_mtok: BENCH_PRICE.output, credits_per_request: 0 }
    }],
    packages: [],
    payments: { card: { processor: "test" }, stablecoin: null, charging_starts_at: null },
    prices: {
      credits_per_usd: 1000,
      services: [{
        service: "chat",
        group: "inference",
        name: "Chat",
        unit: "mtok",
        unit_label: "million tokens",
        credits_per_unit: 1,
        allowances: { free: 0, builder: 0.0002, scale: 0, trial: 0 }
      }]
    },
    tiers: [{ tier: 0, name: "Bench", purchased_credits: 0, rpm: 1_000_000_000, monthly_limit_credits: 1_000_000 }]
  })))
