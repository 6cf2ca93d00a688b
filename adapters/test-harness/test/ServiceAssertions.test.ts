/**
 * Service assertions (core/src/agents/ServiceAssertions.ts; docs/agents.md "Service assertions"):
 * ES256 JWTs verified with jose. Each refusal the issue names (a replayed jti, a wrong aud,
 * exp - iat > 60 s, an unknown kid, a wrong algorithm, a tampered signature) and the others
 * (expired, an untrusted iss, iss !== sub, no jti), then the same through HTTP: the account
 * service's approvals API accepts the platform's signed calls and refuses each bad assertion with
 * 401 client_unauthorized; the platform publishes its JWKS.
 *
 * Bad tokens are made here by hand (WebCrypto) on purpose: jose would not make most of them.
 */
import { assert, describe, it } from "@effect/vitest"
import { AccountsConfig, AccountService, Approvals } from "@model-platform/core/accounts"
import {
  ApprovalsHttpClient,
  type AssertionRefused,
  generateSigningKeys,
  jtiOnceIn,
  type Jwks,
  parseJwks,
  type RefusalReason,
  sign,
  type SigningKeys,
  signingKeysFromJwk,
  SimulatedNetwork,
  verify
} from "@model-platform/core/agents"
import { ApiKeys, PermissionValues } from "@model-platform/core/keys"
import { base64url, RateLimitStore, sha256Hex } from "@model-platform/core/kernel"
import { AppRoutes, clockLayer, PlatformServices, ROUTER_CONFIG } from "@model-platform/core/http"
import { MachineClient } from "@model-platform/core/gateway"
import { Effect, Exit, Layer, ManagedRuntime, Redacted } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { generateKeyPairSync } from "node:crypto"
import { afterAll, beforeAll, expect, it as vit } from "vitest"
import { MemoryOutbox } from "../src/MemoryOutbox.ts"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { RateLimitStoreMemory } from "@model-platform/memory-stores/MemoryRateLimitStore"
import { movableClock } from "../src/MovableClock.ts"
import { makeSoftAuthenticator } from "../src/SoftAuthenticator.ts"
import { healthy, stubCatalogue } from "./gatewayStub.ts"

const ISS = "platform"
const AUD = "https://accounts.test/accounts/api/accounts/per_1/agent-approvals"

// ---- hand-made tokens -------------------------------------------------------------------------

const text = (value: unknown) => base64url(new TextEncoder().encode(JSON.stringify(value)))
const bytes = (s: string) => new TextEncoder().encode(s)

/** A JWS signed with `key` as ES256 (WebCrypto's ECDSA signature is JWS's r || s). */
const es256 = async (header: object, claims: object, key: CryptoKey) => {
  const input = `${text(header)}.${text(claims)}`
  const signature = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, bytes(input))
  return `${input}.${base64url(new Uint8Array(signature))}`
}

const hs256 = async (header: object, claims: object, secret: Uint8Array) => {
  const input = `${text(header)}.${text(claims)}`
  const key = await crypto.subtle.importKey("raw", secret as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
  return `${input}.${base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, bytes(input))))}`
}

const claimsAt = (nowMs: number, overrides: Record<string, unknown> = {}) => {
  const iat = Math.floor(nowMs / 1000)
  return { iss: ISS, sub: ISS, aud: AUD, iat, exp: iat + 60, jti: base64url(crypto.getRandomValues(new Uint8Array(16))), ...overrides }
}

// ---- verify -----------------------------------------------------------------------------------

const setup = Effect.gen(function*() {
  const keys = yield* generateSigningKeys
  const other = yield* generateSigningKeys
  const store = yield* RateLimitStore
  const trusted = new Map<string, Jwks>([[ISS, keys.publicJwks]])
  const check = (token: string, options: { audience?: string; now?: number; trustedMap?: ReadonlyMap<string, Jwks> } = {}) =>
    verify(token, {
      audience: options.audience ?? AUD,
      trusted: options.trustedMap ?? trusted,
      // A fresh JtiOnce per call, as another process would have, over the one shared store.
      jtiOnce: jtiOnceIn(store),
      now: options.now ?? Date.now()
    })
  return { keys, other, check }
})

const refusedWith = <A>(effect: Effect.Effect<A, AssertionRefused>) =>
  Effect.map(Effect.exit(effect), (exit): RefusalReason | "accepted" => {
    if (Exit.isSuccess(exit)) return "accepted"
    const failure = exit.cause.reasons.find((r) => r._tag === "Fail")
    if (failure === undefined) throw new Error(`not a refusal: ${exit.cause}`)
    return (failure.error as AssertionRefused).reason
  })

const run = <A, E>(effect: Effect.Effect<A, E, RateLimitStore>) => Effect.provide(effect, RateLimitStoreMemory)

describe("service assertions: verify", () => {
  it.effect("a signed assertion is accepted once: its header, claims and JWKS are the spec's", () =>
    run(Effect.gen(function*() {
      const { keys, check } = yield* setup
      const now = Date.now()
      const token = yield* sign(keys, { iss: ISS, aud: AUD, now })
      const [header, claims] = token.split(".").slice(0, 2).map((part) => JSON.parse(Buffer.from(part!, "base64url").toString()))
      assert.deepStrictEqual(header, { alg: "ES256", kid: keys.kid })
      assert.strictEqual(claims.iss, ISS)
      assert.strictEqual(claims.sub, ISS)
      assert.strictEqual(claims.aud, AUD)
      assert.strictEqual(claims.iat, Math.floor(now / 1000))
      assert.strictEqual(claims.exp, claims.iat + 60)
      assert.match(claims.jti, /^[A-Za-z0-9_-]{22}$/)
      assert.deepStrictEqual(keys.publicJwks.keys[0], { ...keys.publicJwk })
      assert.deepStrictEqual(
        { alg: keys.publicJwk.alg, use: keys.publicJwk.use, kid: keys.publicJwk.kid, d: keys.publicJwk.d },
        { alg: "ES256", use: "sig", kid: keys.kid, d: undefined }
      )
      const verified = yield* check(token)
      assert.deepStrictEqual(verified, { iss: ISS, jti: claims.jti, exp: claims.exp })
      // A replayed jti, as another process would see it through the shared store.
      assert.strictEqual(yield* refusedWith(check(token)), "replayed")
    })))

  it.effect("each bad assertion is refused with its reason", () =>
    run(Effect.gen(function*() {
      const { keys, other, check } = yield* setup
      const now = Date.now()
      const header = { alg: "ES256", kid: keys.kid }
      const forged = (claims: object, h: object = header, key = keys.privateKey) => Effect.promise(() => es256(h, claims, key))
      const reason = (token: string, options?: Parameters<typeof check>[1]) => refusedWith(check(token, options))

      // Accepted as made by hand (the cases below differ from it in one thing each).
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now))), "accepted")
      // A wrong aud: another endpoint, another host.
      assert.strictEqual(yield* reason(yield* sign(keys, { iss: ISS, aud: `${AUD}/apr_1`, now })), "wrong_audience")
      assert.strictEqual(yield* reason(yield* sign(keys, { iss: ISS, aud: AUD.replace("accounts.test", "evil.test"), now })), "wrong_audience")
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now, { aud: [AUD, "https://elsewhere.test/"] }))), "wrong_audience")
      // exp - iat > 60 s.
      const iat = Math.floor(now / 1000)
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now, { exp: iat + 61 }))), "lifetime_too_long")
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now, { exp: iat + 3600 }))), "lifetime_too_long")
      // An unknown kid: another key's, or none.
      assert.strictEqual(yield* reason(yield* sign(other, { iss: ISS, aud: AUD, now })), "unknown_kid")
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now), { alg: "ES256" })), "unknown_kid")
      // A wrong algorithm: HS256 (with the public key's x as the secret), none, ES384.
      const hmac = yield* Effect.promise(() => hs256({ alg: "HS256", kid: keys.kid }, claimsAt(now), bytes(keys.publicJwk.x!)))
      assert.strictEqual(yield* reason(hmac), "wrong_algorithm")
      assert.strictEqual(yield* reason(`${text({ alg: "none", kid: keys.kid })}.${text(claimsAt(now))}.`), "wrong_algorithm")
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now), { alg: "ES384", kid: keys.kid })), "wrong_algorithm")
      // A tampered signature: the payload changed under it, the signature changed, or another key's under our kid.
      const good = (yield* forged(claimsAt(now))).split(".")
      assert.strictEqual(yield* reason(`${good[0]}.${text(claimsAt(now))}.${good[2]}`), "bad_signature")
      const sig = Buffer.from(good[2]!, "base64url")
      sig[5] = sig[5]! ^ 1
      assert.strictEqual(yield* reason(`${good[0]}.${good[1]}.${sig.toString("base64url")}`), "bad_signature")
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now), header, other.privateKey)), "bad_signature")
      // Expired: beyond the few seconds of tolerance; within them still accepted.
      assert.strictEqual(yield* reason(yield* sign(keys, { iss: ISS, aud: AUD, now: now - 70_000 })), "expired")
      assert.strictEqual(yield* reason(yield* sign(keys, { iss: ISS, aud: AUD, now }), { now: now + 66_000 }), "expired")
      assert.strictEqual(yield* reason(yield* sign(keys, { iss: ISS, aud: AUD, now }), { now: now + 62_000 }), "accepted")
      // Issued in the future.
      assert.strictEqual(yield* reason(yield* sign(keys, { iss: ISS, aud: AUD, now: now + 30_000 })), "issued_in_future")
      // An untrusted iss (signed with a trusted key, or its own), and iss !== sub.
      assert.strictEqual(yield* reason(yield* sign(keys, { iss: "intruder", aud: AUD, now })), "untrusted_issuer")
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now, { iss: "intruder", sub: "intruder" }), { alg: "ES256", kid: other.kid }, other.privateKey)), "untrusted_issuer")
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now, { sub: "someone" }))), "issuer_not_subject")
      assert.strictEqual(yield* reason(yield* sign(keys, { iss: ISS, aud: AUD, now }), { trustedMap: new Map() }), "untrusted_issuer")
      // No jti, an empty one.
      const { jti: _, ...noJti } = claimsAt(now)
      assert.strictEqual(yield* reason(yield* forged(noJti)), "missing_jti")
      assert.strictEqual(yield* reason(yield* forged(claimsAt(now, { jti: "" }))), "missing_jti")
      // Not a JWT at all.
      assert.strictEqual(yield* reason("not.a.jwt"), "malformed")
      assert.strictEqual(yield* reason(""), "malformed")
      // A refused token spends nothing: the jti of the wrong-aud token below is still unused.
      const once = yield* sign(keys, { iss: ISS, aud: AUD, now })
      assert.strictEqual(yield* reason(once, { audience: `${AUD}/x` }), "wrong_audience")
      assert.strictEqual(yield* reason(once), "accepted")
      assert.strictEqual(yield* reason(once), "replayed")
    })))

  it.effect("PLATFORM_SIGNING_KEY: a P-256 private JWK; its kid is the RFC 7638 thumbprint; bad ones are refused without their value", () =>
    Effect.gen(function*() {
      const jwk = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" })
      const keys = yield* signingKeysFromJwk(Redacted.make(JSON.stringify(jwk)))
      // RFC 7638: SHA-256 of {"crv","kty","x","y"} in that order, base64url.
      const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y })
      const digest = new Uint8Array(yield* Effect.promise(() => crypto.subtle.digest("SHA-256", bytes(canonical))))
      assert.strictEqual(keys.kid, base64url(digest))
      assert.deepStrictEqual(keys.publicJwk, { kty: "EC", crv: "P-256", x: jwk.x!, y: jwk.y!, kid: keys.kid, alg: "ES256", use: "sig" })
      // The same key, another process: the same kid.
      assert.strictEqual((yield* signingKeysFromJwk(Redacted.make(JSON.stringify(jwk)))).kid, keys.kid)

      const other = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" })
      for (const bad of ["not json", "{}", JSON.stringify({ ...jwk, crv: "P-384" }), JSON.stringify({ ...jwk, x: other.x, y: other.y })]) {
        const exit = yield* Effect.exit(signingKeysFromJwk(Redacted.make(bad)))
        assert.isTrue(Exit.isFailure(exit), bad.slice(0, 20))
        assert.notInclude(String(exit), jwk.d!)
      }
      // PLATFORM_JWKS: public keys only.
      assert.deepStrictEqual(yield* parseJwks(JSON.stringify(keys.publicJwks)), keys.publicJwks)
      assert.isTrue(Exit.isFailure(yield* Effect.exit(parseJwks(JSON.stringify({ keys: [{ ...jwk, kid: "k" }] })))))
      assert.isTrue(Exit.isFailure(yield* Effect.exit(parseJwks(JSON.stringify({ keys: [] })))))
    }))
})

// ---- through HTTP -----------------------------------------------------------------------------

const ORIGIN = "http://platform.test"
const ACCOUNTS_URL = `${ORIGIN}/accounts`
const RP = { origin: ORIGIN, rpId: "platform.test" }
const CLIENT = { id: "platform", secret: "the-platform-client-secret" }

let handler: ((request: Request) => Promise<Response>) | undefined
/** Authorization headers the account service's approvals API received. */
const seen: Array<string> = []
const inProcessFetch = ((input: RequestInfo | URL, init?: RequestInit) => {
  const request = new Request(input, init)
  if (new URL(request.url).pathname.startsWith("/accounts/api/accounts/")) seen.push(request.headers.get("authorization") ?? "")
  return handler!(request)
}) as typeof fetch

const clock = movableClock()
let keys: SigningKeys
let runtime: ManagedRuntime.ManagedRuntime<any, any>
let dispose: () => Promise<void>

const start = (signing: SigningKeys) => {
  const machineClient = Layer.succeed(MachineClient, {
    models: () => Effect.succeed(["chat", "embed", "forecast"]),
    post: (_machine, path, body) => Effect.succeed(healthy(path, body as Record<string, unknown>))
  })
  const network = SimulatedNetwork.layer()
  const options = {
    agentApprovals: ApprovalsHttpClient.layer({
      accountsUrl: ACCOUNTS_URL,
      clientId: CLIENT.id,
      clientSecret: CLIENT.secret,
      signer: { iss: CLIENT.id, keys: signing },
      fetch: inProcessFetch
    }),
    network,
    machineClient,
    clock: clock.clock,
    serviceKeys: signing,
    requestUrlFromShell: true
  }
  const services = PlatformServices(stubCatalogue({ forecastCreditsPerRequest: 1 }), options).pipe(Layer.provideMerge(MemoryPlatformStores))
  const config = Layer.succeed(AccountsConfig, {
    accountsUrl: ACCOUNTS_URL,
    platformClient: { id: CLIENT.id, secretSha256: sha256Hex(CLIENT.secret) },
    trustedServices: [{ iss: CLIENT.id, jwks: signing.publicJwks }]
  })
  const accounts = Layer.mergeAll(AccountService.layer, Approvals.layer).pipe(
    Layer.provideMerge(Layer.mergeAll(MemoryOutbox.layer, network, config)),
    Layer.provideMerge(services)
  )
  return ManagedRuntime.make(accounts.pipe(Layer.provideMerge(clockLayer(options))))
}

beforeAll(async () => {
  keys = await Effect.runPromise(generateSigningKeys)
  runtime = start(keys)
  const context = await runtime.context()
  const web = HttpRouter.toWebHandler(
    AppRoutes.pipe(Layer.provideMerge(Layer.succeedContext(context)), Layer.provide(HttpServer.layerServices)),
    { disableLogger: true, routerConfig: ROUTER_CONFIG }
  )
  handler = web.handler
  dispose = web.dispose
})
afterAll(async () => {
  await dispose?.()
  await runtime?.dispose()
})

const call = async (url: string, authorization: string | undefined) => {
  const response = await handler!(new Request(url, { headers: authorization === undefined ? {} : { authorization } }))
  const body = await response.text()
  return { status: response.status, json: body === "" ? undefined : JSON.parse(body), headers: response.headers }
}

/** A confirmed owner with a platform key and the person id the account service knows them by. */
const owner = (email: string) =>
  runtime.runPromise(Effect.gen(function*() {
    const auth = yield* makeSoftAuthenticator
    const accounts = yield* AccountService
    const begun = yield* accounts.beginSignUp({ email, clientAddress: "10.0.0.1", ...RP })
    yield* accounts.finishSignUp({ flow: begun.flow, response: yield* auth.create(begun.options, ORIGIN), ...RP })
    const mails = yield* (yield* MemoryOutbox).to(email)
    const token = mails.at(-1)!.text.match(/confirm\?token=([A-Za-z0-9_-]+)/)![1]!
    const confirmed = yield* accounts.confirmEmail({ token })
    const key = yield* (yield* ApiKeys).issue(confirmed.person.account_id!, { name: "owner", permissions: PermissionValues })
    return { sub: confirmed.person.person_id, secret: key.secret }
  }) as Effect.Effect<{ sub: string; secret: string }, unknown, never>)

describe("service assertions over HTTP", () => {
  vit("the platform publishes its JWKS (no auth, cached a few minutes)", async () => {
    const answer = await call(`${ORIGIN}/.well-known/jwks.json`, undefined)
    expect(answer.status).toBe(200)
    expect(answer.json).toEqual({ keys: [keys.publicJwk] })
    expect(answer.json.keys[0].d).toBeUndefined()
    expect(answer.headers.get("cache-control")).toBe("public, max-age=300")
  })

  vit("the platform signs its calls; the approvals API accepts a valid assertion and refuses each bad one with 401 client_unauthorized", async () => {
    const { sub, secret } = await owner("assertions-owner@example.test")
    const proposed = await handler!(new Request(`${ORIGIN}/agents`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "signed-bot" })
    }))
    const body = await proposed.json() as { approve_url: string }
    expect(proposed.status, JSON.stringify(body)).toBe(200)
    // The platform's call carried an assertion, not its Basic credentials.
    expect(seen.length).toBeGreaterThan(0)
    for (const authorization of seen) expect(authorization).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/)

    const approvalId = body.approve_url.split("/").pop()!
    const url = `${ACCOUNTS_URL}/api/accounts/${sub}/agent-approvals/${approvalId}`
    const now = clock.now()
    const bearer = async (token: string | Promise<string>) => call(url, `Bearer ${await token}`)
    const signed = (aud: string, at = now, signing = keys, iss = CLIENT.id) => Effect.runPromise(sign(signing, { iss, aud, now: at }))

    const valid = await signed(url)
    const accepted = await bearer(valid)
    expect([accepted.status, accepted.json]).toEqual([200, { state: "pending" }])
    // Basic still works beside it.
    const basic = `Basic ${btoa(`${CLIENT.id}:${CLIENT.secret}`)}`
    expect((await call(url, basic)).status).toBe(200)

    const other = await Effect.runPromise(generateSigningKeys)
    const header = { alg: "ES256", kid: keys.kid }
    const claims = (overrides: Record<string, unknown> = {}) => ({ ...claimsAt(now, { aud: url }), ...overrides })
    const iat = Math.floor(now / 1000)
    const good = (await es256(header, claims(), keys.privateKey)).split(".")
    // Each bad assertion, and the reason the refusal names.
    const bad: ReadonlyArray<readonly [string, RefusalReason, string | Promise<string>]> = [
      ["replayed", "replayed", valid],
      ["wrong aud (another endpoint)", "wrong_audience", signed(`${ACCOUNTS_URL}/api/accounts/${sub}/agent-approvals`)],
      ["wrong aud (another host)", "wrong_audience", signed(url.replace("platform.test", "other.test"))],
      ["exp - iat > 60", "lifetime_too_long", es256(header, claims({ exp: iat + 61 }), keys.privateKey)],
      ["unknown kid", "unknown_kid", signed(url, now, other)],
      ["HS256", "wrong_algorithm", hs256({ alg: "HS256", kid: keys.kid }, claims(), bytes(keys.publicJwk.x!))],
      ["none", "wrong_algorithm", `${text({ alg: "none", kid: keys.kid })}.${text(claims())}.`],
      ["tampered", "bad_signature", `${good[0]}.${text(claims({ sub: CLIENT.id }))}.${good[2]}`],
      ["expired", "expired", signed(url, now - 120_000)],
      ["untrusted iss", "untrusted_issuer", signed(url, now, keys, "intruder")],
      ["iss !== sub", "issuer_not_subject", es256(header, claims({ sub: "someone" }), keys.privateKey)]
    ]
    for (const [what, reason, token] of bad) {
      const refused = await bearer(token)
      expect([refused.status, refused.json?.error?.code], what).toEqual([401, "client_unauthorized"])
      expect(refused.json.error.message, what).toContain(`(${reason})`)
    }
    expect((await call(url, "Bearer ")).status).toBe(401)
    expect((await call(url, `Basic ${btoa(`${CLIENT.id}:wrong`)}`)).status).toBe(401)
    expect((await call(url, undefined)).status).toBe(401)
  })
})
