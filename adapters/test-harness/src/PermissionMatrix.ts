/**
 * The permission matrix, one shared table of security cases for every endpoint (as Unkey's
 * common-tests): read from the HttpApi definitions (ApiEndpoints.ts), so an endpoint added later is
 * covered without editing this file. Every shell runs it unchanged against its own server.
 *
 * For an endpoint needing a key with permission P:
 *   - no Authorization header, and a scheme other than Bearer   -> 401 missing_api_key
 *   - a malformed key, a well-formed unknown key                -> 401 invalid_api_key
 *   - a revoked key                                             -> 401 invalid_api_key
 *   - a key holding every permission except P                   -> 403, scope = P
 *     (inference: 403 key_lacks_inference_permission)
 *   - a key holding just P                                      -> past authentication: neither 401
 *     nor the 403 of a missing P (whatever the handler then says)
 *   - a key of an agent revoked or failed                       -> 401 invalid_api_key
 *   - a key of an agent expired, or whose delegation lapsed     -> 403 agent_expired
 *   - a key of an agent in good standing (unless P is manage)   -> past the agent's check
 *   - a key of a plan, or a rental, that has ended              -> 403 subscription_inactive / rental_ended
 *   - a key scoped to a machine, a plan, a rental: by the endpoint's scope rule (KeyScope.ts):
 *     account-wide -> 403 key_scope_too_narrow; within -> 403 key_scope_too_narrow on a thing beyond
 *     the scope (the owner's key, an order for the whole account, another plan); any -> past the rule
 * For a public endpoint: no key, or a bad one, is never 401 or 403.
 * Path parameters get placeholder ids, bodies the minimal value their schema accepts, required
 * query parameters their minimal value; every answer must be in its surface's error shape. The
 * scoped and agent keys are written on the shell's stores (`seed`, KeyWorld.ts).
 */
import { PermissionValues, type Permission } from "@model-platform/core/keys"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ApiEndpoint, fillPath, labelOf, minimalBody, minimalQuery, platformEndpoints } from "./ApiEndpoints.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"
import { AGENT_STATES, type KeyWorld, SCOPE_KINDS, type ScopeKind, seedKeyWorld } from "./KeyWorld.ts"

type AgentCase = `agent ${keyof typeof AGENT_STATES}`
type ScopeCase = `scoped to a ${ScopeKind}`

type Case =
  | "no key"
  | "non-Bearer scheme"
  | "malformed key"
  | "unknown key"
  | "revoked key"
  | "key lacking the permission"
  | "key with just the permission"
  | AgentCase
  | "agent in good standing"
  | "plan ended"
  | "rental ended"
  | ScopeCase
  | "public: no key"
  | "public: bad key"

const AGENT_CASES = Object.keys(AGENT_STATES).map((state) => `agent ${state}` as AgentCase)
const SCOPE_CASES = SCOPE_KINDS.map((kind) => `scoped to a ${kind}` as ScopeCase)

/** The cases every key endpoint gets for what stands behind the key: agents, ended plans, scopes. */
const standingCases = (endpoint: ApiEndpoint): ReadonlyArray<Case> => [
  ...AGENT_CASES,
  ...(endpoint.access._tag === "key" && endpoint.access.permission === "manage" ? [] : ["agent in good standing" as const]),
  "plan ended",
  "rental ended",
  ...SCOPE_CASES
]

const casesFor = (endpoint: ApiEndpoint): ReadonlyArray<Case> =>
  endpoint.access._tag === "public"
    ? ["public: no key", "public: bad key"]
    : endpoint.access.permission === undefined
    ? ["no key", "non-Bearer scheme", "malformed key", "unknown key", "revoked key", ...standingCases(endpoint)]
    : [
      "no key",
      "non-Bearer scheme",
      "malformed key",
      "unknown key",
      "revoked key",
      "key lacking the permission",
      "key with just the permission",
      ...standingCases(endpoint)
    ]

/** The cases of a key whose standing refuses it on every surface (KeyStanding.ts). */
const STANDING_REFUSALS = [...AGENT_CASES, "plan ended", "rental ended"] as const

/** Codes that say a key's standing or scope refused it. */
const STANDING_CODES = ["agent_expired", "subscription_inactive", "rental_ended", "key_scope_too_narrow"]

interface Answer {
  readonly status: number
  readonly text: string
  readonly json: any
}

/** The error body of a refusal, checked against its surface's shape; returns the error object. */
const expectErrorShape = (endpoint: ApiEndpoint, answer: Answer, context: string) => {
  expect(answer.json, `${context}: answered ${answer.status} with a body that is not JSON: ${answer.text.slice(0, 200)}`)
    .toBeTypeOf("object")
  expect(Object.keys(answer.json ?? {}), `${context}: ${answer.text.slice(0, 300)}`).toEqual(["error"])
  const error = answer.json.error
  if (endpoint.surface === "inference") {
    expect(Object.keys(error).sort(), `${context}: ${answer.text.slice(0, 300)}`).toEqual(["code", "message", "type"])
    expect(error.type, context).toBeTypeOf("string")
  } else {
    expect(Object.keys(error).filter((k) => k !== "scope").sort(), `${context}: ${answer.text.slice(0, 300)}`)
      .toEqual(["code", "message"])
    if ("scope" in error) expect(error.scope, context).toBeTypeOf("string")
  }
  expect(error.code, context).toBeTypeOf("string")
  expect(error.message, context).toBeTypeOf("string")
  expect(error.message.length, context).toBeGreaterThan(0)
  return error as { code: string; message: string; scope?: string; type?: string }
}

export const permissionMatrixSuite = (shell: string, start: () => Promise<ShellUnderTest>) =>
  describe(`permission matrix on ${shell}`, () => {
    const endpoints = platformEndpoints()
    const checks = endpoints.reduce((n, e) => n + casesFor(e).length, 0)
    let platform: ShellUnderTest
    /** Secrets by name: "lacking:<p>", "only:<p>", "revoked". */
    const keys = new Map<string, Promise<string>>()
    let ran = 0
    const started = Date.now()

    beforeAll(async () => {
      platform = await start()
    })
    afterAll(async () => {
      console.log(
        `permission matrix on ${shell}: ${endpoints.length} endpoints x their cases = ${checks} checks (${ran} run) in ${
          Date.now() - started
        } ms`
      )
      await platform?.close()
    })

    /** Sends the endpoint's minimal request; `target` fills its path parameters (else placeholders). */
    const send = async (endpoint: ApiEndpoint, authorization: string | undefined, target?: string): Promise<Answer> => {
      const headers: Record<string, string> = {}
      if (authorization !== undefined) headers.authorization = authorization
      const body = minimalBody(endpoint)
      if (body !== undefined) headers["content-type"] = "application/json"
      const path = fillPath(endpoint, (name) => target ?? `${name}_doesnotexist`) + minimalQuery(endpoint)
      const response = await platform.fetch(path, {
        method: endpoint.method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await response.text()
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      return { status: response.status, text, json }
    }

    const createKey = async (permissions: ReadonlyArray<Permission>, name: string): Promise<{ id: string; secret: string }> => {
      const response = await platform.fetch("/keys", {
        method: "POST",
        headers: { authorization: `Bearer ${platform.ownerSecret}`, "content-type": "application/json" },
        body: JSON.stringify({ name, permissions })
      })
      const text = await response.text()
      expect(response.status, `creating the key "${name}": ${text}`).toBe(200)
      return JSON.parse(text)
    }

    /** A key made once per name and reused by every endpoint's case. */
    const keyFor = (name: string, make: () => Promise<string>): Promise<string> => {
      let key = keys.get(name)
      if (key === undefined) {
        key = make()
        keys.set(name, key)
      }
      return key
    }
    const lacking = (p: Permission) =>
      keyFor(`lacking:${p}`, async () => (await createKey(PermissionValues.filter((q) => q !== p), `matrix-lacking-${p}`)).secret)
    const only = (p: Permission) => keyFor(`only:${p}`, async () => (await createKey([p], `matrix-only-${p}`)).secret)
    const revoked = () =>
      keyFor("revoked", async () => {
        const key = await createKey(PermissionValues, "matrix-revoked")
        const response = await platform.fetch(`/keys/${key.id}`, {
          method: "DELETE",
          headers: { authorization: `Bearer ${platform.ownerSecret}` }
        })
        expect(response.status, await response.text()).toBe(200)
        return key.secret
      })

    /**
     * The scoped and agent keys (KeyWorld.ts), and for each `within` target a thing of the owner's
     * account beyond every scoped key: the owner's own key, an order for the whole account, a plan
     * on another machine than the pin.
     */
    let world: Promise<KeyWorld & { readonly beyond: Record<"key" | "order" | "subscription", string> }> | undefined
    const worldOf = () => {
      world ??= (async () => {
        if (platform.seed === undefined) throw new Error(`${shell}: the permission matrix needs \`seed\` to write scoped and agent keys`)
        const keys = await platform.seed(seedKeyWorld(platform.ownerSecret))
        const owner = { authorization: `Bearer ${platform.ownerSecret}`, "content-type": "application/json" }
        const me = await (await platform.fetch("/me", { headers: owner })).json()
        const order = await platform.fetch("/orders", { method: "POST", headers: owner, body: JSON.stringify({ type: "credits", amount_usd: 10 }) })
        const orderText = await order.text()
        expect(order.status, orderText).toBe(200)
        return { ...keys, beyond: { key: me.key.id, order: JSON.parse(orderText).id, subscription: keys.foreignPlan } }
      })()
      return world
    }

    /** The key of a refusing standing, and what every surface answers it. */
    const refusalOf = (w: KeyWorld, c: (typeof STANDING_REFUSALS)[number]) => {
      if (c === "plan ended") return { secret: w.ended.plan, status: 403, code: "subscription_inactive" }
      if (c === "rental ended") return { secret: w.ended.rental, status: 403, code: "rental_ended" }
      const state = c.slice("agent ".length) as keyof typeof AGENT_STATES
      return { secret: w.agents[state], ...AGENT_STATES[state] }
    }

    /** A refusal with this status and code in the endpoint's surface's shape. */
    const expectRefused = (endpoint: ApiEndpoint, answer: Answer, title: string, status: number, code: string) => {
      expect(answer.status, `${title}: ${answer.text.slice(0, 300)}`).toBe(status)
      expect(expectErrorShape(endpoint, answer, title).code, `${title}: ${answer.text.slice(0, 300)}`).toBe(code)
    }
    /** Past the standing and scope checks: neither 401 nor one of their refusals (the handler may refuse otherwise). */
    const expectPast = (endpoint: ApiEndpoint, answer: Answer, title: string) => {
      expect(answer.status, `${title}: ${answer.text.slice(0, 300)}`).not.toBe(401)
      if (answer.status >= 400) expect(STANDING_CODES, `${title}: ${answer.text.slice(0, 300)}`).not.toContain(expectErrorShape(endpoint, answer, title).code)
    }

    for (const endpoint of endpoints) {
      for (const c of casesFor(endpoint)) {
        const permission = endpoint.access._tag === "key" ? endpoint.access.permission : undefined
        const title = `${labelOf(endpoint)} [${endpoint.access._tag === "public" ? "public" : permission ?? "any key"}]: ${c}`
        it(title, async () => {
          ran++
          const unauthorized = async (authorization: string | undefined, code: string) => {
            const answer = await send(endpoint, authorization)
            expect(answer.status, `${title}: ${answer.text.slice(0, 300)}`).toBe(401)
            expect(expectErrorShape(endpoint, answer, title).code).toBe(code)
          }
          switch (c) {
            case "no key":
              return unauthorized(undefined, "missing_api_key")
            case "non-Bearer scheme":
              return unauthorized(`Basic ${btoa("a:b")}`, "missing_api_key")
            case "malformed key":
              return unauthorized("Bearer not-a-key", "invalid_api_key")
            case "unknown key":
              return unauthorized(`Bearer mpk_${"A".repeat(43)}`, "invalid_api_key")
            case "revoked key":
              return unauthorized(`Bearer ${await revoked()}`, "invalid_api_key")
            case "key lacking the permission": {
              const answer = await send(endpoint, `Bearer ${await lacking(permission!)}`)
              expect(answer.status, `${title}: ${answer.text.slice(0, 300)}`).toBe(403)
              const error = expectErrorShape(endpoint, answer, title)
              if (endpoint.surface === "inference") {
                expect(error.code).toBe(permission === "inference" ? "key_lacks_inference_permission" : "key_lacks_permission")
              } else {
                expect(error.code).toBe("key_lacks_permission")
                expect(error.scope).toBe(permission)
              }
              return
            }
            case "key with just the permission": {
              const answer = await send(endpoint, `Bearer ${await only(permission!)}`)
              expect(answer.status, `${title}: ${answer.text.slice(0, 300)}`).not.toBe(401)
              if (answer.status >= 400) expectErrorShape(endpoint, answer, title)
              if (answer.status === 403) {
                // The handler may refuse for its own reasons (a key can only grant what it holds),
                // never for lacking the permission the endpoint needs.
                expect(answer.json.error.scope, `${title}: ${answer.text}`).not.toBe(permission)
                expect(answer.json.error.code, `${title}: ${answer.text}`).not.toBe("key_lacks_inference_permission")
              }
              return
            }
            case "agent revoked":
            case "agent failed":
            case "agent expired":
            case "agent lapsed":
            case "plan ended":
            case "rental ended": {
              const refused = refusalOf(await worldOf(), c)
              return expectRefused(endpoint, await send(endpoint, `Bearer ${refused.secret}`), title, refused.status, refused.code)
            }
            case "agent in good standing":
              return expectPast(endpoint, await send(endpoint, `Bearer ${(await worldOf()).agents.active}`), title)
            case "scoped to a machine":
            case "scoped to a plan":
            case "scoped to a rental": {
              const w = await worldOf()
              const kind = c.slice("scoped to a ".length) as ScopeKind
              const rule = endpoint.scopeRule
              const target = typeof rule === "object" && endpoint.pathParams.length > 0 ? w.beyond[rule.within] : undefined
              const answer = await send(endpoint, `Bearer ${w.scoped[kind]}`, target)
              return rule === "any" ? expectPast(endpoint, answer, title) : expectRefused(endpoint, answer, title, 403, "key_scope_too_narrow")
            }
            case "public: no key":
            case "public: bad key": {
              const answer = await send(endpoint, c === "public: no key" ? undefined : "Bearer not-a-key")
              expect([401, 403], `${title}: ${answer.status} ${answer.text.slice(0, 300)}`).not.toContain(answer.status)
              if (answer.status >= 400) expectErrorShape(endpoint, answer, title)
              return
            }
          }
        })
      }
    }

    // The dataset file routes (http/FileRoutes.ts) are raw routes beside the HttpApi: the same
    // standing rule holds there, checked here by hand.
    const fileRoutes = [
      { method: "POST", path: "/datasets/ds_doesnotexist/items?name=a.txt", body: "a" },
      { method: "GET", path: "/datasets/ds_doesnotexist/items/item_doesnotexist/content", body: undefined }
    ] as const
    for (const route of fileRoutes) {
      for (const c of STANDING_REFUSALS) {
        it(`${route.method} ${route.path.split("?")[0]} [file route]: ${c}`, async () => {
          const refused = refusalOf(await worldOf(), c)
          const response = await platform.fetch(route.path, {
            method: route.method,
            headers: { authorization: `Bearer ${refused.secret}`, ...(route.body === undefined ? {} : { "content-type": "text/plain" }) },
            ...(route.body === undefined ? {} : { body: route.body })
          })
          const text = await response.text()
          expect([response.status, JSON.parse(text).error?.code], text.slice(0, 300)).toEqual([refused.status, refused.code])
        })
      }
    }
  })
