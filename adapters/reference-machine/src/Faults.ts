/**
 * Fault injection for tests: the settings a test may change on a running reference machine,
 * programmatically (`machine.faults.set(...)`) or with `POST /_control` when started with
 * `faults: true`. See docs/reference-machine.md.
 */
import { invalidInput, isNonNegativeInt, isRecord } from "./Errors.ts"

/** How usage is reported (non-streaming `usage` field and the streaming usage chunk). */
export type UsageMode = "honest" | "omit" | "inflate" | "zero" | "invalid"

export interface FaultSettings {
  /** Milliseconds to wait before the first byte of every response except /_control. */
  readonly latency_ms: number
  /** Milliseconds between two chunks of a stream. */
  readonly token_delay_ms: number
  /** Milliseconds between a stream's headers and its first chunk (a slow first token). */
  readonly first_chunk_delay_ms: number
  /** The next N inference requests (POST) fail instead of being served. */
  readonly fail_next: number
  /** How they fail: "status" answers `fail_status` in OpenAI's error shape; "reset" destroys the connection unanswered. */
  readonly fail_kind: "status" | "reset"
  /** Status of a "status" failure (400-599); 503 uses code no_capacity, others server_error. */
  readonly fail_status: number
  /** When set, every stream's connection is destroyed after this many SSE events were written (0: right after the headers). */
  readonly drop_after_chunks: number | null
  /** How usage is reported. */
  readonly usage: UsageMode
  /** When false, /health answers 503 {status: "unhealthy"}. */
  readonly healthy: boolean
  /** When set, only these model ids are served: others answer 503 no_capacity and leave /health and /v1/models. */
  readonly serving: ReadonlyArray<string> | null
}

export const DEFAULT_FAULTS: FaultSettings = {
  latency_ms: 0,
  token_delay_ms: 0,
  first_chunk_delay_ms: 0,
  fail_next: 0,
  fail_kind: "status",
  fail_status: 500,
  drop_after_chunks: null,
  usage: "honest",
  healthy: true,
  serving: null
}

const USAGE_MODES: ReadonlyArray<UsageMode> = ["honest", "omit", "inflate", "zero", "invalid"]

/** Checks a patch (e.g. the body of POST /_control); unknown keys are refused. */
export const parseFaultPatch = (u: unknown): Partial<FaultSettings> => {
  if (!isRecord(u)) throw invalidInput("body", "the control body must be a JSON object")
  const out: { -readonly [K in keyof FaultSettings]?: FaultSettings[K] } = {}
  for (const [k, v] of Object.entries(u)) {
    switch (k) {
      case "reset":
        break
      case "latency_ms":
      case "token_delay_ms":
      case "first_chunk_delay_ms":
      case "fail_next":
        if (!isNonNegativeInt(v)) throw invalidInput(k, `${k} must be a non-negative integer`)
        out[k] = v
        break
      case "fail_kind":
        if (v !== "status" && v !== "reset") throw invalidInput(k, "fail_kind must be \"status\" or \"reset\"")
        out.fail_kind = v
        break
      case "fail_status":
        if (!isNonNegativeInt(v) || v < 400 || v > 599) throw invalidInput(k, "fail_status must be 400 to 599")
        out.fail_status = v
        break
      case "drop_after_chunks":
        if (v !== null && !isNonNegativeInt(v)) throw invalidInput(k, "drop_after_chunks must be null or a non-negative integer")
        out.drop_after_chunks = v
        break
      case "usage":
        if (!USAGE_MODES.includes(v as UsageMode)) throw invalidInput(k, `usage must be one of ${USAGE_MODES.join(", ")}`)
        out.usage = v as UsageMode
        break
      case "healthy":
        if (typeof v !== "boolean") throw invalidInput(k, "healthy must be a boolean")
        out.healthy = v
        break
      case "serving":
        if (v !== null && !(Array.isArray(v) && v.every((s) => typeof s === "string"))) {
          throw invalidInput(k, "serving must be null or an array of model ids")
        }
        out.serving = v
        break
      default:
        throw invalidInput(k, `unknown control ${k}`)
    }
  }
  return out
}

/** Usage as the current mode reports it. */
export const reportUsage = <U extends { prompt_tokens: number; completion_tokens?: number; total_tokens: number }>(
  mode: UsageMode,
  usage: U
): U | undefined => {
  switch (mode) {
    case "honest":
      return usage
    case "omit":
      return undefined
    case "inflate":
      return {
        ...usage,
        prompt_tokens: usage.prompt_tokens * 10,
        ...(usage.completion_tokens === undefined ? {} : { completion_tokens: usage.completion_tokens * 10 }),
        total_tokens: usage.total_tokens * 10
      }
    case "zero":
      return { ...usage, prompt_tokens: 0, ...(usage.completion_tokens === undefined ? {} : { completion_tokens: 0 }), total_tokens: 0 }
    case "invalid":
      return {
        ...usage,
        prompt_tokens: -1,
        ...(usage.completion_tokens === undefined ? {} : { completion_tokens: -1 }),
        total_tokens: -2
      }
  }
}
