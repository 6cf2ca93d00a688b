import Ajv2020Module from "ajv/dist/2020.js"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  GREETING,
  MAX_OUTPUT_TOKENS,
  MESSAGE_OVERHEAD_TOKENS,
  parseChatRequest,
  REPLY_PRIMING_TOKENS,
  runChat
} from "../src/ChatModel.ts"
import { startReferenceMachine } from "../src/ReferenceMachine.ts"
import type { ReferenceMachine } from "../src/ReferenceMachine.ts"
import { countTokens, tokenize } from "../src/Tokenizer.ts"
import { assertValid } from "./openaiSchema.ts"
import { client, get, post } from "./support.ts"

let machine: ReferenceMachine
let openai: OpenAI

beforeAll(async () => {
  machine = await startReferenceMachine({ port: 0 })
  openai = client(machine)
})
afterAll(() => machine.close())

const user = (content: string): OpenAI.ChatCompletionMessageParam => ({ role: "user", content })

const collect = async (params: OpenAI.ChatCompletionCreateParamsStreaming) => {
  const chunks: Array<OpenAI.ChatCompletionChunk> = []
  for await (const chunk of await openai.chat.completions.create(params)) {
    assertValid("CreateChatCompletionStreamResponse", chunk)
    chunks.push(chunk)
  }
  return chunks
}

const weatherTool: OpenAI.ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", minLength: 1 },
        days: { type: "integer", minimum: 1, maximum: 7 },
        units: { type: "string", enum: ["celsius", "fahrenheit"] },
        detailed: { type: "boolean" },
        tags: { type: "array", items: { type: "string" }, minItems: 1 }
      },
      required: ["city", "units", "days", "tags"],
      additionalProperties: false
    }
  }
}
const timeTool: OpenAI.ChatCompletionTool = {
  type: "function",
  function: { name: "get_time", parameters: { type: "object", properties: { zone: { type: "string" } } } }
}

const unwrapDefault = <T>(m: any): T => (typeof m === "function" ? m : m.default)
const Ajv = unwrapDefault<new(o: object) => { compile: (s: object) => (v: unknown) => boolean }>(Ajv2020Module)

describe("tokenizer", () => {
  it("splits words and single punctuation marks", () => {
    expect(tokenize("Hello, world!")).toEqual(["Hello", ",", "world", "!"])
    expect(tokenize("max_tokens=16 héllo  ünïcode 3.5")).toEqual(["max_tokens", "=", "16", "héllo", "ünïcode", "3", ".", "5"])
    expect(countTokens("")).toBe(0)
    expect(countTokens("  a  b ")).toBe(2)
  })
})

describe("GET /v1/models and /health", () => {
  it("lists the models as OpenAI does", async () => {
    const raw = await get(machine, "/v1/models")
    expect(raw.status).toBe(200)
    assertValid("ListModelsResponse", raw.body)
    const ids: Array<string> = []
    for await (const m of openai.models.list()) ids.push(m.id)
    expect(ids).toEqual(["ref-chat", "ref-embed", "ref-forecast", "ref-image"])
    const one = await openai.models.retrieve("ref-embed")
    assertValid("Model", one)
    expect(one).toMatchObject({ id: "ref-embed", object: "model", owned_by: "ref-lab" })
  })

  it("answers health on /health and /v1/health", async () => {
    for (const path of ["/health", "/v1/health"]) {
      const h = await get(machine, path)
      expect(h.status).toBe(200)
      expect(h.body).toMatchObject({ status: "ok", models: ["ref-chat", "ref-embed", "ref-forecast", "ref-image"] })
    }
  })

  it("serves only the models it was started with", async () => {
    const m = await startReferenceMachine({ models: ["ref-chat", { id: "my-embed", kind: "embeddings" }] })
    try {
      const h = await get(m, "/health")
      expect(h.body.models).toEqual(["ref-chat", "my-embed"])
      const e = await client(m).embeddings.create({ model: "my-embed", input: "x", encoding_format: "float" })
      expect(e.model).toBe("my-embed")
      await expect(client(m).embeddings.create({ model: "ref-embed", input: "x" })).rejects.toBeInstanceOf(
        OpenAI.NotFoundError
      )
    } finally {
      await m.close()
    }
  })
})

describe("POST /v1/chat/completions", () => {
  it("replies deterministically with honest usage", async () => {
    const messages: Array<OpenAI.ChatCompletionMessageParam> = [
      { role: "system", content: "You are terse." },
      user("What is the capital of France?")
    ]
    const a = await openai.chat.completions.create({ model: "ref-chat", messages })
    assertValid("CreateChatCompletionResponse", a)
    const choice = a.choices[0]!
    expect(choice.message.content).toBe("You said: What is the capital of France?")
    expect(choice.finish_reason).toBe("stop")
    expect(choice.logprobs).toBeNull()
    expect(choice.message.refusal).toBeNull()
    const prompt = REPLY_PRIMING_TOKENS + 2 * MESSAGE_OVERHEAD_TOKENS + countTokens("You are terse.") +
      countTokens("What is the capital of France?")
    expect(a.usage).toEqual({
      prompt_tokens: prompt,
      completion_tokens: countTokens(choice.message.content!),
      total_tokens: prompt + countTokens(choice.message.content!)
    })
    const b = await openai.chat.completions.create({ model: "ref-chat", messages })
    expect(b.choices[0]!.message.content).toBe(choice.message.content)
    expect(b.usage).toEqual(a.usage)
  })

  it("greets when there is no user text, and reads text content parts", async () => {
    const a = await openai.chat.completions.create({ model: "ref-chat", messages: [{ role: "system", content: "hi" }] })
    expect(a.choices[0]!.message.content).toBe(GREETING)
    const b = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [{ role: "user", content: [{ type: "text", text: "part one" }, { type: "text", text: "part two" }] }]
    })
    expect(b.choices[0]!.message.content).toBe("You said: part one part two")
  })

  it("truncates at max_tokens with finish_reason length", async () => {
    const r = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [user("count to 100")],
      max_tokens: 7
    })
    assertValid("CreateChatCompletionResponse", r)
    expect(r.choices[0]!.message.content).toBe("1 2 3 4 5 6 7")
    expect(r.choices[0]!.finish_reason).toBe("length")
    expect(r.usage!.completion_tokens).toBe(7)
    const full = await openai.chat.completions.create({ model: "ref-chat", messages: [user("count to 5")] })
    expect(full.choices[0]!.message.content).toBe("1 2 3 4 5")
    expect(full.choices[0]!.finish_reason).toBe("stop")
  })

  it("caps replies at the model's max output tokens", async () => {
    const r = await openai.chat.completions.create({ model: "ref-chat", messages: [user("count to 5000")] })
    expect(r.choices[0]!.finish_reason).toBe("length")
    expect(r.usage!.completion_tokens).toBe(MAX_OUTPUT_TOKENS)
  })

  it("stops before a stop sequence", async () => {
    const r = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [user("count to 20")],
      stop: [" 9", "nothing"]
    })
    expect(r.choices[0]!.message.content).toBe("1 2 3 4 5 6 7 8")
    expect(r.choices[0]!.finish_reason).toBe("stop")
    expect(r.usage!.completion_tokens).toBe(8)
  })

  it("streams word by word, then finish_reason, then usage, then [DONE]", async () => {
    const messages = [user("Stream this sentence, please.")]
    const plain = await openai.chat.completions.create({ model: "ref-chat", messages })
    const chunks = await collect({ model: "ref-chat", messages, stream: true, stream_options: { include_usage: true } })
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" })
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")
    expect(content).toBe(plain.choices[0]!.message.content)
    const words = chunks.filter((c) => (c.choices[0]?.delta.content ?? "") !== "")
    expect(words.map((c) => c.choices[0]!.delta.content)).toEqual(["You", " said:", " Stream", " this", " sentence,", " please."])
    const finish = chunks[chunks.length - 2]!
    expect(finish.choices[0]!.finish_reason).toBe("stop")
    const last = chunks[chunks.length - 1]!
    expect(last.choices).toEqual([])
    expect(last.usage).toEqual(plain.usage)
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1)
  })

  it("streams without a usage chunk when include_usage is not set", async () => {
    const chunks = await collect({ model: "ref-chat", messages: [user("count to 3")], stream: true })
    expect(chunks.every((c) => c.usage === undefined)).toBe(true)
    expect(chunks[chunks.length - 1]!.choices[0]!.finish_reason).toBe("stop")
  })

  it("streams a truncated reply with finish_reason length and honest usage", async () => {
    const chunks = await collect({
      model: "ref-chat",
      messages: [user("count to 50")],
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true }
    })
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("1 2 3 4")
    expect(chunks[chunks.length - 2]!.choices[0]!.finish_reason).toBe("length")
    expect(chunks[chunks.length - 1]!.usage!.completion_tokens).toBe(4)
  })

  it("sends the raw SSE framing: data lines, blank lines, [DONE]", async () => {
    const res = await fetch(`${machine.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "ref-chat", messages: [user("hi")], stream: true })
    })
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/)
    const text = await res.text()
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true)
    for (const event of text.split("\n\n").filter((e) => e.length > 0)) expect(event.startsWith("data: ")).toBe(true)
  })

  it("calls a tool the user asks for, with arguments valid for its parameters", async () => {
    const r = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [user("Please call get_weather with city=\"New York\" days=3 units=fahrenheit")],
      tools: [timeTool, weatherTool]
    })
    assertValid("CreateChatCompletionResponse", r)
    const choice = r.choices[0]!
    expect(choice.finish_reason).toBe("tool_calls")
    expect(choice.message.content).toBeNull()
    const call = choice.message.tool_calls![0]!
    if (call.type !== "function") throw new Error("expected a function call")
    expect(call.function.name).toBe("get_weather")
    const args = JSON.parse(call.function.arguments)
    expect(args).toEqual({ city: "New York", days: 3, units: "fahrenheit", tags: ["example"] })
    const check = new Ajv({ strict: false }).compile(weatherTool.function.parameters!)
    expect(check(args)).toBe(true)
    expect(r.usage!.completion_tokens).toBe(countTokens("get_weather") + countTokens(call.function.arguments))
  })

  it("follows tool_choice: a named function, required, none", async () => {
    const named = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [user("what time is it")],
      tools: [weatherTool, timeTool],
      tool_choice: { type: "function", function: { name: "get_time" } }
    })
    const c1 = named.choices[0]!.message.tool_calls![0]!
    expect(c1.type === "function" && c1.function.name).toBe("get_time")
    expect(c1.type === "function" && JSON.parse(c1.function.arguments)).toEqual({})

    const required = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [user("anything")],
      tools: [weatherTool, timeTool],
      tool_choice: "required"
    })
    const c2 = required.choices[0]!.message.tool_calls![0]!
    expect(c2.type === "function" && c2.function.name).toBe("get_weather")

    const auto = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [user("no tool needed")],
      tools: [weatherTool]
    })
    expect(auto.choices[0]!.finish_reason).toBe("stop")
    expect(auto.choices[0]!.message.tool_calls).toBeUndefined()

    const none = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [user("call get_weather")],
      tools: [weatherTool],
      tool_choice: "none"
    })
    expect(none.choices[0]!.finish_reason).toBe("stop")
  })

  it("answers a tool result in text, ending the loop", async () => {
    const r = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [
        user("call get_time"),
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "get_time", arguments: "{}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "12:00 UTC" }
      ],
      tools: [timeTool]
    })
    assertValid("CreateChatCompletionResponse", r)
    expect(r.choices[0]!.message.content).toBe("Tool result received: 12:00 UTC")
  })

  it("streams a tool call that the SDK reassembles", async () => {
    const chunks = await collect({
      model: "ref-chat",
      messages: [user("use get_weather for city=Oslo")],
      tools: [weatherTool],
      stream: true,
      stream_options: { include_usage: true }
    })
    const first = chunks[0]!.choices[0]!.delta
    expect(first.role).toBe("assistant")
    expect(first.tool_calls![0]!.function!.name).toBe("get_weather")
    const args = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).map((t) => t.function?.arguments ?? "")
      .join("")
    expect(JSON.parse(args)).toMatchObject({ city: "Oslo" })
    expect(chunks[chunks.length - 2]!.choices[0]!.finish_reason).toBe("tool_calls")
    expect(chunks[chunks.length - 1]!.usage!.completion_tokens).toBe(countTokens("get_weather") + countTokens(args))

    const runner = openai.chat.completions.stream({
      model: "ref-chat",
      messages: [user("use get_weather for city=Oslo")],
      tools: [weatherTool]
    })
    const final = await runner.finalChatCompletion()
    const call = final.choices[0]!.message.tool_calls![0]!
    expect(call.type === "function" && JSON.parse(call.function.arguments)).toEqual(JSON.parse(args))
  })

  it("adds reasoning_content with enable_thinking, counted in completion tokens", async () => {
    const body = { model: "ref-chat", messages: [user("think first")], enable_thinking: true }
    const r = await openai.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming)
    assertValid("CreateChatCompletionResponse", r)
    const message = r.choices[0]!.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string }
    expect(message.reasoning_content).toMatch(/^The conversation has 1 messages/)
    const reasoning = countTokens(message.reasoning_content!)
    expect(r.usage!.completion_tokens_details!.reasoning_tokens).toBe(reasoning)
    expect(r.usage!.completion_tokens).toBe(reasoning + countTokens(message.content!))
    const chunks = await collect({ ...body, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming)
    const streamed = chunks.map((c) => (c.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? "")
      .join("")
    expect(streamed).toBe(message.reasoning_content)
  })

  it("surfaces errors as the SDK's typed errors in OpenAI's shape", async () => {
    const notFound = await openai.chat.completions.create({ model: "nope", messages: [user("x")] }).catch((e) => e)
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError)
    expect(notFound).toMatchObject({ status: 404, code: "model_not_found", type: "invalid_request_error" })

    const wrong = await openai.chat.completions.create({ model: "ref-embed", messages: [user("x")] }).catch((e) => e)
    expect(wrong).toBeInstanceOf(OpenAI.BadRequestError)
    expect(wrong.code).toBe("wrong_endpoint")
    expect(wrong.message).toContain("/v1/embeddings")

    const n2 = await openai.chat.completions.create({ model: "ref-chat", messages: [user("x")], n: 2 }).catch((e) => e)
    expect(n2).toBeInstanceOf(OpenAI.BadRequestError)
    expect(n2.param).toBe("n")

    const empty = await openai.chat.completions.create({ model: "ref-chat", messages: [] }).catch((e) => e)
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError)
    expect(empty.param).toBe("messages")

    for (const [body, code] of [
      ["{not json", "invalid_json"],
      ["[1,2]", "invalid_json"],
      [{ messages: [user("x")] }, "missing_model"],
      [{ model: "ref-chat", messages: [user("x")], max_tokens: 0 }, "invalid_input"],
      [{ model: "ref-chat", messages: [user("x")], stop: ["a", "b", "c", "d", "e"] }, "invalid_input"],
      [{ model: "ref-chat", messages: [user("x")], tool_choice: "required" }, "invalid_input"],
      [{ model: "ref-chat", messages: [user("x")], stream_options: { include_usage: true } }, "invalid_input"]
    ] as const) {
      const r = await post(machine, "/v1/chat/completions", body)
      expect(r.status).toBe(400)
      expect(r.body.error.code).toBe(code)
      assertValid("ErrorResponse", r.body)
    }
    const unknown = await post(machine, "/v1/nothing", {})
    expect(unknown.status).toBe(404)
    assertValid("ErrorResponse", unknown.body)
  })

  it("refuses prompts beyond the context length", async () => {
    const r = await openai.chat.completions.create({
      model: "ref-chat",
      messages: [user("word ".repeat(9000))]
    }).catch((e) => e)
    expect(r).toBeInstanceOf(OpenAI.BadRequestError)
    expect(r.code).toBe("context_length_exceeded")
  })

  it("computes a short reply in well under a millisecond of CPU", () => {
    const body = {
      model: "ref-chat",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello to the benchmark." }],
      max_tokens: 64
    }
    const text = JSON.stringify(body)
    for (let i = 0; i < 2000; i++) JSON.stringify(runChat(parseChatRequest(JSON.parse(text), "ref-chat")))
    const n = 20_000
    const cpu = process.cpuUsage()
    for (let i = 0; i < n; i++) JSON.stringify(runChat(parseChatRequest(JSON.parse(text), "ref-chat")))
    const used = process.cpuUsage(cpu)
    const microsPerCall = (used.user + used.system) / n
    expect(microsPerCall).toBeLessThan(100)
  })
})
