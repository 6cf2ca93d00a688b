/**
 * The fuzz suite: fast-check requests (FuzzArbitraries.ts) against every endpoint of the HttpApi
 * definitions (ApiEndpoints.ts: the management API, the simulated chain, the inference API), so it
 * grows by itself as endpoints are added. Every shell runs it unchanged (the Node server on PGlite,
 * the Lambda handler on DynamoDB Local) over the fuzz catalogue (FuzzCatalogue.ts), whose machines
 * all point at a reference machine the shell starts.
 *
 * Each case is checked for:
 *   - never a 5xx. The documented 502 (machine_unreachable, machine_error) and 503 (no_capacity) of
 *     /v1 are not exempt: every machine of the catalogue is up and serves every model, so they can
 *     only come from a request the platform let through and a machine refused or broke on, or from
 *     a machine cooled down by such requests (issue 10, finding 1);
 *   - every error (4xx) has a JSON body in its surface's shape: platform {error:{code,message,scope?}},
 *     inference (paths under /v1 and /forecasts) {error:{message,type,code}} (the hosted checkout's
 *     HTML pages are the one exception, docs/api-decisions.md);
 *   - a refused request (4xx) changes nothing: the account's credits, keys, orders, tickets,
 *     receipts, credit activity and billing summary are the same after it (compared after every
 *     case for other methods than GET, after each batch of GET cases, which change nothing either);
 *   - a 2xx of the endpoint itself decodes with the endpoint's success schema, and a record it
 *     answers (an id) is listed afterwards with the same fields (what the client was told was saved
 *     is what was saved);
 *   - a 405 has an Allow header, which does not name the method sent.
 * Failures are collected (not stopped at the first) and reported per endpoint, grouped by cause.
 *
 * Replay: FUZZ_SEED (printed; random by default), FUZZ_RUNS (cases per endpoint; default 200, or
 * the shell's own default),
 * FUZZ_ONLY (a substring of the endpoint labels to run, e.g. "POST /keys"), FUZZ_REPORT (a file to
 * write every failure to, as JSON). Each endpoint's cases come from its own seed (FUZZ_SEED and its
 * id), so FUZZ_ONLY replays the same cases.
 */
import { isInferencePath } from "@model-platform/core/kernel"
import { PermissionValues } from "@model-platform/core/keys"
import { Arbitrary, Effect, Exit, Schema } from "effect"
import fc from "fast-check"
import { writeFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ApiEndpoint, labelOf, minimalBody, platformEndpoints } from "./ApiEndpoints.ts"
import {
  caseArbitrary,
  describeCase,
  type EndpointSamples,
  FUZZ_KEY,
  type FuzzCase,
  jsonText,
  type Known,
  type KnownKind,
  percentEncode,
  type Piece
} from "./FuzzArbitraries.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"

export interface RawRequest {
  readonly method: string
  /** Path and query as they go on the wire (percent-encoding and dot segments kept). */
  readonly target: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body: Uint8Array | undefined
}

export interface RawAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** A shell under test that can also send a request as it is, without a client normalising it. */
export interface FuzzShell extends ShellUnderTest {
  readonly raw: (request: RawRequest) => Promise<RawAnswer>
  /** Resolves once background work (metering after an answer) is done; absent when there is none. */
  readonly idle?: () => Promise<void>
}

export interface FuzzSettings {
  readonly seed: number
  readonly numRuns: number
  readonly only: string | undefined
  readonly report: string | undefined
}

export const fuzzSettings = (env: Record<string, string | undefined> = process.env, defaultRuns = 200): FuzzSettings => ({
  seed: env.FUZZ_SEED !== undefined && env.FUZZ_SEED !== "" ? Number(env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31),
  numRuns: env.FUZZ_RUNS !== undefined && env.FUZZ_RUNS !== "" ? Number(env.FUZZ_RUNS) : defaultRuns,
  only: env.FUZZ_ONLY || undefined,
  report: env.FUZZ_REPORT || undefined
})

/** One endpoint's seed: the run's seed mixed with the endpoint's id (FNV-1a). */
const seedOf = (seed: number, id: string): number => {
  let h = 0x811c9dc5 ^ seed
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193)
  return h | 0
}

// ---- Valid samples from the endpoint schemas (effect's Arbitrary) -------------------------

const SAMPLES = 48

const sampleEncoded = (schema: Schema.Top, seed: number): ReadonlyArray<unknown> => {
  const values = Effect.runSync(Arbitrary.sampleEffect(Arbitrary.schema(Schema.toType(schema) as never), { count: SAMPLES, seed }))
  const encode = Schema.encodeUnknownExit(schema as never)
  return values.flatMap((v) => {
    const exit = encode(v)
    return Exit.isSuccess(exit) ? [exit.value] : []
  })
}

const samplesOf = (endpoint: ApiEndpoint, seed: number): EndpointSamples & { readonly note?: string } => {
  const notes: Array<string> = []
  const bodies = endpoint.payloadSchemas.flatMap((schema) => {
    try {
      return sampleEncoded(schema, seed)
    } catch (error) {
      notes.push(`body samples: ${String(error).slice(0, 120)}`)
      return []
    }
  })
  let queries: ReadonlyArray<Record<string, string>> = []
  if (endpoint.querySchema !== undefined) {
    try {
      queries = sampleEncoded(endpoint.querySchema, seed) as ReadonlyArray<Record<string, string>>
    } catch (error) {
      notes.push(`query samples: ${String(error).slice(0, 120)}`)
    }
  }
  const fallback = minimalBody(endpoint)
  return {
    bodies: bodies.length === 0 && fallback !== undefined ? [fallback] : bodies,
    queries,
    ...(notes.length === 0 ? {} : { note: notes.join("; ") })
  }
}

// ---- Judging an answer --------------------------------------------------------------------

export interface Failure {
  readonly endpoint: string
  readonly index: number
  readonly kind: string
  /** The cause, for grouping: "5xx", "error shape", "refused request changed state", ... */
  readonly category: string
  readonly request: string
  readonly status: number | undefined
  readonly answer: string
}

const pathOf = (target: string) => target.split("?")[0]!

/**
 * The paths a server may see for a target: dot segments resolved (as `new URL` does), and repeated
 * slashes collapsed too. Which surface a path like `//v1/../keys` belongs to is the server's call,
 * so an error body in the shape of any of them is accepted.
 */
const normalizedPaths = (target: string): ReadonlyArray<string> => {
  const raw = pathOf(target)
  const resolve = (path: string) => {
    try {
      return new URL(`http://x${path.startsWith("/") ? "" : "/"}${path}`).pathname
    } catch {
      return path
    }
  }
  const collapse = (path: string) => path.replace(/\/{2,}/g, "/")
  return [...new Set([resolve(raw), collapse(resolve(raw)), resolve(collapse(raw))])]
}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Why an error body is not in the shape of `surface`, or undefined when it is. */
const shapeProblem = (surface: "platform" | "inference", json: unknown): string | undefined => {
  if (!isRecord(json)) return "not a JSON object"
  const keys = Object.keys(json)
  if (keys.length !== 1 || keys[0] !== "error" || !isRecord(json.error)) return `top-level keys ${JSON.stringify(keys)}`
  const error = json.error
  const fields = Object.keys(error).sort()
  const strings = (names: ReadonlyArray<string>) => names.every((n) => typeof error[n] === "string" && (n !== "message" || (error[n] as string).length > 0))
  if (surface === "inference") {
    // OpenAI's error object also has `param` (the field at fault, or null); OpenAI clients read it.
    const param = !("param" in error) || error.param === null || typeof error.param === "string"
    const required = fields.filter((f) => f !== "param")
    return JSON.stringify(required) === JSON.stringify(["code", "message", "type"]) && strings(required) && param
      ? undefined
      : `inference error fields ${JSON.stringify(fields)}`
  }
  const expected = "scope" in error ? ["code", "message", "scope"] : ["code", "message"]
  return JSON.stringify(fields) === JSON.stringify(expected) && strings(fields) ? undefined : `platform error fields ${JSON.stringify(fields)}`
}

const templateRegex = (path: string) =>
  new RegExp("^" + path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\\?:[A-Za-z_]+/g, "[^/]+") + "$")

const successDecoders = new Map<string, (u: unknown) => boolean>()
const decodesAsSuccess = (endpoint: ApiEndpoint, json: unknown): boolean => {
  let decode = successDecoders.get(endpoint.id)
  if (decode === undefined) {
    const decoders = endpoint.successSchemas.map((s) => Schema.decodeUnknownExit(Schema.toCodecJson(s as never) as never))
    decode = (u) => decoders.some((d) => Exit.isSuccess(d(u)))
    successDecoders.set(endpoint.id, decode)
  }
  return decode(json)
}

/** Everything wrong with one answer, apart from state. */
export const judge = (endpoint: ApiEndpoint, c: FuzzCase, target: string, answer: RawAnswer): ReadonlyArray<{ category: string }> => {
  const problems: Array<{ category: string }> = []
  const json = parseJson(answer.body)
  const code = isRecord(json) && isRecord(json.error) ? String(json.error.code) : ""
  if (answer.status >= 500) problems.push({ category: `5xx: ${answer.status} ${code}`.trim() })
  const paths = normalizedPaths(target)
  if (answer.status >= 400) {
    const contentType = answer.headers["content-type"] ?? ""
    const html = contentType.startsWith("text/html") && paths.some((p) => p.startsWith("/checkout"))
    if (!html) {
      const surfaces = new Set([pathOf(target), ...paths].map((p) => (isInferencePath(p) ? "inference" as const : "platform" as const)))
      const problemsBySurface = [...surfaces].map((s) => shapeProblem(s, json))
      if (problemsBySurface.every((p) => p !== undefined)) {
        problems.push({
          category: `error body not in the ${[...surfaces].join(" or ")} shape (${answer.status}${
            answer.body === "" ? ", empty body" : json === undefined ? ", not JSON" : `, ${problemsBySurface[0]}`
          })`
        })
      }
    }
  }
  if (answer.status === 405) {
    // 405 says the method sent is not one the path takes; Allow lists the ones it does (RFC 9110).
    const allow = (answer.headers["allow"] ?? "").split(",").map((m) => m.trim().toUpperCase()).filter((m) => m !== "")
    if (allow.length === 0) problems.push({ category: "405 without an Allow header" })
    else if (allow.includes(c.method.toUpperCase())) problems.push({ category: "405 whose Allow header names the method sent" })
  }
  if (
    answer.status >= 200 && answer.status < 300 && c.method === endpoint.method && templateRegex(endpoint.path).test(paths[0]!) &&
    (answer.headers["content-type"] ?? "").includes("json") && !decodesAsSuccess(endpoint, json)
  ) {
    problems.push({ category: "2xx answer not in the endpoint's success schema" })
  }
  return problems
}

// ---- The account's state ------------------------------------------------------------------

const SNAPSHOT_PATHS = ["/credits", "/keys", "/orders?limit=200", "/tickets", "/billing/receipts", "/credits/activity?limit=500"]

/** Fields that change without a state change: when a key was last used. */
const normalize = (path: string, json: any): unknown => {
  if (path === "/keys" && Array.isArray(json?.data)) {
    return { data: json.data.map(({ last_used_at: _, ...key }: Record<string, unknown>) => key) }
  }
  return json
}

type Snapshot = ReadonlyMap<string, string>

/**
 * Fields of a 2xx answer that differ from the same record (same id) as the account's lists then
 * show it: what a client is told was saved must be what was saved.
 */
const echoDifferences = (answer: unknown, after: Snapshot): ReadonlyArray<string> => {
  if (!isRecord(answer) || typeof answer.id !== "string") return []
  const out: Array<string> = []
  for (const text of after.values()) {
    const listed = (parseJson(text) as any)?.data
    if (!Array.isArray(listed)) continue
    const same = listed.find((item: unknown) => isRecord(item) && item.id === answer.id)
    if (!isRecord(same)) continue
    for (const [key, value] of Object.entries(answer)) {
      if (key === "last_used_at" || !(key in same)) continue
      if (JSON.stringify(value) !== JSON.stringify(same[key])) out.push(`${key}: answered ${JSON.stringify(value)?.slice(0, 80)}, listed ${JSON.stringify(same[key])?.slice(0, 80)}`)
    }
  }
  return out
}

const diffOf = (before: Snapshot, after: Snapshot): string =>
  SNAPSHOT_PATHS.filter((p) => before.get(p) !== after.get(p))
    .map((p) => {
      const a = before.get(p) ?? ""
      const b = after.get(p) ?? ""
      let i = 0
      while (i < a.length && a[i] === b[i]) i++
      return `${p}: …${a.slice(Math.max(0, i - 40), i + 80)} -> …${b.slice(Math.max(0, i - 40), i + 80)}`
    })
    .join("; ")

// ---- The suite ----------------------------------------------------------------------------

const TIMEOUT_MS = 20_000
/** Cases checked together against one snapshot of the account's state. */
const STATE_BATCH = 20

const withTimeout = <A>(promise: Promise<A>, ms: number, what: string): Promise<A> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms: ${what}`)), ms)
    promise.then(
      (a) => {
        clearTimeout(timer)
        resolve(a)
      },
      (e) => {
        clearTimeout(timer)
        reject(e)
      }
    )
  })

const kindOfPathSegment: Readonly<Record<string, KnownKind>> = { keys: "key", orders: "order" }

/** `defaultRuns`: cases per endpoint unless FUZZ_RUNS says otherwise. */
export const fuzzSuite = (shell: string, start: () => Promise<FuzzShell>, defaultRuns = 200) =>
  describe(`fuzz on ${shell}`, () => {
    const settings = fuzzSettings(process.env, defaultRuns)
    const endpoints = platformEndpoints().filter((e) => settings.only === undefined || labelOf(e).includes(settings.only))
    let platform: FuzzShell
    let secret = ""
    const known = new Map<KnownKind, Array<string>>()
    const allFailures: Array<Failure> = []
    const counts: Array<string> = []
    const started = Date.now()
    let baseline: Snapshot = new Map()

    const call = async (method: string, path: string, body?: unknown, key = secret) => {
      const response = await platform.fetch(path, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await response.text()
      return { status: response.status, text, json: parseJson(text) as any }
    }
    const ok = async (method: string, path: string, body?: unknown, key = secret) => {
      const res = await call(method, path, body, key)
      expect(res.status, `${method} ${path}: ${res.text.slice(0, 300)}`).toBe(200)
      return res.json
    }
    const remember = (kind: KnownKind, ...ids: ReadonlyArray<unknown>) => {
      const list = known.get(kind) ?? []
      for (const id of ids) if (typeof id === "string" && !list.includes(id)) list.push(id)
      known.set(kind, list)
    }
    const snapshot = async (): Promise<Snapshot> => {
      if (platform.idle !== undefined) await platform.idle()
      const answers = await Promise.all(SNAPSHOT_PATHS.map(async (p) => {
        const res = await call("GET", p)
        return [p, res.status === 200 ? JSON.stringify(normalize(p, res.json)) : `status ${res.status}: ${res.text}`] as const
      }))
      return new Map(answers)
    }
    const same = (a: Snapshot, b: Snapshot) => SNAPSHOT_PATHS.every((p) => a.get(p) === b.get(p))

    /** Models by the inference path that serves them (GET /v1/models), so calls mostly name a fitting model. */
    const modelsByPath = new Map<string, Array<string>>()
    let current: ApiEndpoint | undefined
    const resolve = (k: Known): string => {
      const fitting = k.kind === "model" && current !== undefined ? modelsByPath.get(current.path.replace(/^\/forecasts$/, "/v1/forecasts")) : undefined
      const list = fitting !== undefined && k.pick % 4 !== 0 ? fitting : known.get(k.kind) ?? []
      return list.length === 0 ? `unknown_${k.kind}` : list[k.pick % list.length]!
    }
    const piecesText = (pieces: ReadonlyArray<Piece>) => pieces.map((p) => (typeof p === "string" ? p : percentEncode(resolve(p)))).join("")
    const toRequest = (c: FuzzCase): RawRequest => {
      const query = piecesText(c.query)
      const body = c.body._tag === "none"
        ? undefined
        : c.body._tag === "text"
        ? new TextEncoder().encode(c.body.text)
        : c.body._tag === "bytes"
        ? Uint8Array.from(c.body.bytes)
        : new TextEncoder().encode(jsonText(c.body.value, resolve))
      return {
        method: c.method,
        target: piecesText(c.path) + (query === "" ? "" : `?${query}`),
        headers: c.headers.map(([n, v]) => [n, v.replaceAll(FUZZ_KEY, secret)] as const),
        body
      }
    }

    beforeAll(async () => {
      platform = await start()
      const all = [...PermissionValues]
      const fuzzKey = await ok("POST", "/keys", { name: "fuzz", permissions: all }, platform.ownerSecret)
      secret = fuzzKey.secret
      // Credits for priced calls: a stablecoin order paid on the simulated chain.
      const funding = await ok("POST", "/orders", { type: "credits", amount_usd: 500 })
      await ok("POST", `/orders/${funding.id}/pay`, { method: "stablecoin", chain: "base", token: "USDC" })
      await ok("POST", "/_simulated/deposits", { order_id: funding.id })
      // A gift ticket to redeem, an order awaiting a card checkout, an unpaid one.
      const gift = await ok("POST", "/orders", { type: "credits", amount_usd: 5, gift: true })
      await ok("POST", `/orders/${gift.id}/pay`, { method: "stablecoin", chain: "base", token: "USDC" })
      await ok("POST", "/_simulated/deposits", { order_id: gift.id })
      const card = await ok("POST", "/orders", { type: "package", package_id: "starter" })
      await ok("POST", `/orders/${card.id}/pay`, { method: "card" })
      const awaiting = await ok("POST", "/orders", { type: "credits", amount_usd: 7 })
      const stablecoin = await ok("POST", `/orders/${awaiting.id}/pay`, { method: "stablecoin", chain: "base", token: "USDC" })
      // Keys the suite may revoke (never its own or the owner's).
      for (let i = 0; i < 3; i++) remember("key", (await ok("POST", "/keys", { name: `victim-${i}`, permissions: ["read"] })).id)
      remember("model", ...(await ok("GET", "/models")).data.map((m: any) => m.id))
      const machines = (await ok("GET", "/machines")).data
      remember("machine", ...machines.map((m: any) => m.id))
      remember("region", ...machines.map((m: any) => m.region))
      remember("operator", ...(await ok("GET", "/operators")).data.map((o: any) => o.id))
      remember("package", ...(await ok("GET", "/packages")).data.map((p: any) => p.id))
      remember("order", ...(await ok("GET", "/orders")).data.map((o: any) => o.id))
      remember("receipt", ...(await ok("GET", "/billing/receipts")).data.map((r: any) => r.id))
      remember("ticket", ...(await ok("GET", "/tickets")).data.map((t: any) => t.code))
      remember("address", stablecoin.payment?.deposit?.address)
      remember("plan", "basic")
      for (const m of (await ok("GET", "/v1/models")).data) modelsByPath.set(m.endpoint, [...(modelsByPath.get(m.endpoint) ?? []), m.id])
      const credits = await ok("GET", "/credits")
      expect(credits.total_credits, "the account was funded").toBeGreaterThan(0)
      console.log(
        `fuzz on ${shell}: FUZZ_SEED=${settings.seed} FUZZ_RUNS=${settings.numRuns}${settings.only ? ` FUZZ_ONLY=${JSON.stringify(settings.only)}` : ""}; ` +
          `${endpoints.length} endpoints; known ids: ${[...known].map(([k, v]) => `${k} ${v.length}`).join(", ")}`
      )
      baseline = await snapshot()
    }, 120_000)

    afterAll(async () => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1)
      const groups = new Map<string, Array<Failure>>()
      for (const f of allFailures) {
        const key = `${f.category} | ${f.endpoint}`
        groups.set(key, [...(groups.get(key) ?? []), f])
      }
      console.log(
        `fuzz on ${shell}: FUZZ_SEED=${settings.seed}, ${counts.length} endpoints in ${seconds} s\n  ${counts.join("\n  ")}\n` +
          `${allFailures.length} failing checks in ${groups.size} groups` +
          [...groups].map(([key, fs]) => `\n  [${fs.length}] ${key}\n      e.g. #${fs[0]!.index} ${fs[0]!.request.slice(0, 400)}\n      -> ${fs[0]!.status} ${fs[0]!.answer.slice(0, 300)}`).join("")
      )
      if (settings.report !== undefined) {
        writeFileSync(settings.report, JSON.stringify({ shell, seed: settings.seed, runs: settings.numRuns, failures: allFailures }, null, 1))
      }
      await platform?.close()
    })

    for (const endpoint of endpoints) {
      const label = labelOf(endpoint)
      it(`${label}: never a 5xx, errors in the ${endpoint.surface} shape, refusals change nothing`, async () => {
        const t0 = Date.now()
        current = endpoint
        const seed = seedOf(settings.seed, endpoint.id)
        const samples = samplesOf(endpoint, seed)
        const cases = fc.sample(caseArbitrary(endpoint, samples), { seed, numRuns: settings.numRuns })
        const failures: Array<Failure> = []
        const statuses = new Map<number | string, number>()
        const fail = (index: number, c: FuzzCase, category: string, status: number | undefined, answer: string) =>
          failures.push({ endpoint: label, index, kind: c.kind, category, request: describeCase(c), status, answer: answer.slice(0, 600) })
        let sendMs = 0
        let snapshotMs = 0
        // State checks, batched: `pending` are the cases since the last snapshot that must have
        // changed nothing (refused ones, and GETs, which change nothing either). Before a case that
        // may be accepted (its family was accepted before), the batch is checked, so an acceptance
        // does not hide what a refusal did; a batch that changed state makes the following batches
        // one case long, to name the case.
        let batch = STATE_BATCH
        let pending: Array<number> = []
        let checked = 0
        let unchecked = 0
        const accepted = new Map<string, number>()
        const familyOf = (kind: string) => kind.split(/[: ]/)[0]!
        const mayBeAccepted = (c: FuzzCase) => {
          const family = familyOf(c.kind)
          return (accepted.get(family) ?? 0) > 0 || (!accepted.has(family) && ["valid", "headers", "content-type"].includes(family))
        }
        const takeSnapshot = async () => {
          const t = Date.now()
          const s = await snapshot()
          snapshotMs += Date.now() - t
          return s
        }
        const verify = async () => {
          if (pending.length === 0) return
          const after = await takeSnapshot()
          if (!same(baseline, after)) {
            const first = pending[0]!
            const c = cases[first]!
            const category = pending.length === 1 ? "refused request changed state" : "state changed across refused requests (one of them)"
            const others = pending.length === 1 ? "" : ` (one of #${pending.join(", #")})`
            failures.push({
              endpoint: label, index: first, kind: c.kind, category, request: describeCase(c) + others, status: undefined,
              answer: diffOf(baseline, after)
            })
            batch = 1
          }
          checked += pending.length
          pending = []
          baseline = after
        }

        for (let index = 0; index < cases.length; index++) {
          const c = cases[index]!
          const safe = c.method === "GET"
          if (!safe && mayBeAccepted(c)) await verify()
          const request = toRequest(c)
          let answer: RawAnswer | undefined
          try {
            const t = Date.now()
            answer = await withTimeout(platform.raw(request), TIMEOUT_MS, describeCase(c).slice(0, 200))
            sendMs += Date.now() - t
          } catch (error) {
            fail(index, c, `no answer (${String(error).split(":")[0]})`, undefined, String(error))
          }
          statuses.set(answer?.status ?? "none", (statuses.get(answer?.status ?? "none") ?? 0) + 1)
          if (answer !== undefined) {
            for (const p of judge(endpoint, c, request.target, answer)) fail(index, c, p.category, answer.status, answer.body)
            // Ids the platform made become known ids for the following cases.
            const json = parseJson(answer.body) as any
            const segment = endpoint.path.split("/").at(-1) ?? ""
            const kind = kindOfPathSegment[segment]
            if (answer.status === 200 && c.method === "POST" && kind !== undefined && typeof json?.id === "string") remember(kind, json.id)
          }
          const refused = answer !== undefined && answer.status >= 400 && answer.status < 500
          const family = familyOf(c.kind)
          if (!safe) accepted.set(family, (accepted.get(family) ?? 0) + (refused ? 0 : 1))
          if (safe || refused) {
            pending.push(index)
            if (pending.length >= batch) await verify()
          } else {
            // Accepted (or failed): it may change state; refusals still unchecked before it cannot
            // be told apart from it.
            unchecked += pending.length
            pending = []
            baseline = await takeSnapshot()
            if (answer !== undefined && answer.status < 300) {
              const differences = echoDifferences(parseJson(answer.body), baseline)
              if (differences.length > 0) fail(index, c, "2xx answer differs from what is then listed", answer.status, differences.join("; "))
            }
          }
        }
        await verify()
        allFailures.push(...failures)
        const histogram = [...statuses].sort(([a], [b]) => String(a).localeCompare(String(b))).map(([s, n]) => `${s}:${n}`).join(" ")
        counts.push(`${label}: ${cases.length} cases (seed ${seed}) in ${Date.now() - t0} ms (sending ${sendMs}, state ${snapshotMs}); ${histogram}; state checked after ${checked} refused or GET cases${
            unchecked > 0 ? ` (${unchecked} not: followed by an unexpected acceptance)` : ""
          }; ${failures.length} failing${samples.note ? `; ${samples.note}` : ""}`)
        const groups = new Map<string, Array<Failure>>()
        for (const f of failures) groups.set(f.category, [...(groups.get(f.category) ?? []), f])
        const report = [...groups].map(([category, fs]) =>
          `${category}: ${fs.length} case(s), e.g.\n` +
          fs.slice(0, 3).map((f) => `    #${f.index} (${f.kind}) ${f.request.slice(0, 300)}\n      -> ${f.status} ${f.answer.slice(0, 240)}`).join("\n")
        ).join("\n")
        expect(failures.length, `${label} (FUZZ_SEED=${settings.seed} FUZZ_ONLY=${JSON.stringify(label)}):\n${report}`).toBe(0)
      }, 600_000)
    }

    /** One or two 20 MB bodies per shell are enough to show a size refusal. */
    const TWENTY_MB = 20 * 1024 * 1024
    for (const [method, path, prefix] of [
      ["POST", "/orders", "{\"type\":\"credits\",\"amount_usd\":10,\"pad\":\""],
      ["POST", "/v1/chat/completions", "{\"model\":\"free-chat\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"pad\":\""]
    ] as const) {
      if (settings.only !== undefined && !`${method} ${path}`.includes(settings.only)) continue
      it(`${method} ${path} with a 20 MB body -> 413 in its shape, nothing changed`, async () => {
        const body = new TextEncoder().encode(prefix + "a".repeat(TWENTY_MB) + "\"}")
        const before = await snapshot()
        const answer = await withTimeout(
          platform.raw({ method, target: path, headers: [["authorization", `Bearer ${secret}`], ["content-type", "application/json"]], body }),
          60_000,
          `${method} ${path} 20 MB`
        )
        const after = await snapshot()
        baseline = after
        const surface = isInferencePath(path) ? "inference" : "platform"
        expect(answer.status, `${method} ${path} (20 MB) -> ${answer.status} ${answer.body.slice(0, 300)}`).toBe(413)
        expect(shapeProblem(surface, parseJson(answer.body)), answer.body.slice(0, 300)).toBeUndefined()
        expect(diffOf(before, after)).toBe("")
      }, 120_000)
    }
  })
