/**
 * Metering rules of the gateway, pure (docs/gateway.md "Metering"):
 *
 * - Prices. The catalogue's credits per million tokens are micro-credits per million tokens once
 *   multiplied by 10^6 (exact, creditsToMicro); credits per request are micro-credits per request.
 *   A call's cost is ceil((input_tokens x input_price + output_tokens x output_price) / 10^6)
 *   + requests x request_price, in bigint micro-credits: rounded UP to a whole micro-credit once
 *   per call (never per token), so no call of a priced model is free by rounding.
 * - Reservation bound (admission). Input tokens <= UTF-8 bytes the model reads + a per-message
 *   overhead (any tokenizer spending >= 1 byte per token); output tokens <= the capped max_tokens;
 *   requests as billed. The bound is the cost of those quantities.
 * - Usage. The machine's own report: chat `usage.prompt_tokens` / `completion_tokens`, embeddings
 *   `usage.prompt_tokens`; forecasts and images are billed per request (tokens 0 unless the
 *   machine reports them). A report that is not made of non-negative integers counts as missing.
 * - Missing usage. The call is billed on an estimate from what the gateway saw: input tokens
 *   ceil(input bytes / 4) and output tokens ceil(output characters / 4) (OpenAI's rule of thumb),
 *   each capped at its reservation bound, so an estimate never exceeds the reservation.
 */
import type { ModelConfig } from "../catalogue/CatalogueConfig.ts"
import { creditsToMicro } from "../kernel/Money.ts"
import type { ValidCall } from "./Validation.ts"

/** Prices of one model in micro-credits: per million tokens (in, out) and per request. */
export interface Prices {
  readonly inputPerMtok: bigint
  readonly outputPerMtok: bigint
  readonly perRequest: bigint
}

export interface Quantities {
  readonly input_tokens: bigint
  readonly output_tokens: bigint
  readonly requests: bigint
}

const MILLION = 1_000_000n

const micro = (credits: number, what: string): bigint => {
  const value = creditsToMicro(credits)
  // The catalogue schema only admits amounts with at most 6 decimals, so this cannot happen.
  if (value === undefined || value < 0n) throw new RangeError(`price ${what} is not a credit amount: ${credits}`)
  return value
}

export const pricesOf = (model: ModelConfig): Prices => ({
  inputPerMtok: micro(model.pricing.input_credits_per_mtok, `${model.id} input`),
  outputPerMtok: micro(model.pricing.output_credits_per_mtok, `${model.id} output`),
  perRequest: micro(model.pricing.credits_per_request, `${model.id} request`)
})

export const isFree = (p: Prices): boolean => p.inputPerMtok === 0n && p.outputPerMtok === 0n && p.perRequest === 0n

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b

/** Cost of a call in micro-credits, rounded up to a whole micro-credit. */
export const costOf = (p: Prices, q: Quantities): bigint =>
  ceilDiv(q.input_tokens * p.inputPerMtok + q.output_tokens * p.outputPerMtok, MILLION) + q.requests * p.perRequest

/** Tokens added per message for role and framing (OpenAI counts 3-4; the reference machine 4). */
export const PER_MESSAGE_OVERHEAD_TOKENS = 8
/** Tokens added per call (reply priming and the like). */
export const PER_CALL_OVERHEAD_TOKENS = 16

const messageCount = (call: ValidCall): number => {
  const messages = call.body.messages
  return Array.isArray(messages) ? messages.length : 0
}

/** Upper bound of the input tokens of a call. */
export const inputTokenBound = (call: ValidCall): bigint => {
  if (call.endpoint === "/v1/forecasts") return 0n
  return BigInt(call.inputBytes + PER_CALL_OVERHEAD_TOKENS + PER_MESSAGE_OVERHEAD_TOKENS * messageCount(call))
}

/** The quantities a call is admitted for (its reservation is their cost). */
export const boundOf = (call: ValidCall): Quantities => ({
  input_tokens: inputTokenBound(call),
  output_tokens: BigInt(call.maxOutputTokens),
  requests: BigInt(call.requests)
})

const count = (value: unknown): bigint | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined

/**
 * The quantities a machine reported in a response body (or a stream's usage chunk), or undefined
 * when the report is missing or malformed.
 */
export const reportedUsage = (call: ValidCall, body: unknown): Quantities | undefined => {
  const requests = BigInt(call.requests)
  const usage = typeof body === "object" && body !== null ? (body as { usage?: unknown }).usage : undefined
  const u = typeof usage === "object" && usage !== null ? (usage as Record<string, unknown>) : undefined
  switch (call.endpoint) {
    case "/v1/chat/completions": {
      if (u === undefined) return undefined
      const input = count(u.prompt_tokens)
      const output = count(u.completion_tokens)
      return input === undefined || output === undefined ? undefined : { input_tokens: input, output_tokens: output, requests }
    }
    case "/v1/embeddings": {
      if (u === undefined) return undefined
      const input = count(u.prompt_tokens)
      return input === undefined ? undefined : { input_tokens: input, output_tokens: 0n, requests }
    }
    case "/v1/forecasts":
    case "/v1/images/generations": {
      // Billed per request: the answer itself is the usage. Token counts only when reported.
      const input = u === undefined ? 0n : count(u.input_tokens ?? u.prompt_tokens) ?? 0n
      const output = u === undefined ? 0n : count(u.output_tokens ?? u.completion_tokens) ?? 0n
      return { input_tokens: input, output_tokens: output, requests }
    }
  }
}

const min = (a: bigint, b: bigint) => (a < b ? a : b)

/** The estimate used when a completed call reports no usage (see the module comment). */
export const estimatedUsage = (call: ValidCall, outputChars: number): Quantities => {
  const bound = boundOf(call)
  return {
    input_tokens: min(bound.input_tokens, BigInt(Math.ceil(call.inputBytes / 4))),
    output_tokens: min(bound.output_tokens, BigInt(Math.ceil(outputChars / 4))),
    requests: bound.requests
  }
}

/** Characters of generated text in a chat completion body (for the estimate). */
export const completionChars = (body: unknown): number => {
  const choices = typeof body === "object" && body !== null ? (body as { choices?: unknown }).choices : undefined
  if (!Array.isArray(choices)) return 0
  let n = 0
  for (const choice of choices) {
    if (typeof choice !== "object" || choice === null) continue
    const c = choice as { message?: unknown; delta?: unknown }
    n += textChars(c.message) + textChars(c.delta)
  }
  return n
}

const textChars = (message: unknown): number => {
  if (typeof message !== "object" || message === null) return 0
  const m = message as { content?: unknown; reasoning_content?: unknown; tool_calls?: unknown }
  let n = (typeof m.content === "string" ? m.content.length : 0) +
    (typeof m.reasoning_content === "string" ? m.reasoning_content.length : 0)
  if (Array.isArray(m.tool_calls)) {
    for (const call of m.tool_calls) {
      const fn = typeof call === "object" && call !== null ? (call as { function?: unknown }).function : undefined
      if (typeof fn === "object" && fn !== null) {
        const f = fn as { name?: unknown; arguments?: unknown }
        n += (typeof f.name === "string" ? f.name.length : 0) + (typeof f.arguments === "string" ? f.arguments.length : 0)
      }
    }
  }
  return n
}

/** The unit and quantity a usage record shows: requests for per-request models, else tokens. */
export const unitOf = (call: ValidCall, p: Prices, q: Quantities): { readonly unit: string; readonly quantity: bigint } =>
  call.endpoint === "/v1/forecasts" || call.endpoint === "/v1/images/generations" ||
    (p.inputPerMtok === 0n && p.outputPerMtok === 0n && p.perRequest > 0n)
    ? { unit: "requests", quantity: q.requests }
    : { unit: "tokens", quantity: q.input_tokens + q.output_tokens }
