/** An error answered in OpenAI's shape: `{error: {message, type, code, param}}` with `status`. */
export class ApiError extends Error {
  readonly status: number
  readonly type: string
  readonly code: string | null
  readonly param: string | null
  constructor(status: number, code: string | null, message: string, param: string | null = null, type?: string) {
    super(message)
    this.status = status
    this.code = code
    this.param = param
    this.type = type ?? (status >= 500 ? "server_error" : "invalid_request_error")
  }

  toJSON(): { error: { message: string; type: string; code: string | null; param: string | null } } {
    return { error: { message: this.message, type: this.type, code: this.code, param: this.param } }
  }
}

/** 400 invalid_input naming the offending field. */
export const invalidInput = (param: string, message: string): ApiError => new ApiError(400, "invalid_input", message, param)

/** A plain JSON object (not an array, not null). */
export const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** A non-negative safe integer. */
export const isNonNegativeInt = (u: unknown): u is number => typeof u === "number" && Number.isSafeInteger(u) && u >= 0

/** FNV-1a 32-bit hash of a string's UTF-16 code units. */
export const fnv1a = (s: string, seed = 0x811c9dc5): number => {
  let h = seed >>> 0
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h >>> 0
}
