/**
 * fast-check arbitraries of HTTP requests for the fuzz suite (FuzzSuite.ts), per endpoint of the
 * HttpApi definitions: valid bodies and queries (sampled from the endpoint's own schemas with
 * effect's Arbitrary), near-valid ones (one field dropped, retyped, added or set to an edge value),
 * wrong types, invalid JSON and invalid UTF-8, deep nesting (10 000 levels), huge values (up to
 * ~2 MB), unicode edge cases (NUL, lone surrogates, RTL marks, emoji, U+FFFF, BOM, long text), path
 * ids of any bytes (percent-encoded junk, `..`, over-long), query strings, content types, headers
 * and other methods.
 *
 * A generated case is a description, not bytes: ids the platform made (orders, keys, receipts...)
 * are `Known` references resolved when the case is sent, and deep or huge values are expanded then,
 * so cases stay small, printable and replayable from the seed.
 */
import fc from "fast-check"
import type { ApiEndpoint } from "./ApiEndpoints.ts"

// ---- Case description ---------------------------------------------------------------------

/** Ids the platform made or the catalogue holds, by kind; resolved at send time. */
export type KnownKind =
  | "model" | "machine" | "operator" | "package" | "order" | "key" | "receipt" | "ticket" | "address" | "region" | "plan"

/** A reference to the `pick`-th known id of a kind (modulo how many there are when sent). */
export class Known {
  readonly kind: KnownKind
  readonly pick: number
  constructor(kind: KnownKind, pick: number) {
    this.kind = kind
    this.pick = pick
  }
  toJSON() {
    return `<known ${this.kind} #${this.pick}>`
  }
}

/** A value nested `depth` levels deep, expanded when sent. */
export class Deep {
  readonly depth: number
  readonly shape: "array" | "object"
  constructor(depth: number, shape: "array" | "object") {
    this.depth = depth
    this.shape = shape
  }
  toJSON() {
    return `<${this.depth} levels of ${this.shape}s>`
  }
}

/** A huge value of about `bytes` bytes, expanded when sent. */
export class Huge {
  readonly bytes: number
  readonly shape: "ascii" | "emoji" | "numbers" | "strings" | "keys"
  constructor(bytes: number, shape: "ascii" | "emoji" | "numbers" | "strings" | "keys") {
    this.bytes = bytes
    this.shape = shape
  }
  toJSON() {
    return `<${this.shape} of ${this.bytes} bytes>`
  }
}

/** JSON text put as it is in place of a value (1e999, -0, a number too long for a double). */
export class RawJson {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
  toJSON() {
    return `<raw ${this.text}>`
  }
}

export type Body =
  | { readonly _tag: "none" }
  /** A JSON value, possibly holding Known, Deep, Huge and RawJson parts. */
  | { readonly _tag: "json"; readonly value: unknown }
  /** Text sent as it is (invalid JSON, a form...). */
  | { readonly _tag: "text"; readonly text: string }
  /** Bytes sent as they are (invalid UTF-8). */
  | { readonly _tag: "bytes"; readonly bytes: ReadonlyArray<number> }

/** A piece of a path or query: raw text (already percent-encoded) or a known id (encoded when sent). */
export type Piece = string | Known

/** The key the suite sends with, resolved when sent. */
export const FUZZ_KEY = "<fuzz key>"

export interface FuzzCase {
  /** What kind of case this is, for the report ("valid", "near-valid: dropped model", ...). */
  readonly kind: string
  readonly method: string
  readonly path: ReadonlyArray<Piece>
  /** The query string without "?", or empty. */
  readonly query: ReadonlyArray<Piece>
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: Body
}

// ---- Edge values --------------------------------------------------------------------------

/** Strings that have broken stores, parsers and displays somewhere. */
export const EDGE_STRINGS: ReadonlyArray<string> = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\ud800y",
  "\udfff",
  "\udc00\ud800",
  "\u202eevil\u202c",
  "\u200f\u05e9\u05dc\u05d5\u05dd",
  "\u0645\u0631\u062d\u0628\u0627",
  "😀",
  "👩‍👩‍👧‍👦",
  "\uffff",
  "\ufffe",
  "\ufeffbom",
  "\u2028\u2029",
  "\u0085",
  "e\u0301\u0301\u0301",
  "𝕏𝕐",
  "\u001b[31mred",
  "\r\n",
  "\t",
  "'; DROP TABLE accounts; --",
  "%00",
  "../../etc/passwd",
  "__proto__",
  "constructor",
  "toString",
  "{\"a\":1}",
  "null",
  "NaN",
  "1e999",
  "a".repeat(129),
  "a".repeat(4096),
  "é".repeat(3000),
  "😀".repeat(2000)
]

export const EDGE_NUMBERS: ReadonlyArray<number> = [
  0, -1, 1, 1.5, -0.5, 4.5, 5, 5000, 5001, 255, 256, 257, 1e21, 1e308, -1e308, 5e-324, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 53 + 2, 3650, 3651
]

export const EDGE_RAW_NUMBERS: ReadonlyArray<string> = ["1e999", "-1e999", "-0", "1" + "0".repeat(400), "0.0000000000000000000000001", "1E2", "00"]

const edgeString = fc.constantFrom(...EDGE_STRINGS)
const anyString = fc.oneof(
  { arbitrary: edgeString, weight: 3 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ maxLength: 20 }), weight: 1 }
)
const edgeNumber = fc.oneof(fc.constantFrom(...EDGE_NUMBERS), fc.double(), fc.integer())

/** Any JSON value of the wrong type for most fields, edge cases first. */
const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  edgeNumber,
  anyString,
  fc.constant([]),
  fc.constant({}),
  fc.array(anyString, { maxLength: 3 }),
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(...EDGE_RAW_NUMBERS).map((text) => new RawJson(text))
)

// ---- Percent-encoding that keeps lone surrogates (as WTF-8 bytes) -------------------------

const hex = (b: number) => "%" + b.toString(16).toUpperCase().padStart(2, "0")

/** Percent-encodes every character but unreserved ones; a lone surrogate becomes its 3 WTF-8 bytes. */
export const percentEncode = (text: string): string => {
  let out = ""
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (/[A-Za-z0-9\-._~]/.test(text[i]!)) {
      out += text[i]
    } else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && text.charCodeAt(i + 1) >= 0xdc00 && text.charCodeAt(i + 1) <= 0xdfff) {
      out += encodeURIComponent(text.slice(i, i + 2))
      i++
    } else if (c >= 0xd800 && c <= 0xdfff) {
      out += hex(0xe0 | (c >> 12)) + hex(0x80 | ((c >> 6) & 0x3f)) + hex(0x80 | (c & 0x3f))
    } else {
      out += encodeURIComponent(text[i]!)
    }
  }
  return out
}

// ---- Path ids -----------------------------------------------------------------------------

/** Raw (already encoded) path ids that have broken routers and stores. */
export const RAW_IDS: ReadonlyArray<string> = [
  "%00", "ord_%00x", "%ff%fe", "%E0%A4%A", "%", "%zz", "%2F", "a%2Fb", "%2e%2e", "..", ".", "%2e", "...", "~", "%20", "+",
  "%0d%0a", "%C0%80", "%ED%A0%80", "%EF%BF%BF", "%F4%90%80%80", "a;b", "a,b", "@", "!", "$", "*", "'", "(", ")", "%u0000",
  "a".repeat(129), "a".repeat(200), "a".repeat(5000), "%41".repeat(300)
]

const kindOfSegment: Readonly<Record<string, KnownKind>> = {
  models: "model",
  machines: "machine",
  operators: "operator",
  orders: "order",
  keys: "key",
  receipts: "receipt"
}

const pathIdArb = (kind: KnownKind | undefined): fc.Arbitrary<{ piece: Piece; label: string }> =>
  fc.oneof(
    ...(kind === undefined ? [] : [{ arbitrary: fc.nat().map((pick) => ({ piece: new Known(kind, pick), label: `known ${kind}` })), weight: 3 }]),
    { arbitrary: fc.constantFrom(...RAW_IDS).map((raw) => ({ piece: raw, label: `raw id ${raw.slice(0, 24)}` })), weight: 4 },
    { arbitrary: anyString.filter((s) => s.length > 0).map((s) => ({ piece: percentEncode(s), label: "encoded string id" })), weight: 3 },
    {
      arbitrary: fc.uint8Array({ minLength: 1, maxLength: 24 }).map((bytes) => ({
        piece: Array.from(bytes, hex).join(""),
        label: "any bytes id"
      })),
      weight: 3
    },
    { arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/).map((s) => ({ piece: s, label: "plain id" })), weight: 2 }
  )

/** The endpoint's path as pieces, with each parameter from `ids`. */
const pathPieces = (endpoint: ApiEndpoint, ids: ReadonlyArray<Piece>): Array<Piece> => {
  const out: Array<Piece> = []
  let i = 0
  for (const segment of endpoint.path.split("/").slice(1)) {
    out.push("/")
    if (segment.startsWith(":")) out.push(ids[i++] ?? "x")
    else out.push(segment)
  }
  return out
}

const paramKinds = (endpoint: ApiEndpoint): ReadonlyArray<KnownKind | undefined> => {
  const segments = endpoint.path.split("/")
  return segments.flatMap((s, i) => (s.startsWith(":") ? [kindOfSegment[segments[i - 1] ?? ""]] : []))
}

const validPath = (endpoint: ApiEndpoint): fc.Arbitrary<Array<Piece>> =>
  fc.tuple(...paramKinds(endpoint).map((kind) =>
    kind === undefined ? fc.stringMatching(/^[a-z0-9_]{1,20}$/) as fc.Arbitrary<Piece> : fc.nat().map((pick): Piece => new Known(kind, pick))
  )).map((ids) => pathPieces(endpoint, ids))

/** Paths that only look like the endpoint's: junk ids, dot segments, doubled or trailing slashes. */
const junkPath = (endpoint: ApiEndpoint): fc.Arbitrary<{ path: Array<Piece>; label: string }> => {
  const kinds = paramKinds(endpoint)
  const junkIds = kinds.length === 0
    ? fc.constant({ path: pathPieces(endpoint, []), label: "path" })
    : fc.tuple(...kinds.map((k) => pathIdArb(k))).map((ids) => ({
      path: pathPieces(endpoint, ids.map((i) => i.piece)),
      label: `path: ${ids.map((i) => i.label).join(", ")}`
    }))
  return fc.oneof(
    { arbitrary: junkIds, weight: 6 },
    {
      arbitrary: fc.tuple(validPath(endpoint), fc.constantFrom("/..", "/.", "/%2e%2e", "/", "//", "/../..", "/./.", "%2F", "/%00")).map(([path, extra]) => ({
        path: [...path, extra],
        label: `path + ${extra}`
      })),
      weight: 2
    },
    {
      arbitrary: fc.tuple(validPath(endpoint), fc.constantFrom("/.", "/..", "//", "/%2e", "/x/..")).map(([path, extra]) => ({
        path: [extra, ...path],
        label: `${extra} + path`
      })),
      weight: 2
    }
  )
}

// ---- Query strings ------------------------------------------------------------------------

const queryNames = (endpoint: ApiEndpoint) => endpoint.queryJsonSchemas.map((q) => q.name)

const kindOfField: Readonly<Record<string, KnownKind>> = {
  model: "model",
  machine: "machine",
  machine_id: "machine",
  operator: "operator",
  package_id: "package",
  order_id: "order",
  code: "ticket",
  to: "address",
  region: "region",
  plan_id: "plan"
}

/** A query from the endpoint's valid queries, with known ids where the field names one. */
const validQuery = (endpoint: ApiEndpoint, valid: ReadonlyArray<Record<string, string>>): fc.Arbitrary<Array<Piece>> =>
  valid.length === 0
    ? fc.constant([])
    : fc.tuple(fc.nat(valid.length - 1), fc.nat()).map(([i, pick]) => {
      const out: Array<Piece> = []
      for (const [name, value] of Object.entries(valid[i]!)) {
        if (out.length > 0) out.push("&")
        out.push(`${percentEncode(name)}=`)
        const kind = kindOfField[name]
        out.push(kind !== undefined && pick % 3 !== 0 ? new Known(kind, pick) : percentEncode(value))
      }
      return out
    })

/** Query strings of any shape: edge values for the endpoint's names, unknown names, raw junk. */
const junkQuery = (endpoint: ApiEndpoint): fc.Arbitrary<Array<Piece>> => {
  const names = [...queryNames(endpoint), "limit", "x", "__proto__", ""]
  const value = fc.oneof(
    anyString.map(percentEncode),
    fc.constantFrom(...RAW_IDS),
    edgeNumber.map((n) => percentEncode(String(n))),
    fc.constantFrom("0", "-1", "1.5", "501", "201", "1e3", "Infinity", "NaN", "true", "maybe", "")
  )
  const pair = fc.tuple(fc.constantFrom(...names), value).map(([n, v]) => `${percentEncode(n)}=${v}`)
  return fc.oneof(
    { arbitrary: fc.array(pair, { minLength: 1, maxLength: 4 }).map((pairs) => [pairs.join("&")]), weight: 6 },
    { arbitrary: fc.constantFrom("&&&", "=", "==", "a=1&a=2", "limit", "limit=", "%", "%zz=1", "a[b]=1", "?", "#x").map((q) => [q]), weight: 2 },
    { arbitrary: fc.constantFrom(2000, 20_000).map((n) => [`x=${"a".repeat(n)}`]), weight: 1 }
  )
}

// ---- Headers ------------------------------------------------------------------------------

export const CONTENT_TYPES: ReadonlyArray<string | undefined> = [
  undefined,
  "application/json; charset=utf-8",
  "APPLICATION/JSON",
  "application/json;charset=latin1",
  "application/json, text/plain",
  "application/vnd.api+json",
  "application/merge-patch+json",
  "text/plain",
  "text/json",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=xyz",
  "application/octet-stream",
  "",
  ";;;",
  "application/" + "x".repeat(300)
]

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 64 })

/** Extra headers: idempotency keys, accept, encodings, a huge header, a junk Authorization. */
const extraHeaders = (method: string): fc.Arbitrary<{ headers: Array<readonly [string, string]>; label: string }> =>
  fc.oneof(
    {
      arbitrary: fc.oneof(printable, fc.constantFrom("", " ", "a".repeat(256), "a".repeat(300), "same-key")).map((v) => ({
        headers: [["idempotency-key", v] as const],
        label: "idempotency-key"
      })),
      weight: method === "GET" ? 1 : 4
    },
    { arbitrary: fc.constantFrom("text/html", "*/*", "application/xml", "").map((v) => ({ headers: [["accept", v] as const], label: `accept ${v}` })), weight: 1 },
    { arbitrary: fc.constantFrom("gzip", "br", "identity", "x-junk").map((v) => ({ headers: [["content-encoding", v] as const], label: `content-encoding ${v}` })), weight: 1 },
    {
      arbitrary: fc.constantFrom("Basic YTpi", "Bearer", "Bearer ", "bearer <fuzz key>", "Bearer <fuzz key> extra", "Bearer mpk_" + "A".repeat(43), "Bearer \u00ff").map((v) => ({
        headers: [["authorization", v] as const],
        label: `authorization ${v.slice(0, 20)}`
      })),
      weight: 2
    },
    { arbitrary: fc.constantFrom(8_000, 20_000, 40_000).map((n) => ({ headers: [["x-padding", "a".repeat(n)] as const], label: `a ${n} byte header` })), weight: 1 },
    { arbitrary: fc.constant({ headers: Array.from({ length: 120 }, (_, i) => [`x-h${i}`, "v"] as const), label: "120 headers" }), weight: 1 }
  )

// ---- Bodies -------------------------------------------------------------------------------

type Json = unknown

/** Every path (list of keys) into objects and arrays of a JSON value, the root included. */
const pathsOf = (value: Json, prefix: ReadonlyArray<string | number> = [], out: Array<ReadonlyArray<string | number>> = [], depth = 0) => {
  out.push(prefix)
  if (depth > 6) return out
  if (Array.isArray(value)) value.slice(0, 4).forEach((v, i) => pathsOf(v, [...prefix, i], out, depth + 1))
  else if (value !== null && typeof value === "object" && !(value instanceof Known)) {
    for (const [k, v] of Object.entries(value)) pathsOf(v, [...prefix, k], out, depth + 1)
  }
  return out
}

const clone = (value: Json): Json =>
  value instanceof Known || value instanceof Deep || value instanceof Huge || value instanceof RawJson
    ? value
    : Array.isArray(value)
    ? value.map(clone)
    : value !== null && typeof value === "object"
    ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clone(v)]))
    : value

/** `value` with the thing at `path` replaced (or deleted when `replacement` is DELETE). */
const DELETE = Symbol("delete")
const setAt = (value: Json, path: ReadonlyArray<string | number>, replacement: unknown): Json => {
  if (path.length === 0) return replacement === DELETE ? {} : replacement
  const root = clone(value) as any
  let node = root
  for (const key of path.slice(0, -1)) node = node[key]
  const last = path[path.length - 1]!
  if (replacement === DELETE) {
    if (Array.isArray(node)) node.splice(last as number, 1)
    else delete node[last]
  } else {
    node[last] = replacement
  }
  return root
}

/** Puts known ids in the fields that name one (model, machine, order_id...), each with odds 3 in 4. */
const withKnownIds = (value: Json, picks: ReadonlyArray<number>): Json => {
  let n = 0
  const walk = (v: Json, depth: number): Json => {
    if (depth > 4 || v === null || typeof v !== "object") return v
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1))
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) {
      const kind = kindOfField[k]
      const pick = picks[n++ % picks.length] ?? 0
      out[k] = kind !== undefined && typeof x === "string" && pick % 4 !== 0 ? new Known(kind, pick) : walk(x, depth + 1)
    }
    return out
  }
  return walk(value, 0)
}

const validBody = (valid: ReadonlyArray<Json>): fc.Arbitrary<Json> =>
  valid.length === 0
    ? fc.constant({})
    : fc.tuple(fc.nat(valid.length - 1), fc.array(fc.nat(), { minLength: 8, maxLength: 8 })).map(([i, picks]) => withKnownIds(valid[i], picks))

/** A valid body changed in one place: a field dropped, retyped, set to an edge value, or one added. */
const nearValidBody = (valid: ReadonlyArray<Json>): fc.Arbitrary<{ value: Json; label: string }> =>
  fc.tuple(validBody(valid), fc.nat(), fc.nat(3), wrongValue, anyString, edgeNumber).map(([body, at, how, wrong, text, number]) => {
    const paths = pathsOf(body).filter((p) => p.length > 0)
    const path = paths.length === 0 ? ["extra"] : paths[at % paths.length]!
    const name = path.join(".")
    switch (how) {
      case 0:
        return { value: setAt(body, path, DELETE), label: `near-valid: dropped ${name}` }
      case 1:
        return { value: setAt(body, path, wrong), label: `near-valid: ${name} of another type` }
      case 2:
        return { value: setAt(body, path, typeof number === "number" && at % 2 === 0 ? number : text), label: `near-valid: ${name} an edge value` }
      default:
        return {
          value: body !== null && typeof body === "object" && !Array.isArray(body) ? { ...(body as object), [text]: wrong } : body,
          label: "near-valid: an unknown field"
        }
    }
  })

/** A valid body with an edge string in one of its string fields (or in a new field). */
const unicodeBody = (valid: ReadonlyArray<Json>): fc.Arbitrary<{ value: Json; label: string }> =>
  fc.tuple(validBody(valid), fc.nat(), edgeString).map(([body, at, text]) => {
    const paths = pathsOf(body).filter((p) => {
      let node: any = body
      for (const k of p) node = node?.[k]
      return typeof node === "string" || node instanceof Known
    })
    const path = paths.length === 0 ? ["extra"] : paths[at % paths.length]!
    return { value: setAt(body, path, text), label: `unicode: ${path.join(".")} = ${JSON.stringify(text).slice(0, 30)}` }
  })

const DEPTH = 10_000

const deepBody = (valid: ReadonlyArray<Json>): fc.Arbitrary<{ value: Json; label: string }> =>
  fc.tuple(validBody(valid), fc.nat(), fc.constantFrom("array" as const, "object" as const), fc.constantFrom(DEPTH, 5_000, 1_000)).map(
    ([body, at, shape, depth]) => {
      const paths = pathsOf(body)
      const path = at % 3 === 0 ? ["extra"] : paths[at % paths.length]!
      return { value: setAt(body, path, new Deep(depth, shape)), label: `deep: ${depth} levels at ${path.join(".") || "the root"}` }
    }
  )

const HUGE_SIZES = [64 * 1024, 256 * 1024, 1024 * 1024, 1900 * 1024]

const hugeBody = (valid: ReadonlyArray<Json>): fc.Arbitrary<{ value: Json; label: string }> =>
  fc.tuple(
    validBody(valid),
    fc.nat(),
    fc.constantFrom(...HUGE_SIZES),
    fc.constantFrom("ascii" as const, "emoji" as const, "numbers" as const, "strings" as const, "keys" as const)
  ).map(([body, at, bytes, shape]) => {
    const paths = pathsOf(body).filter((p) => p.length > 0)
    const path = at % 3 === 0 || paths.length === 0 ? ["pad"] : paths[at % paths.length]!
    return { value: setAt(body, path, new Huge(bytes, shape)), label: `huge: ${shape} of ${bytes} bytes at ${path.join(".")}` }
  })

/** Text that is not JSON, or not quite. */
const INVALID_JSON: ReadonlyArray<string> = [
  "", " ", "{", "}", "[", "{\"a\":", "{\"a\":1,}", "{'a':1}", "{\"a\":NaN}", "{\"a\":Infinity}", "{\"a\":undefined}",
  "{\"a\":1}{\"b\":2}", "{\"a\":1} x", "\ufeff{}", "/* c */{}", "{\"a\":\"\u0000\"}", "{\"a\":\"\n\"}", "{\"a\":\"\\x00\"}",
  "{\"a\":\"\\ud800\"}", "{\"a\":\"\\u00\"}", "{\"__proto__\":{\"admin\":true}}", "{\"constructor\":{\"prototype\":{}}}",
  "nul", "tru", "0x10", "01", "--1", "\"\\", "{\"a\":1e999}", "{\"model\":\"a\",\"model\":\"b\"}", "{\"a\":\"" + "\\u0000".repeat(100) + "\"}",
  "a=1&b=2", "<xml/>", "null", "true", "0", "\"string\"", "[]", "{}"
]

const INVALID_UTF8: ReadonlyArray<ReadonlyArray<number>> = [
  [0xff, 0xfe],
  [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0x80, 0x22, 0x7d], // {"a":"<overlong NUL>"}
  [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d], // {"a":"<CESU lone surrogate>"}
  [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d],
  [0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xe0, 0xa4, 0x22, 0x7d], // truncated sequence
  [0xef, 0xbb, 0xbf, 0x7b, 0x7d], // BOM + {}
  [0x00, 0x00, 0x00, 0x7b],
  [0xfe, 0xff, 0x00, 0x7b, 0x00, 0x7d] // UTF-16 BOM
]

const brokenBody = (valid: ReadonlyArray<Json>): fc.Arbitrary<{ body: Body; label: string }> =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...INVALID_JSON).map((text) => ({ body: { _tag: "text", text } as Body, label: `invalid JSON ${JSON.stringify(text).slice(0, 30)}` })), weight: 4 },
    {
      arbitrary: fc.tuple(validBody(valid), fc.nat()).map(([value, cut]) => {
        const text = JSON.stringify(value) ?? "{}"
        return { body: { _tag: "text", text: text.slice(0, cut % Math.max(1, text.length)) } as Body, label: "truncated JSON" }
      }),
      weight: 2
    },
    { arbitrary: fc.constantFrom(...INVALID_UTF8).map((bytes) => ({ body: { _tag: "bytes", bytes } as Body, label: "invalid UTF-8" })), weight: 2 },
    { arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ body: { _tag: "bytes", bytes: Array.from(bytes) } as Body, label: "random bytes" })), weight: 1 },
    { arbitrary: fc.constantFrom(DEPTH, 100_000).map((depth) => ({ body: { _tag: "json", value: new Deep(depth, depth % 2 === 0 ? "array" : "object") } as Body, label: `deep: ${depth} levels as the body` })), weight: 1 }
  )

const wrongTypeBody: fc.Arbitrary<{ value: Json; label: string }> = fc.oneof(
  wrongValue.map((value) => ({ value, label: "wrong type: any JSON" })),
  fc.dictionary(anyString, wrongValue, { maxKeys: 5 }).map((value) => ({ value, label: "wrong type: an object of junk" })),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 5 }).map((value) => ({ value, label: "wrong type: an array" }))
)

// ---- The case arbitrary -------------------------------------------------------------------

export interface EndpointSamples {
  /** Valid bodies (JSON, as sent) sampled from the payload schemas. */
  readonly bodies: ReadonlyArray<Json>
  /** Valid query parameters (as sent) sampled from the query schema. */
  readonly queries: ReadonlyArray<Record<string, string>>
}

const OTHER_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

const AUTH: ReadonlyArray<readonly [string, string]> = [["authorization", `Bearer ${FUZZ_KEY}`]]

/** Every request the suite may send to an endpoint, by the weights of the kinds of case. */
export const caseArbitrary = (endpoint: ApiEndpoint, samples: EndpointSamples): fc.Arbitrary<FuzzCase> => {
  const hasBody = endpoint.payloadSchemas.length > 0
  const hasParams = endpoint.pathParams.length > 0
  const hasQuery = endpoint.queryJsonSchemas.length > 0
  const json = (value: Json): Body => ({ _tag: "json", value })
  const base = (path: Array<Piece>, query: Array<Piece>, body: Body, kind: string, headers: ReadonlyArray<readonly [string, string]> = []): FuzzCase => ({
    kind,
    method: endpoint.method,
    path,
    query,
    headers: [...AUTH, ...(body._tag === "none" ? [] : [["content-type", "application/json"] as const]), ...headers],
    body
  })
  const vPath = validPath(endpoint)
  const vQuery = validQuery(endpoint, samples.queries)
  const vBody = hasBody ? validBody(samples.bodies).map(json) : fc.constant<Body>({ _tag: "none" })
  const arbs: Array<{ arbitrary: fc.Arbitrary<FuzzCase>; weight: number }> = [
    { arbitrary: fc.tuple(vPath, vQuery, vBody).map(([p, q, b]) => base(p, q, b, "valid")), weight: hasBody ? 22 : 20 },
    {
      arbitrary: fc.tuple(vPath, vQuery, vBody, extraHeaders(endpoint.method)).map(([p, q, b, h]) => {
        // An Authorization header in the extras replaces the suite's key.
        const auth = h.headers.some(([n]) => n === "authorization")
        const c = base(p, q, b, `headers: ${h.label}`, h.headers)
        return auth ? { ...c, headers: c.headers.filter(([n, v]) => !(n === "authorization" && v === `Bearer ${FUZZ_KEY}`)) } : c
      }),
      weight: 8
    },
    {
      arbitrary: fc.tuple(vPath, vQuery, vBody, fc.constantFrom(...CONTENT_TYPES)).map(([p, q, b, ct]) => ({
        ...base(p, q, b, `content-type ${ct ?? "(none)"}`),
        headers: [...AUTH, ...(ct === undefined ? [] : [["content-type", ct] as const])]
      })),
      weight: hasBody ? 8 : 2
    },
    {
      arbitrary: fc.tuple(junkPath(endpoint), vQuery, vBody).map(([p, q, b]) => base(p.path, q, b, p.label)),
      weight: hasParams ? 25 : 4
    },
    {
      arbitrary: fc.tuple(vPath, junkQuery(endpoint), vBody).map(([p, q, b]) => base(p, q, b, "junk query")),
      weight: hasQuery ? 20 : 4
    },
    {
      arbitrary: fc.tuple(vPath, vQuery, vBody, fc.constantFrom(...OTHER_METHODS.filter((m) => m !== endpoint.method))).map(([p, q, b, m]) => ({
        ...base(p, q, b, `method ${m}`),
        method: m,
        ...(m === "GET" ? { body: { _tag: "none" } as Body, headers: AUTH } : {})
      })),
      weight: 3
    }
  ]
  if (hasBody) {
    arbs.push(
      { arbitrary: fc.tuple(vPath, vQuery, nearValidBody(samples.bodies)).map(([p, q, b]) => base(p, q, json(b.value), b.label)), weight: 22 },
      { arbitrary: fc.tuple(vPath, vQuery, unicodeBody(samples.bodies)).map(([p, q, b]) => base(p, q, json(b.value), b.label)), weight: 10 },
      { arbitrary: fc.tuple(vPath, vQuery, wrongTypeBody).map(([p, q, b]) => base(p, q, json(b.value), b.label)), weight: 6 },
      { arbitrary: fc.tuple(vPath, vQuery, brokenBody(samples.bodies)).map(([p, q, b]) => base(p, q, b.body, b.label)), weight: 8 },
      { arbitrary: fc.tuple(vPath, vQuery, deepBody(samples.bodies)).map(([p, q, b]) => base(p, q, json(b.value), b.label)), weight: 3 },
      { arbitrary: fc.tuple(vPath, vQuery, hugeBody(samples.bodies)).map(([p, q, b]) => base(p, q, json(b.value), b.label)), weight: 3 }
    )
  } else {
    arbs.push({
      // A body where none is expected.
      arbitrary: fc.tuple(vPath, vQuery, fc.oneof(wrongTypeBody.map((b) => json(b.value)), brokenBody([]).map((b) => b.body))).map(([p, q, b]) =>
        base(p, q, b, "a body where none is expected")
      ),
      weight: endpoint.method === "GET" ? 0 : 3
    })
  }
  return fc.oneof(...arbs.filter((a) => a.weight > 0))
}

// ---- Expansion at send time ---------------------------------------------------------------

const deepText = (deep: Deep): string =>
  deep.shape === "array" ? "[".repeat(deep.depth) + "]".repeat(deep.depth) : "{\"a\":".repeat(deep.depth) + "1" + "}".repeat(deep.depth)

const hugeText = (huge: Huge): string => {
  switch (huge.shape) {
    case "ascii":
      return JSON.stringify("a".repeat(huge.bytes))
    case "emoji":
      return JSON.stringify("😀".repeat(Math.floor(huge.bytes / 4)))
    case "numbers":
      return "[" + Array(Math.floor(huge.bytes / 2)).fill("1").join(",") + "]"
    case "strings":
      return "[" + Array(Math.floor(huge.bytes / 4)).fill("\"a\"").join(",") + "]"
    case "keys": {
      const parts: Array<string> = []
      for (let i = 0; i * 10 < huge.bytes; i++) parts.push(`"k${i}":1`)
      return "{" + parts.join(",") + "}"
    }
  }
}

/**
 * The JSON text of a value with Known ids resolved by `resolve`, and Deep, Huge and RawJson parts
 * expanded in place.
 */
export const jsonText = (value: unknown, resolve: (known: Known) => string): string => {
  const specials: Array<string> = []
  const marker = (i: number) => `\u0001special${i}\u0001`
  const prepared = (function walk(v: unknown): unknown {
    if (v instanceof Known) return resolve(v)
    if (v instanceof Deep) return marker(specials.push(deepText(v)) - 1)
    if (v instanceof Huge) return marker(specials.push(hugeText(v)) - 1)
    if (v instanceof RawJson) return marker(specials.push(v.text) - 1)
    if (Array.isArray(v)) return v.map(walk)
    if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
    return v
  })(value)
  let text = JSON.stringify(prepared) ?? "null"
  specials.forEach((special, i) => {
    text = text.replace(JSON.stringify(marker(i)), () => special)
  })
  return text
}

/** A short description of a case for reports: method, target, headers and the body's start. */
export const describeCase = (c: FuzzCase): string => {
  const pieces = (ps: ReadonlyArray<Piece>) => ps.map((p) => (typeof p === "string" ? p : `{${p.kind}#${p.pick}}`)).join("")
  const query = pieces(c.query)
  const headers = c.headers
    .filter(([n]) => n !== "authorization" || !c.headers.some(([, v]) => v === `Bearer ${FUZZ_KEY}`))
    .map(([n, v]) => `${n}: ${v.length > 60 ? `${v.slice(0, 40)}…(${v.length} chars)` : v}`)
  const body = c.body._tag === "none"
    ? ""
    : c.body._tag === "text"
    ? JSON.stringify(c.body.text)
    : c.body._tag === "bytes"
    ? `bytes ${c.body.bytes.map((b) => b.toString(16).padStart(2, "0")).join(" ")}`
    : JSON.stringify(c.body.value)
  return `${c.method} ${pieces(c.path)}${query === "" ? "" : `?${query}`}${headers.length > 0 ? ` [${headers.join("; ")}]` : ""}${
    body === "" ? "" : ` ${body.length > 300 ? `${body.slice(0, 300)}…(${body.length} chars)` : body}`
  }`
}
