/**
 * `ref-chat`: a deterministic chat model for tests. See docs/reference-machine.md for the rules.
 */
import { ApiError, fnv1a, invalidInput, isRecord } from "./Errors.ts"
import { countTokens, truncateToTokens } from "./Tokenizer.ts"

/** Tokens added per message (role and framing), as OpenAI's own count does. */
export const MESSAGE_OVERHEAD_TOKENS = 4
/** Tokens added once per prompt (priming the assistant's reply). */
export const REPLY_PRIMING_TOKENS = 2
/** The model's context window (prompt tokens). */
export const CONTEXT_LENGTH = 8192
/** The most tokens one reply may hold; also the default when max_tokens is absent. */
export const MAX_OUTPUT_TOKENS = 1024
/** The reply when the conversation holds no user text. */
export const GREETING = "Hello from ref-chat."

export interface ToolSpec {
  readonly name: string
  readonly parameters: unknown
}

export type ToolChoice =
  | { readonly _tag: "none" }
  | { readonly _tag: "auto" }
  | { readonly _tag: "required" }
  | { readonly _tag: "function"; readonly name: string }

export interface ChatMessage {
  readonly role: string
  readonly text: string
  readonly name: string | undefined
  readonly toolCallText: string
}

export interface ChatRequest {
  readonly model: string
  readonly messages: ReadonlyArray<ChatMessage>
  readonly stream: boolean
  readonly includeUsage: boolean
  readonly maxTokens: number
  readonly stop: ReadonlyArray<string>
  readonly tools: ReadonlyArray<ToolSpec>
  readonly toolsTokens: number
  readonly toolChoice: ToolChoice
  readonly enableThinking: boolean
}

export interface ChatUsage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
  readonly completion_tokens_details?: { readonly reasoning_tokens: number }
}

export type ChatOutcome =
  | {
    readonly _tag: "text"
    readonly content: string
    readonly reasoning: string | undefined
    readonly finishReason: "stop" | "length"
    readonly usage: ChatUsage
  }
  | {
    readonly _tag: "tool_call"
    readonly id: string
    readonly name: string
    readonly arguments: string
    readonly reasoning: string | undefined
    readonly finishReason: "tool_calls" | "length"
    readonly usage: ChatUsage
  }

const ROLES = new Set(["system", "developer", "user", "assistant", "tool", "function"])

/** The text of a message's content: a string, or the `text` of its text parts joined by newlines. */
const contentText = (content: unknown, index: number): string => {
  if (content === undefined || content === null) return ""
  if (typeof content === "string") return content
  if (Array.isArray(content)) {
    const texts: Array<string> = []
    for (const part of content) {
      if (!isRecord(part) || typeof part.type !== "string") {
        throw invalidInput(`messages[${index}].content`, "each content part must be an object with a type")
      }
      if ((part.type === "text" || part.type === "input_text") && typeof part.text === "string") texts.push(part.text)
      if (part.type === "refusal" && typeof part.refusal === "string") texts.push(part.refusal)
    }
    return texts.join("\n")
  }
  throw invalidInput(`messages[${index}].content`, "content must be a string, an array of content parts or null")
}

const parseMessages = (raw: unknown): Array<ChatMessage> => {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw invalidInput("messages", "messages must be a non-empty array of {role, content}")
  }
  const out: Array<ChatMessage> = []
  for (let i = 0; i < raw.length; i++) {
    const m: unknown = raw[i]
    if (!isRecord(m) || typeof m.role !== "string" || !ROLES.has(m.role)) {
      throw invalidInput(
        `messages[${i}].role`,
        "each message needs a role: system, developer, user, assistant, tool or function"
      )
    }
    let toolCallText = ""
    if (Array.isArray(m.tool_calls)) {
      for (const c of m.tool_calls) {
        if (isRecord(c) && isRecord(c.function)) {
          const fn = c.function
          toolCallText += `${typeof fn.name === "string" ? fn.name : ""} ${
            typeof fn.arguments === "string" ? fn.arguments : ""
          } `
        }
      }
    }
    out.push({
      role: m.role,
      text: contentText(m.content, i),
      name: typeof m.name === "string" ? m.name : undefined,
      toolCallText
    })
  }
  return out
}

const parseTools = (raw: unknown): Array<ToolSpec> => {
  if (raw === undefined || raw === null) return []
  if (!Array.isArray(raw)) throw invalidInput("tools", "tools must be an array of function tools")
  return raw.map((t, i) => {
    if (!isRecord(t) || t.type !== "function" || !isRecord(t.function) || typeof t.function.name !== "string") {
      throw invalidInput(`tools[${i}]`, "each tool must be {type: \"function\", function: {name, parameters?}}")
    }
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(t.function.name)) {
      throw invalidInput(`tools[${i}].function.name`, "a function name is 1 to 64 of a-z A-Z 0-9 _ -")
    }
    return { name: t.function.name, parameters: t.function.parameters }
  })
}

const parseToolChoice = (raw: unknown, tools: ReadonlyArray<ToolSpec>): ToolChoice => {
  if (raw === undefined || raw === null) return { _tag: "auto" }
  if (raw === "none" || raw === "auto" || raw === "required") {
    if (raw === "required" && tools.length === 0) throw invalidInput("tool_choice", "tool_choice \"required\" needs tools")
    return { _tag: raw }
  }
  if (isRecord(raw) && raw.type === "function" && isRecord(raw.function) && typeof raw.function.name === "string") {
    const name = raw.function.name
    if (!tools.some((t) => t.name === name)) {
      throw invalidInput("tool_choice", `tool_choice names the function ${name}, which is not among the tools`)
    }
    return { _tag: "function", name }
  }
  throw invalidInput(
    "tool_choice",
    "tool_choice must be \"none\", \"auto\", \"required\" or {type: \"function\", function: {name}}"
  )
}

const parseStop = (raw: unknown): Array<string> => {
  if (raw === undefined || raw === null) return []
  if (typeof raw === "string") return raw.length > 0 ? [raw] : []
  if (Array.isArray(raw) && raw.length <= 4 && raw.every((s) => typeof s === "string")) {
    return (raw as Array<string>).filter((s) => s.length > 0)
  }
  throw invalidInput("stop", "stop must be a string or an array of up to 4 strings")
}

const optionalPositiveInt = (body: Record<string, unknown>, key: string): number | undefined => {
  const v = body[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
    throw invalidInput(key, `${key} must be an integer of at least 1`)
  }
  return v
}

/** Validates a chat body (model already checked by the caller) into a request. */
export const parseChatRequest = (body: Record<string, unknown>, model: string): ChatRequest => {
  const messages = parseMessages(body.messages)
  const n = body.n
  if (n !== undefined && n !== null && n !== 1) throw invalidInput("n", "n must be 1 (one choice per request)")
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean") {
    throw invalidInput("stream", "stream must be a boolean")
  }
  const stream = body.stream === true
  let includeUsage = false
  const so = body.stream_options
  if (so !== undefined && so !== null) {
    if (!isRecord(so)) throw invalidInput("stream_options", "stream_options must be an object")
    if (!stream) throw invalidInput("stream_options", "stream_options is only allowed when stream is true")
    includeUsage = so.include_usage === true
  }
  const a = optionalPositiveInt(body, "max_tokens")
  const b = optionalPositiveInt(body, "max_completion_tokens")
  const requested = a === undefined ? b : b === undefined ? a : Math.min(a, b)
  const maxTokens = Math.min(requested ?? MAX_OUTPUT_TOKENS, MAX_OUTPUT_TOKENS)
  const stop = parseStop(body.stop)
  const tools = parseTools(body.tools)
  const toolChoice = parseToolChoice(body.tool_choice, tools)
  for (const k of ["temperature", "top_p", "seed", "presence_penalty", "frequency_penalty"] as const) {
    const v = body[k]
    if (v !== undefined && v !== null && (typeof v !== "number" || !Number.isFinite(v))) {
      throw invalidInput(k, `${k} must be a number`)
    }
  }
  const et = body.enable_thinking
  if (et !== undefined && et !== null && typeof et !== "boolean") {
    throw invalidInput("enable_thinking", "enable_thinking must be a boolean")
  }
  const toolsTokens = tools.length === 0 ? 0 : countTokens(JSON.stringify(body.tools))
  return {
    model,
    messages,
    stream,
    includeUsage,
    maxTokens,
    stop,
    tools,
    toolsTokens,
    toolChoice,
    enableThinking: et === true
  }
}

/**
 * Prompt tokens: for each message 4 + tokens of its content, name and tool calls; plus 2 for
 * priming the reply; plus the tokens of the JSON of `tools` when tools are given.
 */
export const promptTokens = (req: ChatRequest): number => {
  let n = REPLY_PRIMING_TOKENS + req.toolsTokens
  for (const m of req.messages) {
    n += MESSAGE_OVERHEAD_TOKENS + countTokens(m.text)
    if (m.name !== undefined) n += countTokens(m.name)
    if (m.toolCallText.length > 0) n += countTokens(m.toolCallText)
  }
  return n
}

const collapse = (s: string): string => s.replace(/\s+/g, " ").trim()

const COUNT_TO = /\bcount to (\d{1,7})\b/i

/** The full reply before max_tokens and stop apply. */
export const replyText = (messages: ReadonlyArray<ChatMessage>, budget: number): string => {
  const last = messages[messages.length - 1]
  if (last !== undefined && (last.role === "tool" || last.role === "function")) {
    return `Tool result received: ${collapse(last.text)}`
  }
  let user: ChatMessage | undefined
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]
    if (m !== undefined && m.role === "user") {
      user = m
      break
    }
  }
  const text = user === undefined ? "" : collapse(user.text)
  if (text.length === 0) return GREETING
  const count = COUNT_TO.exec(text)
  if (count !== null) {
    // Enough numbers to exceed the budget by one, so that truncation reports "length" honestly.
    const n = Math.min(Number(count[1]), budget + 1)
    const parts: Array<string> = []
    for (let i = 1; i <= n; i++) parts.push(String(i))
    return parts.length === 0 ? "0" : parts.join(" ")
  }
  return `You said: ${text}`
}

/** The reasoning text produced when enable_thinking is true. */
export const reasoningText = (req: ChatRequest): string => {
  let user = 0
  for (const m of req.messages) if (m.role === "user") user++
  return `The conversation has ${req.messages.length} messages, ${user} from the user. I reply by the reference rule.`
}

/** Applies stop sequences (cut before the earliest match) then max_tokens. */
export const applyLimits = (
  text: string,
  stop: ReadonlyArray<string>,
  maxTokens: number
): { readonly text: string; readonly tokens: number; readonly finishReason: "stop" | "length" } => {
  let cut = text
  for (const s of stop) {
    const i = cut.indexOf(s)
    if (i >= 0) cut = cut.slice(0, i)
  }
  const t = truncateToTokens(cut, maxTokens)
  return { text: t.text, tokens: t.tokens, finishReason: t.truncated ? "length" : "stop" }
}

// ---- tool calls --------------------------------------------------------------------------

/** The tool to call for this request, or undefined for a text reply. */
export const chooseTool = (req: ChatRequest): ToolSpec | undefined => {
  if (req.tools.length === 0 || req.toolChoice._tag === "none") return undefined
  const last = req.messages[req.messages.length - 1]
  // After a tool result the model answers in text, so tool loops end.
  if (last === undefined || last.role === "tool" || last.role === "function") return undefined
  const choice = req.toolChoice
  if (choice._tag === "function") return req.tools.find((t) => t.name === choice.name)
  const text = last.role === "user" ? last.text.toLowerCase() : ""
  const mentioned = req.tools.find((t) => {
    const name = t.name.toLowerCase()
    return text.includes(`call ${name}`) || text.includes(`use ${name}`)
  })
  if (mentioned !== undefined) return mentioned
  return choice._tag === "required" ? req.tools[0] : undefined
}

/** Values written as `key=value` or `key: value` in a message (value quoted or one word). */
const messageValues = (text: string): Map<string, string> => {
  const out = new Map<string, string>()
  const re = /([A-Za-z_][A-Za-z0-9_]*)\s*[=:]\s*(?:"([^"]*)"|'([^']*)'|([^\s,;]+))/g
  let m: RegExpExecArray | null
  while ((m = re.exec(text)) !== null) {
    const key = m[1]
    if (key !== undefined && !out.has(key)) out.set(key, m[2] ?? m[3] ?? m[4] ?? "")
  }
  return out
}

const schemaType = (s: Record<string, unknown>): string | undefined => {
  const t = s.type
  if (typeof t === "string") return t
  if (Array.isArray(t)) return t.find((x): x is string => typeof x === "string" && x !== "null") ?? "null"
  if (isRecord(s.properties)) return "object"
  if (isRecord(s.items)) return "array"
  return undefined
}

const clampNumber = (s: Record<string, unknown>, n: number, integer: boolean): number => {
  let v = integer ? Math.round(n) : n
  if (typeof s.minimum === "number" && v < s.minimum) v = integer ? Math.ceil(s.minimum) : s.minimum
  if (typeof s.exclusiveMinimum === "number" && v <= s.exclusiveMinimum) {
    v = integer ? Math.floor(s.exclusiveMinimum) + 1 : s.exclusiveMinimum + 1
  }
  if (typeof s.maximum === "number" && v > s.maximum) v = integer ? Math.floor(s.maximum) : s.maximum
  if (typeof s.exclusiveMaximum === "number" && v >= s.exclusiveMaximum) {
    v = integer ? Math.ceil(s.exclusiveMaximum) - 1 : s.exclusiveMaximum - 1
  }
  return v
}

/** A value valid for a (simple) JSON schema, taking `given` from the message where it fits. */
const sampleValue = (schema: unknown, given: string | undefined, values: Map<string, string>, depth: number): unknown => {
  if (!isRecord(schema)) return given ?? "example"
  if ("const" in schema) return schema.const
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum.find((e) => given !== undefined && String(e) === given) ?? schema.enum[0]
  }
  for (const k of ["anyOf", "oneOf", "allOf"] as const) {
    const alts = schema[k]
    if (Array.isArray(alts) && alts.length > 0) {
      const first = alts.find((a) => !(isRecord(a) && a.type === "null")) ?? alts[0]
      return sampleValue(first, given, values, depth)
    }
  }
  switch (schemaType(schema)) {
    case "null":
      return null
    case "boolean":
      return given === "true" ? true : false
    case "integer":
    case "number": {
      const integer = schemaType(schema) === "integer"
      const parsed = given === undefined ? Number.NaN : Number(given)
      return clampNumber(schema, Number.isFinite(parsed) ? parsed : 0, integer)
    }
    case "array": {
      const min = typeof schema.minItems === "number" ? schema.minItems : 0
      const items: Array<unknown> = []
      for (let i = 0; i < Math.min(min, 16); i++) items.push(sampleValue(schema.items, undefined, values, depth + 1))
      return items
    }
    case "object":
      return depth > 8 ? {} : sampleObject(schema, values, depth + 1)
    default: {
      let s = given ?? "example"
      if (typeof schema.minLength === "number" && s.length < schema.minLength) s = s.padEnd(schema.minLength, "x")
      if (typeof schema.maxLength === "number" && s.length > schema.maxLength) s = s.slice(0, schema.maxLength)
      return s
    }
  }
}

const sampleObject = (schema: Record<string, unknown>, values: Map<string, string>, depth: number): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  const props = isRecord(schema.properties) ? schema.properties : {}
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : [])
  for (const [key, sub] of Object.entries(props)) {
    const given = values.get(key)
    if (required.has(key) || given !== undefined) out[key] = sampleValue(sub, given, values, depth)
  }
  for (const key of required) if (!(key in out)) out[key] = "example"
  return out
}

/** The arguments (a JSON object string) for calling `tool` after the last user message. */
export const toolArguments = (tool: ToolSpec, req: ChatRequest): string => {
  let userText = ""
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i]
    if (m !== undefined && m.role === "user") {
      userText = m.text
      break
    }
  }
  const values = messageValues(userText)
  const schema = isRecord(tool.parameters) ? tool.parameters : { type: "object", properties: {} }
  return JSON.stringify(sampleObject(schema, values, 0))
}

/** Runs the model: the whole outcome, computed at once (streaming only slices it). */
export const runChat = (req: ChatRequest): ChatOutcome => {
  const prompt = promptTokens(req)
  if (prompt > CONTEXT_LENGTH) {
    throw new ApiError(
      400,
      "context_length_exceeded",
      `This model's maximum context length is ${CONTEXT_LENGTH} tokens; the messages hold ${prompt}.`,
      "messages"
    )
  }
  // Reasoning comes first and counts against max_tokens, as OpenAI's reasoning tokens do.
  const thought = req.enableThinking ? truncateToTokens(reasoningText(req), req.maxTokens) : undefined
  const reasoning = thought?.text
  const reasoningTokens = thought === undefined ? 0 : thought.tokens
  const budget = req.maxTokens - reasoningTokens
  const usage = (completion: number): ChatUsage => {
    const total = completion + reasoningTokens
    return reasoning === undefined
      ? { prompt_tokens: prompt, completion_tokens: total, total_tokens: prompt + total }
      : {
        prompt_tokens: prompt,
        completion_tokens: total,
        total_tokens: prompt + total,
        completion_tokens_details: { reasoning_tokens: reasoningTokens }
      }
  }
  const tool = chooseTool(req)
  if (tool !== undefined) {
    const args = toolArguments(tool, req)
    const nameTokens = countTokens(tool.name)
    const cut = truncateToTokens(args, Math.max(0, budget - nameTokens))
    const id = `call_${fnv1a(`${tool.name}\u0000${args}\u0000${req.messages.length}`).toString(36)}${
      fnv1a(args, 7).toString(36)
    }`
    return {
      _tag: "tool_call",
      id,
      name: tool.name,
      arguments: cut.text,
      reasoning,
      finishReason: cut.truncated ? "length" : "tool_calls",
      usage: usage(nameTokens + cut.tokens)
    }
  }
  const limited = applyLimits(replyText(req.messages, budget), req.stop, budget)
  return {
    _tag: "text",
    content: limited.text,
    reasoning,
    finishReason: limited.finishReason,
    usage: usage(limited.tokens)
  }
}

/** Splits a reply into streaming pieces: one word each, with the whitespace before it. */
export const streamPieces = (text: string): Array<string> => text.match(/\s*\S+/g) ?? []

/** Splits tool-call arguments into streaming pieces of at most 16 characters. */
export const argumentPieces = (args: string): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < args.length; i += 16) out.push(args.slice(i, i + 16))
  return out
}
