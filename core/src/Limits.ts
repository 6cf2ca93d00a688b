/**
 * Limits on what a request may carry, in one place (docs/limits.md lists every value): body sizes
 * per surface, JSON nesting depth, header sizes, string and array lengths. The HTTP boundary
 * (api/RequestLimits.ts) and the gateway's validation (gateway/Validation.ts) both read them here.
 */

/** Deepest JSON nesting accepted in any body (objects and arrays; a scalar at the top is depth 0). */
export const MAX_JSON_DEPTH = 64

/**
 * Whether a parsed JSON value nests deeper than `max` levels. Iterative, so a value nested far
 * deeper than the call stack allows is answered too (and never stringified or walked recursively).
 */
export const exceedsJsonDepth = (value: unknown, max: number = MAX_JSON_DEPTH): boolean => {
  const stack: Array<{ readonly value: unknown; readonly depth: number }> = [{ value, depth: 0 }]
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!
    if (typeof v !== "object" || v === null) continue
    if (depth + 1 > max) return true
    const children = Array.isArray(v) ? v : Object.values(v)
    for (const child of children) {
      if (typeof child === "object" && child !== null) stack.push({ value: child, depth: depth + 1 })
    }
  }
  return false
}
