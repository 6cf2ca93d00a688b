/**
 * Text at the boundary: the one rule for every string a client can send to the management API
 * (bodies, query, path, stored headers such as Idempotency-Key). A string may not hold NUL
 * (U+0000) or a lone surrogate: PostgreSQL refuses the first, and every store would keep the
 * second differently (PostgreSQL and DynamoDB as U+FFFD, memory as sent), so what a client is
 * told was saved would not be what was saved. Refused with 400 `invalid_request` naming the field.
 */
import { Schema } from "effect"

/** What is wrong with `text` as client text, or undefined when it is fine. */
export const textProblem = (text: string): string | undefined => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0) return `must not contain NUL (U+0000), found at character ${i}`
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++
        continue
      }
      return `must be valid Unicode: a lone surrogate (U+${c.toString(16).toUpperCase()}) at character ${i}`
    }
    if (c >= 0xdc00 && c <= 0xdfff) {
      return `must be valid Unicode: a lone surrogate (U+${c.toString(16).toUpperCase()}) at character ${i}`
    }
  }
  return undefined
}

/** The check of the rule, for a string schema: `Schema.String.check(isText)`. */
export const isText = Schema.makeFilter<string>((text) => textProblem(text), {
  expected: "text without NUL (U+0000) or lone surrogates"
})

/** Client text of `minLength` to `maxLength` characters. */
export const Text = (minLength: number, maxLength: number) =>
  Schema.String.check(isText, Schema.isMinLength(minLength), Schema.isMaxLength(maxLength))
