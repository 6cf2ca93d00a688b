/**
 * The reference machine's tokenizer, shared by every model for honest usage counts.
 *
 * A token is either a run of letters, digits and underscores (any script), or one single
 * character that is neither such a character nor whitespace (punctuation, symbols, emoji).
 * Whitespace separates tokens and is never a token itself.
 *
 *   "Hello, world!"  -> ["Hello", ",", "world", "!"]   (4 tokens)
 *   "max_tokens=16"  -> ["max_tokens", "=", "16"]       (3 tokens)
 */
const TOKEN = /[\p{L}\p{N}\p{M}_]+|[^\s\p{L}\p{N}\p{M}_]/gu

/** The tokens of a text, in order. */
export const tokenize = (text: string): Array<string> => text.match(TOKEN) ?? []

/** The number of tokens in a text. */
export const countTokens = (text: string): number => {
  if (text.length === 0) return 0
  TOKEN.lastIndex = 0
  let n = 0
  while (TOKEN.exec(text) !== null) n++
  return n
}

/**
 * The longest prefix of `text` holding at most `maxTokens` tokens, cut right after the last
 * kept token (so trailing whitespace is dropped when the text is cut).
 */
export const truncateToTokens = (
  text: string,
  maxTokens: number
): { readonly text: string; readonly tokens: number; readonly truncated: boolean } => {
  TOKEN.lastIndex = 0
  let n = 0
  let end = 0
  let m: RegExpExecArray | null
  while ((m = TOKEN.exec(text)) !== null) {
    if (n === maxTokens) return { text: text.slice(0, end), tokens: n, truncated: true }
    n++
    end = m.index + m[0].length
  }
  return { text, tokens: n, truncated: false }
}
