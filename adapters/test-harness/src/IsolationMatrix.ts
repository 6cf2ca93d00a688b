/**
 * The isolation matrix: no account can see or touch another's resources, through any endpoint.
 * Driven from the HttpApi definitions (ApiEndpoints.ts) like the permission matrix, so an endpoint
 * added later is covered, or the suite fails saying what to add.
 *
 * Two accounts, A and B (ShellUnderTest.newAccount), each get keys (one revoked), orders (paid by
 * card, pending with a deposit address, pending unpaid), gift tickets (one unredeemed, one redeemed
 * by its buyer), receipts, and usage through /v1 when a machine of the shell's catalogue answers.
 * A's writes are sent with Idempotency-Keys. Then, asked by B (a key with every permission, and a
 * key with just the endpoint's permission) and by the owner account:
 *
 *   - every endpoint with a path id, with each of A's ids of the kind the path names (the table
 *     PATH_ID_KINDS, keyed by the path segment before the parameter), with the minimal body and
 *     with each body A sent there, under A's Idempotency-Key: 404 in the surface's shape, the same
 *     answer as for an id that never existed, nothing of A's in it;
 *   - every read without a path id (lists, balance, account...), also with A's ids in its id query
 *     parameters (QUERY_ID_KINDS): nothing of A's in the answer, which carries
 *     Cache-Control: no-store (no cache may hand it to the next asker);
 *   - every write whose body names an id (BODY_ID_KINDS, by field name), with A's ids there:
 *     refused, nothing of A's in the answer;
 *   - every write A made with an Idempotency-Key, sent by B as A sent it: never A's replay.
 *
 * After each endpoint's cases, A's state (every keyed GET, and each of A's ids read back) is what
 * it was before. "Nothing of A's": no string of A's answers (ids, codes, secrets, addresses,
 * names, email) that B's own answers or the public catalogue do not also hold, apart from what the
 * asker itself sent. Gift tickets between the two accounts close the suite.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { type ApiEndpoint, fillPath, type JsonSchema, labelOf, minimalBody, minimalQuery, platformEndpoints } from "./ApiEndpoints.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"
import {
  type Answer,
  buildWorld,
  type Client,
  clientOf,
  neverIssued,
  type OwnedKind,
  payWithApprovedCard,
  type Snapshot,
  snapshot as snapshotOf,
  stringsOf,
  usageNote,
  type World
} from "./IsolationWorld.ts"

// ---------------------------------------------------------------------------------------------
// the id tables: add a row when an endpoint with a new kind of id appears

type IdKind =
  | { readonly _tag: "owned"; readonly kind: OwnedKind }
  /** Shared by every account (the public catalogue): not an isolation case, and why. */
  | { readonly _tag: "shared"; readonly why: string }
  /** Any of A's material that is not a live ticket code (POST /credits/redeem's `code`). */
  | { readonly _tag: "not_a_ticket" }
  /**
   * Not an id but a period of the asker's own account (a statement's month): every account may
   * ask for any; others' answers must hold nothing of A's, as for a keyed read.
   */
  | { readonly _tag: "own_period"; readonly value: () => string }

const owned = (kind: OwnedKind): IdKind => ({ _tag: "owned", kind })
const catalogue: IdKind = { _tag: "shared", why: "a catalogue id, the same for every account" }

/** Path parameters, by the path segment before them (`/orders/:id/pay` -> orders). */
export const PATH_ID_KINDS: Readonly<Record<string, IdKind>> = {
  models: catalogue,
  machines: catalogue,
  operators: catalogue,
  orders: owned("order"),
  keys: owned("key"),
  receipts: owned("receipt"),
  subscriptions: owned("subscription"),
  agents: owned("agent"),
  datasets: owned("dataset"),
  items: owned("dataset_item"),
  exports: owned("dataset_export"),
  projects: owned("project"),
  "ingest-keys": owned("ingest_key"),
  // This month: the one A's world has activity in.
  statements: { _tag: "own_period", value: () => new Date().toISOString().slice(0, 7) }
}

/**
 * Kinds a world holds only where the shell is set up to make them; elsewhere their endpoints are
 * not checked with A's ids (there are none), and the run says so.
 */
const SHELL_DEPENDENT_KINDS: ReadonlyMap<OwnedKind, string> = new Map([
  ["agent", "agents need a ready identity, an account service taking approvals and nodes serving agents"] as const
])

/** Body fields naming an id (by name: `id`, `*_id`, `code`, `to`), for every write endpoint. */
export const BODY_ID_KINDS: Readonly<Record<string, IdKind>> = {
  machine_id: catalogue,
  package_id: catalogue,
  plan_id: catalogue,
  subscription_id: owned("subscription"),
  renew_subscription_id: owned("subscription"),
  rental_id: owned("rental"),
  order_id: owned("order"),
  to: owned("deposit_address"),
  code: { _tag: "not_a_ticket" },
  // A fieldwork project's body names its own prompts, questions and consent scopes.
  id: { _tag: "shared", why: "a name the body gives a prompt, question or consent scope of its own, not a stored resource" }
}

/**
 * Body fields of one member of a union body only, with a body of that member to carry them (the
 * minimal body is the union's first member, which would ignore them).
 */
const FIELD_BODIES: Readonly<Record<string, Record<string, unknown>>> = {
  renew_subscription_id: { type: "subscription", machine_id: "m-eu-c", plan_id: "basic" }
}

/**
 * Bodies whose rules no JSON Schema states (a consent needs a required scope, an origin must be a
 * browser origin): a valid one, so the body passes and the id is what is checked.
 */
const VALID_BODIES: Readonly<Record<string, unknown>> = {
  "PUT /fieldwork/projects/:id/consent": { version: "x", text: "x", scopes: [{ id: "x", label: "x", required: true }] },
  "POST /fieldwork/projects/:id/ingest-keys": { origins: ["https://x.example"] }
}

const validBody = (e: ApiEndpoint) => labelOf(e) in VALID_BODIES ? VALID_BODIES[labelOf(e)] : minimalBody(e)

/**
 * Query parameters naming an id (by name: `id`, `*_id`, `key`, `code`), for every keyed read. None
 * yet; `key` is the spec's filter of GET /billing/usage.csv ("only this key").
 */
export const QUERY_ID_KINDS: Readonly<Record<string, IdKind>> = {
  key: owned("key"),
  key_id: owned("key"),
  order_id: owned("order")
}

/**
 * Endpoints that are an operator's tool, not a customer's: the owner account may act on any
 * account's resources there (docs/payments.md: simulated deposits pay whichever order they name),
 * so only B is checked.
 */
const OPERATOR_TOOLS = new Set(["POST /_simulated/deposits"])

const isIdField = (name: string) => name === "id" || name.endsWith("_id") || name === "code" || name === "to"
const isIdQuery = (name: string) => name === "id" || name.endsWith("_id") || name === "key" || name === "code"

/** The segment before each path parameter. */
const pathResources = (endpoint: ApiEndpoint): ReadonlyArray<{ param: string; resource: string }> => {
  const segments = endpoint.path.split("/")
  return segments.flatMap((s, i) => s.startsWith(":") ? [{ param: s.slice(1), resource: segments[i - 1] ?? "" }] : [])
}

/** Every property name of a JSON body schema, through $refs, unions and nested objects. */
const bodyFields = (schema: JsonSchema | undefined, components: JsonSchema, depth = 0): Set<string> => {
  const out = new Set<string>()
  if (schema === undefined || depth > 12) return out
  let s = schema
  for (let i = 0; i < 16 && typeof s.$ref === "string"; i++) {
    s = components.schemas?.[(s.$ref as string).replace(/^#\/components\/schemas\//, "")] ?? {}
  }
  for (const branch of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])] as Array<JsonSchema>) {
    for (const f of bodyFields(branch, components, depth + 1)) out.add(f)
  }
  for (const [name, sub] of Object.entries((s.properties ?? {}) as Record<string, JsonSchema>)) {
    out.add(name)
    for (const f of bodyFields(sub, components, depth + 1)) out.add(f)
  }
  if (s.items !== undefined) for (const f of bodyFields(s.items, components, depth + 1)) out.add(f)
  return out
}

// ---------------------------------------------------------------------------------------------
// a catalogue the suite can make usage on

/** The fixture catalogue with every machine pointing at `machineUrl` (a reference machine). */
export const withMachinesAt = (config: CatalogueConfig, machineUrl: string): CatalogueConfig => ({
  ...config,
  machines: config.machines.map((m) => ({ ...m, base_url: machineUrl }))
})

// ---------------------------------------------------------------------------------------------

/** A timestamp: shared by chance between accounts, so never counted as A's material. */
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

export interface IsolationOptions {
  /** Wait until the shell's background work (metering) is done; else snapshots are polled until stable. */
  readonly idle?: () => Promise<void>
}

export const isolationMatrixSuite = (shell: string, start: () => Promise<ShellUnderTest>, options: IsolationOptions = {}) =>
  describe(`isolation matrix on ${shell}`, () => {
    const endpoints = platformEndpoints()
    const withPathIds = endpoints.filter((e) => e.pathParams.length > 0)
    const keyedReads = endpoints.filter((e) => e.method === "GET" && e.access._tag === "key" && e.pathParams.length === 0)
    /** Keyed reads whose path names only periods of the asker's own account (a statement's month). */
    const periodReads = endpoints.filter((e) =>
      e.method === "GET" && e.access._tag === "key" && e.pathParams.length > 0 &&
      pathResources(e).every(({ resource }) => PATH_ID_KINDS[resource]?._tag === "own_period")
    )
    const periodPath = (e: ApiEndpoint) =>
      pathResources(e).reduce((path, { param, resource }) => {
        const kind = PATH_ID_KINDS[resource]
        return kind?._tag === "own_period" ? path.replace(`:${param}`, kind.value()) : path
      }, e.path) + minimalQuery(e)
    const bodyIdWrites = endpoints
      .filter((e) => e.method !== "GET" && e.access._tag === "key" && e.bodyJsonSchema !== undefined)
      .map((e) => ({ endpoint: e, fields: [...bodyFields(e.bodyJsonSchema, e.components)].filter(isIdField) }))
      .filter((x) => x.fields.length > 0)

    /** What the snapshot key holds: every permission a keyed GET needs. */
    const readPermissions = [...new Set(endpoints.flatMap((e) =>
      e.method === "GET" && e.access._tag === "key" && e.access.permission !== undefined ? [e.access.permission] : []
    ))]

    let platform: ShellUnderTest
    let A: World
    let B: World
    /** B's keys: every permission, and one per permission. */
    const bOnly = new Map<string, string>()
    /** Strings only A's answers hold. */
    let aMaterial: Set<string>
    /** A's state when A's world was built, and after B built its own (B's usage included). */
    let aBuilt: Snapshot
    let aAfterB: Snapshot
    let checks = 0
    const started = Date.now()

    let client: Client
    const call: Client["call"] = (...args) => client.call(...args)
    const ok: Client["ok"] = (...args) => client.ok(...args)

    /** Every keyed GET, and each of the account's ids read back: its state. */
    const statePaths = (world: World) => [
      ...keyedReads.map((e) => e.path + minimalQuery(e)),
      ...withPathIds
        .filter((e) => e.method === "GET" && e.access._tag === "key")
        .flatMap((e) => ownedIdsFor(e, world).flatMap(({ ids }) => ids.map((id) => fillOwned(e, world, id) + minimalQuery(e)))),
      ...periodReads.map((e) => periodPath(e))
    ]
    const snapshot = (world: World) => snapshotOf(client, world, statePaths(world), options.idle)

    /** The kind and ids of the path's last parameter: the resource it names (its parents follow from it). */
    const ownedIdsFor = (e: ApiEndpoint, world: World) =>
      pathResources(e).slice(-1).flatMap(({ resource }) => {
        const kind = PATH_ID_KINDS[resource]
        return kind?._tag === "owned" ? [{ kind: kind.kind, ids: world.ids[kind.kind] }] : []
      })

    /** The path naming `id` in its last parameter and the id's parent (World.parents) in the one before. */
    const fillOwned = (e: ApiEndpoint, world: World, id: string) => {
      const last = e.pathParams[e.pathParams.length - 1]
      return fillPath(e, (name) => (name === last ? id : world.parents[id] ?? id))
    }

    // ---- what an answer may not hold ----

    /** The strings of A's the answer holds, apart from those the asker sent itself. */
    const leaks = (answer: Answer, sent: string) => [...aMaterial].filter((s) => !sent.includes(s) && answer.text.includes(s))

    const expectErrorShape = (e: ApiEndpoint, answer: Answer, context: string) => {
      expect(answer.json, `${context}: not JSON: ${answer.text.slice(0, 200)}`).toBeTypeOf("object")
      expect(Object.keys(answer.json ?? {}), context).toEqual(["error"])
      const keys = Object.keys(answer.json.error).filter((k) => k !== "scope").sort()
      expect(keys, `${context}: ${answer.text}`).toEqual(e.surface === "inference" ? ["code", "message", "type"] : ["code", "message"])
    }

    const askers = (e: ApiEndpoint) => {
      const out: Array<{ who: string; key: string }> = [{ who: "B (every permission)", key: B.key }]
      const p = e.access._tag === "key" ? e.access.permission : undefined
      if (p !== undefined) out.push({ who: `B (just ${p})`, key: bOnly.get(p)! })
      if (platform.ownerSecret !== "" && !OPERATOR_TOOLS.has(labelOf(e))) out.push({ who: "the owner", key: platform.ownerSecret })
      return out
    }

    /** A's state as last read: each check reads it once after, and that is the next check's before. */
    let lastA: Snapshot | undefined
    const stateOfA = async () => (lastA ??= await snapshot(A))

    const expectAUnchanged = async (before: Snapshot, context: string) => {
      const after = await snapshot(A)
      lastA = after
      checks++
      expect(after, `${context}: A's state changed`).toEqual(before)
    }

    beforeAll(async () => {
      platform = await start()
      client = clientOf(platform)
      if (platform.newAccount === undefined) return
      A = await buildWorld(client, "a", await platform.newAccount(), readPermissions)
      aBuilt = await snapshot(A)
      B = await buildWorld(client, "b", await platform.newAccount(), readPermissions)
      for (const p of new Set(endpoints.flatMap((e) => e.access._tag === "key" && e.access.permission !== undefined ? [e.access.permission] : []))) {
        const created = (await ok("POST", "/keys", { key: B.key, body: { name: `iso-b-only-${p}`, permissions: [p] } })).json
        bOnly.set(p, created.secret)
        B.secrets.push(created.secret)
      }
      aAfterB = await snapshot(A)
      // What only A's answers hold: every string of A's state and writes, less B's and the catalogue's.
      const aStrings = stringsOf([await snapshot(A), A.writes.map((w) => w.answer.json), A.secrets, A.email, A.accountId])
      const common = stringsOf([
        await snapshot(B),
        B.writes.map((w) => w.answer.json),
        ...(await Promise.all(
          endpoints.filter((e) => e.method === "GET" && e.access._tag === "public" && e.pathParams.length === 0)
            .map(async (e) => (await call("GET", e.path + minimalQuery(e))).json)
        ))
      ])
      // A's ids, secrets and email stay forbidden even when B's answers hold them: then a list
      // of B's shows an item of A's, and the checks below name it.
      const aOwn = [...Object.values(A.ids).flat(), ...A.secrets, A.email, A.accountId]
      aMaterial = new Set([...[...aStrings].filter((s) => s.length >= 6 && !ISO.test(s) && !common.has(s)), ...aOwn])
    }, 300_000)

    afterAll(async () => {
      console.log(
        `isolation matrix on ${shell}: ${withPathIds.length} endpoints with path ids, ${keyedReads.length} keyed reads, ` +
          `${bodyIdWrites.length} writes naming ids in the body = ${checks} checks in ${Date.now() - started} ms; ${A === undefined ? "no accounts" : usageNote(A)}`
      )
      await platform?.close()
    })

    const needsTwo = () => {
      if (platform.newAccount === undefined) throw new Error(`${shell}: the shell cannot make a second account (newAccount)`)
    }

    it("every path id, body id and query id has a kind in the tables", () => {
      const missing: Array<string> = []
      for (const e of withPathIds) {
        for (const { resource } of pathResources(e)) {
          if (PATH_ID_KINDS[resource] === undefined) missing.push(`add the id kind of ${e.path} (resource "${resource}") to IsolationMatrix PATH_ID_KINDS`)
        }
      }
      for (const { endpoint, fields } of bodyIdWrites) {
        for (const f of fields) {
          if (BODY_ID_KINDS[f] === undefined) missing.push(`add the id kind of body field "${f}" of ${labelOf(endpoint)} to IsolationMatrix BODY_ID_KINDS`)
        }
      }
      for (const e of keyedReads) {
        for (const q of e.queryJsonSchemas.filter((q) => isIdQuery(q.name))) {
          if (QUERY_ID_KINDS[q.name] === undefined) missing.push(`add the id kind of query parameter "${q.name}" of ${labelOf(e)} to IsolationMatrix QUERY_ID_KINDS`)
        }
      }
      expect(missing).toEqual([])
    })

    it("both accounts have what the matrix needs", async () => {
      needsTwo()
      for (const w of [A, B]) {
        expect(w.ids.order.length).toBeGreaterThanOrEqual(5)
        expect(w.ids.key.length).toBeGreaterThanOrEqual(4)
        expect(w.ids.receipt.length).toBeGreaterThanOrEqual(3)
        expect(w.ids.ticket_code).toHaveLength(2)
        expect(w.ids.deposit_address).toHaveLength(1)
      }
      // Usage made through /v1 shows in each account's activity.
      for (const w of [A, B]) {
        if (w.usageCalls === 0) continue
        const activity = (await ok("GET", "/credits/activity?limit=500", { key: w.key })).json.data as Array<any>
        expect(activity.filter((x) => x.type === "usage").length).toBeGreaterThan(0)
      }
      expect(aMaterial.size).toBeGreaterThan(20)
      for (const id of [...A.ids.order, ...A.ids.key, ...A.ids.receipt, ...A.ids.ticket_code]) expect(aMaterial.has(id), id).toBe(true)
    })

    it("B building its world (keys, orders, payments, gift tickets, redemptions, usage through /v1) changes nothing of A's", () => {
      needsTwo()
      checks++
      expect(aAfterB).toEqual(aBuilt)
    })

    it("a ticket redeemed by its buyer shows redeemed_by_you to the buyer", async () => {
      needsTwo()
      const tickets = (await ok("GET", "/tickets", { key: A.key })).json.data as Array<any>
      expect(tickets.find((t) => t.code === A.ids.ticket_code[1])).toMatchObject({ redeemed: true, redeemed_by_you: true })
      expect(tickets.find((t) => t.code === A.ids.ticket_code[0])).toMatchObject({ redeemed: false, redeemed_by_you: false })
    })

    for (const e of withPathIds) {
      const kinds = pathResources(e).map(({ resource }) => PATH_ID_KINDS[resource])
      const shared = kinds.find((k) => k?._tag === "shared")
      const title = shared?._tag === "shared"
        ? `${labelOf(e)}: not checked, ${shared.why}`
        : periodReads.includes(e)
        ? `${labelOf(e)}: each asker reads its own, nothing of A's`
        : `${labelOf(e)}: A's ids asked by others -> 404, nothing of A's`
      it(title, async () => {
        needsTwo()
        if (kinds.some((k) => k === undefined)) throw new Error(`add the id kind of ${e.path} to IsolationMatrix PATH_ID_KINDS`)
        if (shared !== undefined) return
        if (periodReads.includes(e)) {
          // Each asker reads its own period: 200, and nothing of A's in it.
          const path = periodPath(e)
          for (const { who, key } of askers(e)) {
            const answer = await call("GET", path, { key })
            checks++
            expect(answer.status, `${who}: GET ${path}: ${answer.text.slice(0, 200)}`).toBe(200)
            expect(leaks(answer, path), `${who}: GET ${path}`).toEqual([])
          }
          return
        }
        const before = await stateOfA()
        const bodies: Array<{ body: unknown; idempotencyKey: string | undefined }> = [{ body: validBody(e), idempotencyKey: undefined }]
        for (const w of A.writes.filter((w) => w.template === e.path && w.method === e.method)) {
          bodies.push({ body: w.body, idempotencyKey: w.idempotencyKey })
        }
        const failures: Array<string> = []
        for (const { kind, ids } of ownedIdsFor(e, A)) {
          if (ids.length === 0 && SHELL_DEPENDENT_KINDS.has(kind)) {
            console.log(`isolation matrix on ${shell}: ${labelOf(e)} not checked with A's ids: this shell makes no ${kind} (${SHELL_DEPENDENT_KINDS.get(kind)})`)
            continue
          }
          expect(ids.length, `A has no ${kind} ids`).toBeGreaterThan(0)
          for (const id of ids) {
            for (const { who, key } of askers(e)) {
              for (const { body, idempotencyKey } of bodies) {
                const path = fillOwned(e, A, id) + minimalQuery(e)
                const headers = idempotencyKey === undefined ? undefined : { "idempotency-key": idempotencyKey }
                const answer = await call(e.method, path, { key, body, ...(headers ? { headers } : {}) })
                const unknown = neverIssued(id)
                const control = await call(e.method, fillPath(e, () => unknown) + minimalQuery(e), { key, body })
                const context = `${who}: ${e.method} ${path} ${JSON.stringify(body) ?? ""}${idempotencyKey ? ` [A's Idempotency-Key]` : ""} -> ${answer.status} ${answer.text.slice(0, 300)}`
                checks++
                if (answer.status !== 404) failures.push(`${context}: expected 404`)
                else expectErrorShape(e, answer, context)
                if (answer.headers.get("idempotent-replayed") !== null) failures.push(`${context}: replayed A's answer`)
                const found = leaks(answer, `${path} ${JSON.stringify(body)}`)
                if (found.length > 0) failures.push(`${context}: holds A's ${found.join(", ")}`)
                const same = (a: Answer, sent: ReadonlyArray<string>) => ({
                  status: a.status,
                  body: sent.reduce((text, s) => text.replaceAll(s, "{id}"), a.text)
                })
                const parent = A.parents[id]
                if (JSON.stringify(same(answer, parent === undefined ? [id] : [id, parent])) !== JSON.stringify(same(control, [unknown]))) {
                  failures.push(`${context}: differs from the answer for an id never issued (${control.status} ${control.text.slice(0, 200)})`)
                }
              }
            }
          }
        }
        expect(failures).toEqual([])
        await expectAUnchanged(before, labelOf(e))
      }, 120_000)
    }

    for (const { endpoint: e, fields } of bodyIdWrites) {
      it(`${labelOf(e)}: A's ids in the body (${fields.join(", ")}) change nothing of A's`, async () => {
        needsTwo()
        const before = await stateOfA()
        const failures: Array<string> = []
        const notes: Array<string> = []
        for (const field of fields) {
          const kind = BODY_ID_KINDS[field]
          if (kind === undefined) throw new Error(`add the id kind of body field "${field}" of ${labelOf(e)} to IsolationMatrix BODY_ID_KINDS`)
          if (kind._tag === "shared") continue
          const values = kind._tag === "owned"
            ? A.ids[kind.kind]
            : [...A.ids.order, ...A.ids.key, ...A.ids.receipt, ...A.ids.deposit_address, ...A.secrets.filter((s) => !A.ids.ticket_code.includes(s))]
          if (values.length === 0) {
            notes.push(`${field}: A can hold no ${kind._tag === "owned" ? kind.kind : field} yet`)
            continue
          }
          for (const value of values) {
            for (const { who, key } of askers(e)) {
              const body = { ...(FIELD_BODIES[field] ?? minimalBody(e) as object), [field]: value }
              const path = fillPath(e, () => "x") + minimalQuery(e)
              const answer = await call(e.method, path, { key, body })
              const context = `${who}: ${e.method} ${path} ${JSON.stringify(body)} -> ${answer.status} ${answer.text.slice(0, 300)}`
              checks++
              if (answer.status < 400 || answer.status >= 500) failures.push(`${context}: expected a refusal`)
              else expectErrorShape(e, answer, context)
              const found = leaks(answer, JSON.stringify(body))
              if (found.length > 0) failures.push(`${context}: holds A's ${found.join(", ")}`)
            }
          }
        }
        if (notes.length > 0) console.log(`isolation matrix on ${shell}: ${labelOf(e)}: ${notes.join("; ")}`)
        expect(failures).toEqual([])
        await expectAUnchanged(before, labelOf(e))
      }, 120_000)
    }

    for (const e of keyedReads) {
      it(`${labelOf(e)}: others' answers hold nothing of A's`, async () => {
        needsTwo()
        const failures: Array<string> = []
        for (const { who, key } of askers(e)) {
          const path = e.path + minimalQuery(e)
          const answer = await call("GET", path, { key })
          checks++
          if (answer.status !== 200) failures.push(`${who}: GET ${path} -> ${answer.status} ${answer.text.slice(0, 200)}`)
          // An account's answer is never kept by a cache between the client and the platform, where
          // the next asker of the same address (another account) could be handed it.
          if (!/\bno-store\b/.test(answer.headers.get("cache-control") ?? "")) {
            failures.push(`${who}: GET ${path}: Cache-Control is ${JSON.stringify(answer.headers.get("cache-control"))}, not no-store`)
          }
          const found = leaks(answer, path)
          if (found.length > 0) failures.push(`${who}: GET ${path} holds A's ${found.join(", ")}`)
          // A's ids in the query's id parameters: still nothing of A's.
          for (const q of e.queryJsonSchemas.filter((q) => isIdQuery(q.name))) {
            const kind = QUERY_ID_KINDS[q.name]
            if (kind === undefined) throw new Error(`add the id kind of query parameter "${q.name}" of ${labelOf(e)} to IsolationMatrix QUERY_ID_KINDS`)
            if (kind._tag !== "owned") continue
            for (const id of A.ids[kind.kind]) {
              const query = new URLSearchParams(minimalQuery(e).slice(1))
              query.set(q.name, id)
              const withId = `${e.path}?${query.toString()}`
              const byId = await call("GET", withId, { key })
              checks++
              const foundById = leaks(byId, withId)
              if (foundById.length > 0) failures.push(`${who}: GET ${withId} holds A's ${foundById.join(", ")}`)
            }
          }
        }
        // And B sees its own: the check above is not passing on empty lists.
        const own = await call("GET", e.path + minimalQuery(e), { key: B.key })
        const mine = [...B.ids.order, ...B.ids.key, ...B.ids.receipt, ...B.ids.ticket_code].filter((id) => own.text.includes(id))
        if (/^\/(orders|keys|tickets|billing\/receipts)$/.test(e.path)) expect(mine.length, `${labelOf(e)} for B: ${own.text.slice(0, 300)}`).toBeGreaterThan(0)
        expect(failures).toEqual([])
      }, 120_000)
    }

    it("B sending A's writes with A's Idempotency-Keys gets its own answers, never A's replay", async () => {
      needsTwo()
      const before = await stateOfA()
      const failures: Array<string> = []
      // What B sent so far is B's own: a later answer may list it (a key B made with A's key's
      // name, listed in the limits view POST /billing/limits answers).
      let sent = ""
      for (const w of A.writes.filter((w) => !w.template.includes(":"))) {
        sent += JSON.stringify(w.body)
        const answer = await call(w.method, w.path, { key: B.key, body: w.body, headers: { "idempotency-key": w.idempotencyKey! } })
        checks++
        const context = `B: ${w.method} ${w.path} ${JSON.stringify(w.body)} [A's Idempotency-Key] -> ${answer.status} ${answer.text.slice(0, 300)}`
        if (answer.headers.get("idempotent-replayed") !== null) failures.push(`${context}: replayed A's answer`)
        if (answer.json?.error?.code === "idempotency_key_reused") failures.push(`${context}: A's key is seen across accounts`)
        const found = leaks(answer, sent)
        if (found.length > 0) failures.push(`${context}: holds A's ${found.join(", ")}`)
      }
      expect(failures).toEqual([])
      await expectAUnchanged(before, "idempotency keys")
    }, 120_000)

    it("gift tickets between two accounts: bought by A, redeemed once by B, refused the second time", async () => {
      needsTwo()
      const machine = ((await ok("GET", "/machines", { key: A.key })).json.data as Array<any>)[0].id as string
      const balance = async (key: string) => {
        const b = (await ok("GET", "/credits", { key })).json
        // In micro-credits, so sums are exact (usage leaves fractions of a credit).
        const micro = (credits: number) => Math.round(credits * 1_000_000)
        return { total: micro(b.total_credits), pinned: micro((b.by_scope as Array<any>).find((s) => s.machine_id === machine)?.credits ?? 0) }
      }
      const buyGift = async (amount_usd: number) => {
        const created = (await ok("POST", "/orders", { key: A.key, body: { type: "credits", amount_usd, machine_id: machine, gift: true } })).json
        const paying = (await ok("POST", `/orders/${created.id}/pay`, { key: A.key, body: { method: "card" } })).json
        await payWithApprovedCard(client, paying.pay_url)
        const ticket = (await ok("GET", `/orders/${created.id}`, { key: A.key })).json.ticket
        return { order: created.id as string, ticket }
      }
      const aBefore = await balance(A.key)
      const bBefore = await balance(B.key)
      const gift = await buyGift(8)
      checks++
      expect(gift.ticket).toEqual({ code: expect.any(String), credits: 8000, machine_id: machine, redeemed: false, redeemed_by_you: false })
      expect(await balance(A.key)).toEqual(aBefore)
      // B sees nothing of it before redeeming.
      checks++
      expect((await call("GET", `/orders/${gift.order}`, { key: B.key })).status).toBe(404)
      expect((await ok("GET", "/tickets", { key: B.key })).text).not.toContain(gift.ticket.code)

      const redeemed = await ok("POST", "/credits/redeem", { key: B.key, body: { code: gift.ticket.code } })
      checks++
      expect(redeemed.json).toEqual({ redeemed: true, credits: 8000, machine_id: machine })
      expect(await balance(B.key)).toEqual({ total: bBefore.total + 8000e6, pinned: bBefore.pinned + 8000e6 })
      expect(await balance(A.key)).toEqual(aBefore)
      const entry = ((await ok("GET", "/credits/activity", { key: B.key })).json.data as Array<any>)[0]
      expect(entry).toMatchObject({ type: "credit_added", credits: 8000, machine_id: machine })

      // A sees it redeemed, not by A; B's ticket list still holds only what B bought.
      checks++
      expect((await ok("GET", `/orders/${gift.order}`, { key: A.key })).json.ticket).toEqual({ ...gift.ticket, redeemed: true, redeemed_by_you: false })
      expect(((await ok("GET", "/tickets", { key: A.key })).json.data as Array<any>).find((t) => t.code === gift.ticket.code))
        .toEqual({ ...gift.ticket, redeemed: true, redeemed_by_you: false })
      expect((await ok("GET", "/tickets", { key: B.key })).text).not.toContain(gift.ticket.code)

      for (const key of [B.key, A.key]) {
        const again = await call("POST", "/credits/redeem", { key, body: { code: gift.ticket.code } })
        checks++
        expect(again.status, again.text).toBe(409)
        expect(again.json.error.code).toBe("ticket_already_redeemed")
      }
      expect(await balance(B.key)).toEqual({ total: bBefore.total + 8000e6, pinned: bBefore.pinned + 8000e6 })
      expect(await balance(A.key)).toEqual(aBefore)

      // A race: A and B redeem one ticket at once; exactly one gets it, once.
      const race = await buyGift(9)
      const [a, b] = await Promise.all([A.key, B.key].map((key) => call("POST", "/credits/redeem", { key, body: { code: race.ticket.code } })))
      checks++
      expect([a!.status, b!.status].sort(), `${a!.text} ${b!.text}`).toEqual([200, 409])
      const aAfter = await balance(A.key)
      const bAfter = await balance(B.key)
      expect(aAfter.total + bAfter.total).toBe(aBefore.total + bBefore.total + 8000e6 + 9000e6)
      expect((a!.status === 200 ? aAfter.total - aBefore.total : bAfter.total - bBefore.total - 8000e6)).toBe(9000e6)
      const view = (await ok("GET", `/orders/${race.order}`, { key: A.key })).json.ticket
      expect(view).toMatchObject({ redeemed: true, redeemed_by_you: a!.status === 200 })
    }, 120_000)
  })
