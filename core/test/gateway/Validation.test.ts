/**
 * validateCall (core/src/gateway/Validation.ts): every error code with a body a user would send,
 * the caps, history trimming, bodies exactly as OpenAI's SDK sends them, and a property: for any
 * JSON body it succeeds or fails with a GatewayError answered 400/404, never a defect.
 */
import { Cause, Effect, Exit } from "effect"
import fc from "fast-check"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { type CatalogueConfig, parseCatalogue } from "../../src/catalogue/CatalogueConfig.ts"
import { GatewayError } from "../../src/gateway/GatewayErrors.ts"
import { toInferenceError } from "../../src/http/InferenceRefusals.ts"
import type { InferenceError } from "../../src/kernel/Errors.ts"
import { type Endpoint, utf8Bytes, type ValidCall, validateCall } from "../../src/gateway/Validation.ts"

const demoText = readFileSync(resolve(import.meta.dirname, "../../../adapters/node-http/catalogue.demo.json"), "utf8")
const demo: CatalogueConfig = Effect.runSync(parseCatalogue(demoText))

/** Without its catalogue limits: the defaults apply. */
const unlimited = (id: string, as: string) => {
  const { limits: _, ...model } = demo.models.find((m) => m.id === id)!
  return { ...model, id: as }
}

/**
 * The demo plus a reasoning chat model (without tools), and a forecasting and an image model whose
 * catalogue entries set no limits.
 */
const config: CatalogueConfig = {
  ...demo,
  models: [
    ...demo.models,
    {
      ...demo.models.find((m) => m.id === "ref-chat")!,
      id: "ref-think",
      name: "Reference Thinker",
      features: ["streaming", "reasoning"],
      max_output_tokens: 4096
    },
    unlimited("ref-forecast", "plain-forecast"),
    unlimited("ref-image", "plain-image")
  ]
}

const CHAT = "/v1/chat/completions"
const EMBED = "/v1/embeddings"
const FORECAST = "/v1/forecasts"
const IMAGES = "/v1/images/generations"

const run = (endpoint: Endpoint, body: unknown) => Effect.runSyncExit(validateCall(endpoint, body, config))

const ok = (endpoint: Endpoint, body: unknown): ValidCall => {
  const exit = run(endpoint, body)
  if (Exit.isFailure(exit)) throw new Error(`expected success, got ${Cause.pretty(exit.cause)}`)
  return exit.value
}

const fail = (endpoint: Endpoint, body: unknown): InferenceError => {
  const exit = run(endpoint, body)
  if (Exit.isSuccess(exit)) throw new Error(`expected failure, got ${JSON.stringify(exit.value.body)}`)
  const error = Cause.findErrorOption(exit.cause)
  if (error._tag !== "Some") throw new Error(`expected a failure, got ${Cause.pretty(exit.cause)}`)
  expect(error.value).toBeInstanceOf(GatewayError)
  // As the inference surface answers it (http/InferenceRefusals.ts).
  return toInferenceError(error.value)
}

const user = (content: string) => ({ role: "user", content })
const hello = [user("Hello")]
const tool = {
  type: "function",
  function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } }
}

describe("validateCall: error codes", () => {
  const cases: ReadonlyArray<readonly [string, Endpoint, unknown, number, string, RegExp]> = [
    ["body not an object", CHAT, [1, 2], 400, "invalid_input", /JSON object/],
    ["no model", CHAT, { messages: hello }, 400, "missing_model", /needs "model".*language model/],
    ["empty model", EMBED, { model: "", input: "x" }, 400, "missing_model", /embedding model/],
    ["null model", FORECAST, { model: null, history: [1, 2], horizon: 1 }, 400, "missing_model", /forecasting model/],
    ["model not a string", CHAT, { model: 42, messages: hello }, 400, "invalid_input", /^model: must be a string/],
    ["unknown model", CHAT, { model: "gpt-4o", messages: hello }, 404, "model_not_found", /No model "gpt-4o"/],
    [
      "embedding model at chat",
      CHAT,
      { model: "ref-embed", messages: hello },
      400,
      "wrong_endpoint",
      /^ref-embed is an embedding model: call POST \/v1\/embeddings$/
    ],
    [
      "chat model at embeddings",
      EMBED,
      { model: "ref-chat", input: "x" },
      400,
      "wrong_endpoint",
      /^ref-chat is a language model: call POST \/v1\/chat\/completions$/
    ],
    [
      "chat model at forecasts",
      FORECAST,
      { model: "ref-chat", history: [1, 2], horizon: 1 },
      400,
      "wrong_endpoint",
      /call POST \/v1\/chat\/completions/
    ],
    [
      "forecast model at images",
      IMAGES,
      { model: "ref-forecast", prompt: "x" },
      400,
      "wrong_endpoint",
      /ref-forecast is a forecasting model: call POST \/v1\/forecasts/
    ],
    [
      "image model at chat",
      CHAT,
      { model: "ref-image", messages: hello },
      400,
      "wrong_endpoint",
      /ref-image is an image model: call POST \/v1\/images\/generations/
    ],
    ["unknown machine", CHAT, { model: "ref-chat", messages: hello, machine: "moon-1" }, 404, "machine_not_found", /No machine "moon-1"/],
    ["machine not a string", CHAT, { model: "ref-chat", messages: hello, machine: 7 }, 400, "invalid_input", /^machine:/],
    // chat
    ["no messages", CHAT, { model: "ref-chat" }, 400, "invalid_input", /^messages: Missing key/],
    ["empty messages", CHAT, { model: "ref-chat", messages: [] }, 400, "invalid_input", /^messages: .*at least one message/],
    ["messages not an array", CHAT, { model: "ref-chat", messages: "Hello" }, 400, "invalid_input", /^messages: Expected array/],
    ["bad role", CHAT, { model: "ref-chat", messages: [{ role: "human", content: "hi" }] }, 400, "invalid_input", /^messages\[0\]\.role: /],
    ["content a number", CHAT, { model: "ref-chat", messages: [{ role: "user", content: 5 }] }, 400, "invalid_input", /^messages\[0\]\.content: /],
    ["message without role", CHAT, { model: "ref-chat", messages: [user("a"), { content: "b" }] }, 400, "invalid_input", /^messages\[1\]\.role: Missing key/],
    ["max_tokens 0", CHAT, { model: "ref-chat", messages: hello, max_tokens: 0 }, 400, "invalid_input", /^max_tokens: .*at least 1/],
    ["max_tokens a string", CHAT, { model: "ref-chat", messages: hello, max_tokens: "100" }, 400, "invalid_input", /^max_tokens: /],
    ["max_completion_tokens 1.5", CHAT, { model: "ref-chat", messages: hello, max_completion_tokens: 1.5 }, 400, "invalid_input", /^max_completion_tokens: /],
    ["temperature 3", CHAT, { model: "ref-chat", messages: hello, temperature: 3 }, 400, "invalid_input", /^temperature: .*0 to 2/],
    ["stream a string", CHAT, { model: "ref-chat", messages: hello, stream: "yes" }, 400, "invalid_input", /^stream: /],
    ["five stops", CHAT, { model: "ref-chat", messages: hello, stop: ["a", "b", "c", "d", "e"] }, 400, "invalid_input", /^stop/],
    ["n of 2", CHAT, { model: "ref-chat", messages: hello, n: 2 }, 400, "invalid_input", /^n: must be 1/],
    ["stream_options without stream", CHAT, { model: "ref-chat", messages: hello, stream_options: { include_usage: true } }, 400, "invalid_input", /^stream_options: only allowed when stream/],
    ["tools on a model without tools", CHAT, { model: "ref-think", messages: hello, tools: [tool] }, 400, "invalid_input", /ref-think does not support function calling/],
    ["tool_choice on a model without tools", CHAT, { model: "ref-think", messages: hello, tool_choice: "required" }, 400, "invalid_input", /"tools" feature/],
    ["tools not an array", CHAT, { model: "ref-chat", messages: hello, tools: tool }, 400, "invalid_input", /^tools: /],
    ["enable_thinking on a non-reasoning model", CHAT, { model: "ref-chat", messages: hello, enable_thinking: true }, 400, "invalid_input", /^enable_thinking: ref-chat is not a reasoning model/],
    ["enable_thinking not a boolean", CHAT, { model: "ref-think", messages: hello, enable_thinking: "on" }, 400, "invalid_input", /^enable_thinking: /],
    // embeddings
    ["no input", EMBED, { model: "ref-embed" }, 400, "invalid_input", /^input: Missing key/],
    ["input a number", EMBED, { model: "ref-embed", input: 5 }, 400, "invalid_input", /^input: /],
    ["empty input list", EMBED, { model: "ref-embed", input: [] }, 400, "invalid_input", /^input: .*1 to 256 texts/],
    ["257 texts", EMBED, { model: "ref-embed", input: Array.from({ length: 257 }, () => "x") }, 400, "invalid_input", /^input: at most 256 texts per request \(got 257\)/],
    ["token arrays", EMBED, { model: "ref-embed", input: [[1, 2, 3]] }, 400, "invalid_input", /token arrays are not accepted/],
    ["a number among texts", EMBED, { model: "ref-embed", input: ["a", 3] }, 400, "invalid_input", /^input(\[1\])?: /],
    ["empty text", EMBED, { model: "ref-embed", input: ["a", ""] }, 400, "invalid_input", /^input\[1\]: must not be empty/],
    ["dimensions not listed", EMBED, { model: "ref-embed", input: "x", dimensions: 100 }, 400, "invalid_input", /^dimensions: ref-embed supports 1024, 768, 512, 256, 128, 64, 32 \(got 100\)/],
    ["dimensions 0", EMBED, { model: "ref-embed", input: "x", dimensions: 0 }, 400, "invalid_input", /^dimensions: /],
    ["bad input_type", EMBED, { model: "ref-embed", input: "x", input_type: "search" }, 400, "invalid_input", /^input_type: Expected "document" \| "query"/],
    ["bad encoding_format", EMBED, { model: "ref-embed", input: "x", encoding_format: "int8" }, 400, "invalid_input", /^encoding_format: /],
    // forecasts
    ["no history", FORECAST, { model: "ref-forecast", horizon: 3 }, 400, "invalid_history", /^history: Missing key/],
    ["one value", FORECAST, { model: "ref-forecast", history: [1], horizon: 3 }, 400, "invalid_history", /^history: .*at least 2 values/],
    ["history of strings", FORECAST, { model: "ref-forecast", history: ["1", "2"], horizon: 3 }, 400, "invalid_history", /^history\[0\]: /],
    ["history with null", FORECAST, { model: "ref-forecast", history: [1, null, 3], horizon: 3 }, 400, "invalid_history", /^history\[1\]: /],
    ["non-finite history", FORECAST, { model: "ref-forecast", history: [1, Number.POSITIVE_INFINITY], horizon: 3 }, 400, "invalid_history", /^history\[1\]: /],
    ["no horizon", FORECAST, { model: "ref-forecast", history: [1, 2] }, 400, "invalid_horizon", /^horizon: Missing key/],
    ["horizon 0", FORECAST, { model: "ref-forecast", history: [1, 2], horizon: 0 }, 400, "invalid_horizon", /^horizon: .*at least 1/],
    ["horizon 2.5", FORECAST, { model: "ref-forecast", history: [1, 2], horizon: 2.5 }, 400, "invalid_horizon", /^horizon: /],
    ["horizon above the limit", FORECAST, { model: "ref-forecast", history: [1, 2], horizon: 65 }, 400, "invalid_horizon", /^horizon: ref-forecast forecasts at most 64 steps \(got 65\)/],
    ["quantile 1", FORECAST, { model: "ref-forecast", history: [1, 2], horizon: 1, quantiles: [0.5, 1] }, 400, "invalid_input", /^quantiles\[1\]: .*strictly between 0 and 1/],
    ["quantile 0", FORECAST, { model: "ref-forecast", history: [1, 2], horizon: 1, quantiles: [0] }, 400, "invalid_input", /^quantiles\[0\]: /],
    ["frequency_seconds 0", FORECAST, { model: "ref-forecast", history: [1, 2], horizon: 1, frequency_seconds: 0 }, 400, "invalid_input", /^frequency_seconds: .*at least 1/],
    // images
    ["no prompt", IMAGES, { model: "ref-image" }, 400, "invalid_input", /^prompt: Missing key/],
    ["empty prompt", IMAGES, { model: "ref-image", prompt: "" }, 400, "invalid_input", /^prompt: /],
    ["11 images", IMAGES, { model: "ref-image", prompt: "a cat", n: 11 }, 400, "invalid_input", /^n: .*1 to 10 images/],
    ["url response_format", IMAGES, { model: "ref-image", prompt: "a cat", response_format: "url" }, 400, "invalid_input", /^response_format: .*b64_json/],
    // bounds of the catalogue, its defaults where a model sets none (issue 22, finding 7)
    ["horizon above the default limit", FORECAST, { model: "plain-forecast", history: [1, 2], horizon: 65 }, 400, "invalid_horizon", /^horizon: plain-forecast forecasts at most 64 steps \(got 65\)/],
    ["a huge horizon", FORECAST, { model: "plain-forecast", history: [1, 2], horizon: 1_000_000_000 }, 400, "invalid_horizon", /at most 64 steps/],
    ["a size the model does not draw", IMAGES, { model: "ref-image", prompt: "a cat", size: "1024x1024" }, 400, "invalid_size", /^size: ref-image draws 64x64, 128x128, 256x256 \(got 1024x1024\)\.$/],
    ["a size above the default sizes", IMAGES, { model: "plain-image", prompt: "a cat", size: "16384x16384" }, 400, "invalid_size", /^size: plain-image draws 1024x1024, 512x512, 256x256 \(got 16384x16384\)/],
    ["a listed size turned", IMAGES, { model: "plain-image", prompt: "a cat", size: "1792x1024" }, 400, "invalid_size", /got 1792x1024/],
    ["a size that is no size", IMAGES, { model: "ref-image", prompt: "a cat", size: "large" }, 400, "invalid_size", /^size: .*WIDTHxHEIGHT/],
    // fields the endpoint does not take (issue 22, finding 7): refused, never passed on
    ["chat best_of", CHAT, { model: "ref-chat", messages: hello, best_of: 4 }, 400, "invalid_input", /^Unrecognized request argument supplied: "best_of"\. POST \/v1\/chat\/completions takes only the fields listed in GET \/v1\/openapi\.json/],
    ["chat vendor extras", CHAT, { model: "ref-chat", messages: hello, top_k: 1, use_beam_search: true, chat_template_kwargs: { enable_thinking: true } }, 400, "invalid_input", /^Unrecognized request arguments supplied: "top_k", "use_beam_search", "chat_template_kwargs"\./],
    ["chat functions (tools' old name)", CHAT, { model: "ref-think", messages: hello, functions: [tool.function] }, 400, "invalid_input", /"functions"/],
    ["chat a null extra", CHAT, { model: "ref-chat", messages: hello, best_of: null }, 400, "invalid_input", /"best_of"/],
    ["chat __proto__", CHAT, JSON.parse(`{"model":"ref-chat","messages":[{"role":"user","content":"hi"}],"__proto__":{"x":1}}`), 400, "invalid_input", /"__proto__"/],
    ["embeddings vendor extra", EMBED, { model: "ref-embed", input: "x", truncate: "END" }, 400, "invalid_input", /^Unrecognized request argument supplied: "truncate"\. POST \/v1\/embeddings/],
    ["forecast num_samples", FORECAST, { model: "ref-forecast", history: [1, 2], horizon: 1, num_samples: 1000 }, 400, "invalid_input", /"num_samples"/],
    ["image quality", IMAGES, { model: "ref-image", prompt: "a cat", quality: "hd", style: "vivid" }, 400, "invalid_input", /"quality", "style"/],
    ["many extras, names cut", CHAT, { model: "ref-chat", messages: hello, a: 1, b: 1, c: 1, d: 1, e: 1, f: 1, ["x".repeat(100)]: 1 }, 400, "invalid_input", /"a", "b", "c", "d", "e" and 2 more\./]
  ]

  it.each(cases)("%s", (_name, endpoint, body, status, code, message) => {
    const error = fail(endpoint, body)
    expect({ status: error.status, code: error.error.code }).toEqual({ status, code })
    expect(error.error.type).toBe(status === 404 ? "not_found_error" : "invalid_request_error")
    expect(error.error.message).toMatch(message)
    expect(error.error.message).not.toContain("\n")
  })

  it("checks the model before the machine, the machine before unknown fields, and those before the rest of the body", () => {
    expect(fail(CHAT, { model: "nope", machine: "nope" }).error.code).toBe("model_not_found")
    expect(fail(CHAT, { model: "ref-embed", machine: "nope" }).error.code).toBe("wrong_endpoint")
    expect(fail(CHAT, { model: "ref-chat", machine: "nope", best_of: 2 }).error.code).toBe("machine_not_found")
    expect(fail(FORECAST, { model: "ref-forecast", history: [1], best_of: 2 }).error.message).toMatch(/^Unrecognized request argument supplied: "best_of"/)
  })

  it("names every field that is wrong, on one line", () => {
    const error = fail(FORECAST, { model: "ref-forecast", history: [1], horizon: 0 })
    expect(error.error.code).toBe("invalid_history")
    expect(error.error.message).toMatch(/^history: .*; horizon: /)
  })
})

describe("validateCall: what the engine gets", () => {
  it("caps max_tokens at the model's max_output_tokens, and sets it when absent", () => {
    const capped = ok(CHAT, { model: "ref-chat", messages: hello, max_tokens: 5000 })
    expect(capped.maxOutputTokens).toBe(1024)
    expect(capped.body.max_tokens).toBe(1024)
    const kept = ok(CHAT, { model: "ref-chat", messages: hello, max_tokens: 16 })
    expect(kept.maxOutputTokens).toBe(16)
    expect(kept.body.max_tokens).toBe(16)
    const absent = ok(CHAT, { model: "ref-chat", messages: hello })
    expect(absent.maxOutputTokens).toBe(1024)
    expect(absent.body.max_tokens).toBe(1024)
    const nulled = ok(CHAT, { model: "ref-chat", messages: hello, max_tokens: null })
    expect(nulled.body.max_tokens).toBe(1024)
  })

  it("takes the smaller of max_tokens and max_completion_tokens and sends both as the cap", () => {
    const call = ok(CHAT, { model: "ref-chat", messages: hello, max_tokens: 300, max_completion_tokens: 200 })
    expect(call.maxOutputTokens).toBe(200)
    expect(call.body).toMatchObject({ max_tokens: 200, max_completion_tokens: 200 })
    const big = ok(CHAT, { model: "ref-chat", messages: hello, max_completion_tokens: 99_999 })
    expect(big.body).toMatchObject({ max_tokens: 1024, max_completion_tokens: 1024 })
  })

  it("removes machine, keeps the rest of the client's body, and reports stream and machine", () => {
    const call = ok(CHAT, {
      model: "ref-chat",
      messages: hello,
      machine: "eu-gpu-1",
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.5,
      logit_bias: { "50256": -100 },
      user: "u-1"
    })
    expect(call.machine).toBe("eu-gpu-1")
    expect(call.stream).toBe(true)
    expect(call.requests).toBe(1)
    expect(call.model.id).toBe("ref-chat")
    expect(call.body).toEqual({
      model: "ref-chat",
      messages: hello,
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.5,
      logit_bias: { "50256": -100 },
      user: "u-1",
      max_tokens: 1024
    })
    expect(ok(CHAT, { model: "ref-chat", messages: hello, stream: null }).stream).toBe(false)
    expect(ok(CHAT, { model: "ref-chat", messages: hello }).machine).toBeUndefined()
  })

  it("accepts OpenAI's service fields (store, metadata, ...) and never sends them on; sends every other field it takes", () => {
    const passed = {
      model: "ref-chat",
      messages: hello,
      n: 1,
      frequency_penalty: -0.5,
      presence_penalty: 1.5,
      logit_bias: { "50256": -100 },
      logprobs: true,
      top_logprobs: 3,
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } },
      parallel_tool_calls: true,
      user: "u-1"
    }
    const call = ok(CHAT, {
      ...passed,
      store: false,
      metadata: { project: "p" },
      service_tier: "auto",
      prompt_cache_key: "k",
      safety_identifier: "s"
    })
    expect(call.body).toEqual({ ...passed, max_tokens: 1024 })
    expect(fail(CHAT, { model: "ref-chat", messages: hello, top_logprobs: 21 }).error.message).toMatch(/^top_logprobs: /)
    expect(fail(CHAT, { model: "ref-chat", messages: hello, presence_penalty: 3 }).error.message).toMatch(/^presence_penalty: .*-2 to 2/)
    expect(fail(CHAT, { model: "ref-chat", messages: hello, metadata: { n: 1 } }).error.message).toMatch(/^metadata\.n: /)
  })

  it("keeps enable_thinking for reasoning models only; false is dropped elsewhere", () => {
    expect(ok(CHAT, { model: "ref-think", messages: hello, enable_thinking: true }).body.enable_thinking).toBe(true)
    expect(ok(CHAT, { model: "ref-think", messages: hello, enable_thinking: false }).body.enable_thinking).toBe(false)
    expect(ok(CHAT, { model: "ref-chat", messages: hello, enable_thinking: false }).body).not.toHaveProperty("enable_thinking")
  })

  it("drops an empty tools list and tool_choice none on a model without tools", () => {
    const call = ok(CHAT, { model: "ref-think", messages: hello, tools: [], tool_choice: "none" })
    expect(call.body).not.toHaveProperty("tools")
    expect(call.body).not.toHaveProperty("tool_choice")
  })

  it("measures input as UTF-8 bytes of the messages and tools (chat) and of the texts (embeddings)", () => {
    const messages = [user("héllo ✓ 😀")]
    const chat = ok(CHAT, { model: "ref-chat", messages })
    expect(chat.inputBytes).toBe(new TextEncoder().encode(JSON.stringify(messages)).length)
    const withTools = ok(CHAT, { model: "ref-chat", messages, tools: [tool] })
    expect(withTools.inputBytes).toBe(chat.inputBytes + new TextEncoder().encode(JSON.stringify([tool])).length)
    const embed = ok(EMBED, { model: "ref-embed", input: ["héllo", "😀"] })
    expect(embed.inputBytes).toBe(6 + 4)
    expect(embed.maxOutputTokens).toBe(0)
    expect(ok(FORECAST, { model: "ref-forecast", history: [1, 2], horizon: 1 }).inputBytes).toBe(0)
  })

  it("sends an image request at one of the model's sizes: the one asked, else its default", () => {
    expect(ok(IMAGES, { model: "ref-image", prompt: "a cat", size: "128x128" }).body.size).toBe("128x128")
    for (const size of [undefined, null, "auto"]) {
      expect(ok(IMAGES, { model: "ref-image", prompt: "a cat", ...(size === undefined ? {} : { size }) }).body.size).toBe("64x64")
      expect(ok(IMAGES, { model: "plain-image", prompt: "a cat", ...(size === undefined ? {} : { size }) }).body.size).toBe("1024x1024")
    }
    for (const size of ["1024x1024", "512x512", "256x256"]) expect(ok(IMAGES, { model: "plain-image", prompt: "a cat", size }).body.size).toBe(size)
  })

  it("a forecasting model without limits takes up to 64 steps and its context as history", () => {
    expect(ok(FORECAST, { model: "plain-forecast", history: [1, 2], horizon: 64 }).body.horizon).toBe(64)
    const context = config.models.find((m) => m.id === "plain-forecast")!.context_length
    const history = Array.from({ length: context + 5 }, (_, i) => i)
    expect(ok(FORECAST, { model: "plain-forecast", history, horizon: 1 }).body.history).toEqual(history.slice(-context))
  })

  it("bills n images as n requests", () => {
    expect(ok(IMAGES, { model: "ref-image", prompt: "a cat", n: 3 }).requests).toBe(3)
    expect(ok(IMAGES, { model: "ref-image", prompt: "a cat" }).requests).toBe(1)
    expect(ok(IMAGES, { model: "ref-image", prompt: "a cat", n: null }).requests).toBe(1)
  })

  it("accepts 256 texts and every listed dimension", () => {
    expect(ok(EMBED, { model: "ref-embed", input: Array.from({ length: 256 }, (_, i) => `t${i}`) }).inputBytes).toBeGreaterThan(0)
    for (const dimensions of [1024, 768, 512, 256, 128, 64, 32]) {
      expect(ok(EMBED, { model: "ref-embed", input: "x", dimensions, input_type: "query" }).body.dimensions).toBe(dimensions)
    }
  })

  it("cuts a history longer than the model's limit to its newest values", () => {
    const history = Array.from({ length: 600 }, (_, i) => i)
    const call = ok(FORECAST, { model: "ref-forecast", history, horizon: 64, quantiles: [0.1, 0.9], frequency_seconds: 60 })
    expect(call.body.history).toEqual(history.slice(-512))
    expect((call.body.history as Array<number>)[0]).toBe(88)
    expect(call.body).toMatchObject({ horizon: 64, quantiles: [0.1, 0.9], frequency_seconds: 60 })
    const short = ok(FORECAST, { model: "ref-forecast", history: [1, 2, 3], horizon: 1 })
    expect(short.body.history).toEqual([1, 2, 3])
  })
})

describe("validateCall: bodies as OpenAI's SDK (openai 7.57) sends them", () => {
  // Captured from the `openai` package's requests (adapters/reference-machine depends on it).
  it("chat with tools, a tool call and its result, max_completion_tokens", () => {
    const body = {
      model: "ref-chat",
      messages: [
        { role: "system", content: "You are helpful." },
        { role: "user", content: "What is the weather in Paris?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Paris\"}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "{\"temp\":21}" }
      ],
      tools: [{
        type: "function",
        function: {
          name: "get_weather",
          description: "Weather by city",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          strict: true
        }
      }],
      tool_choice: "auto",
      parallel_tool_calls: false,
      max_completion_tokens: 200,
      temperature: 0.2
    }
    const call = ok(CHAT, body)
    expect(call.body).toEqual({ ...body, max_tokens: 200 })
    expect(call.maxOutputTokens).toBe(200)
  })

  it("streamed chat with content parts and stream_options", () => {
    const body = {
      model: "ref-chat",
      messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
      stream: true,
      stream_options: { include_usage: true }
    }
    const call = ok(CHAT, body)
    expect(call.stream).toBe(true)
    expect(call.body).toEqual({ ...body, max_tokens: 1024 })
  })

  it("embeddings with encoding_format base64 (the SDK's default): answered as floats, so not passed on", () => {
    const call = ok(EMBED, { model: "ref-embed", input: ["a", "b"], encoding_format: "base64" })
    expect(call.body).toEqual({ model: "ref-embed", input: ["a", "b"] })
    const one = ok(EMBED, { model: "ref-embed", input: "query text", dimensions: 256, encoding_format: "base64" })
    expect(one.body).toEqual({ model: "ref-embed", input: "query text", dimensions: 256 })
  })

  it("image generation", () => {
    const body = { model: "ref-image", prompt: "a cat", n: 2, size: "256x256", response_format: "b64_json" }
    const call = ok(IMAGES, body)
    expect(call.body).toEqual(body)
    expect(call.requests).toBe(2)
  })
})

describe("validateCall: never dies", () => {
  const endpoints: ReadonlyArray<Endpoint> = [CHAT, EMBED, FORECAST, IMAGES]
  const modelIds = [...config.models.map((m) => m.id), "nope", ""]
  const fieldValue = fc.oneof(
    fc.jsonValue(),
    fc.constantFrom(...modelIds),
    fc.array(fc.oneof(fc.double(), fc.integer()), { maxLength: 600 }),
    fc.array(fc.record({ role: fc.constantFrom("user", "assistant", "tool", "x"), content: fc.jsonValue() }), { maxLength: 3 })
  )
  const keys = fc.constantFrom(
    "model", "messages", "input", "history", "horizon", "prompt", "n", "max_tokens", "max_completion_tokens",
    "tools", "tool_choice", "enable_thinking", "stream", "stream_options", "dimensions", "input_type",
    "quantiles", "frequency_seconds", "machine", "__proto__", "constructor", "toString", "best_of", "top_k", "store"
  )
  const SENT_FIELDS: Record<Endpoint, ReadonlyArray<string>> = {
    [CHAT]: [
      "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "n", "temperature", "top_p",
      "frequency_penalty", "presence_penalty", "logit_bias", "logprobs", "top_logprobs", "stop", "seed", "response_format",
      "tools", "tool_choice", "parallel_tool_calls", "user", "enable_thinking"
    ],
    [EMBED]: ["model", "input", "dimensions", "input_type", "user"],
    [FORECAST]: ["model", "history", "horizon", "quantiles", "frequency_seconds"],
    [IMAGES]: ["model", "prompt", "n", "size", "response_format", "seed"]
  }
  const body = fc.oneof(
    fc.jsonValue(),
    fc.dictionary(keys, fieldValue),
    fc.dictionary(fc.string(), fc.jsonValue())
  )
  // Bodies as JSON.parse makes them (own "__proto__" keys and all).
  const parsed = body.map((b) => JSON.parse(JSON.stringify(b) ?? "null") as unknown)

  it("answers any JSON body with a call or a GatewayError answered 400/404", () => {
    fc.assert(
      fc.property(fc.constantFrom(...endpoints), parsed, (endpoint, raw) => {
        const exit = run(endpoint, raw)
        if (Exit.isSuccess(exit)) {
          expect(exit.value.endpoint).toBe(endpoint)
          expect(exit.value.body).not.toHaveProperty("machine")
          // Only fields of the endpoint's body reach a machine.
          for (const field of Object.keys(exit.value.body)) expect(SENT_FIELDS[endpoint]).toContain(field)
          return
        }
        expect(Cause.hasDies(exit.cause)).toBe(false)
        const error = Cause.findErrorOption(exit.cause)
        expect(error._tag).toBe("Some")
        if (error._tag === "Some") {
          expect(error.value).toBeInstanceOf(GatewayError)
          const answered = toInferenceError(error.value)
          expect([400, 404]).toContain(answered.status)
          expect(answered.error.message.length).toBeGreaterThan(0)
        }
      }),
      { numRuns: 2000 }
    )
  })

  it("counts UTF-8 bytes as TextEncoder does", () => {
    fc.assert(fc.property(fc.string({ unit: "binary" }), (s) => {
      expect(utf8Bytes(s)).toBe(new TextEncoder().encode(s).length)
    }))
  })
})
