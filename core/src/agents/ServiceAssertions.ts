/**
 * Service assertions (docs/agents.md "Service assertions"): short-lived JWTs one service signs to
 * call another, verified with `jose` (never by hand).
 *
 * - Signed ES256 with the caller's key; header `kid` = the RFC 7638 thumbprint of its public JWK,
 *   published in the caller's JWKS (the platform: GET /.well-known/jwks.json).
 * - Claims: `iss` = `sub` = the calling service, `aud` = the full URL of the endpoint called,
 *   `iat` = now, `exp` = iat + 60, `jti` = 128 random bits (base64url), used once.
 *
 * The signing key comes from PLATFORM_SIGNING_KEY (a private JWK, Redacted); a verifier trusts, per
 * issuer, a JWKS it is configured with. Key material and tokens are never logged or put in errors.
 */
import { Config, Context, Effect, Option, Redacted, Schema } from "effect"
import * as Jose from "jose"
import { base64url } from "../kernel/Ids.ts"
import { RateLimitStore, windowStartOf } from "../kernel/RateLimitStore.ts"

export const ASSERTION_ALG = "ES256"
/** The longest lifetime a verifier accepts (exp - iat), and the one `sign` gives. */
export const MAX_LIFETIME_SECONDS = 60
/** How far the clocks of two services may disagree. */
export const CLOCK_TOLERANCE_SECONDS = 5
/** Longer than any assertion we make: refused before it is parsed. */
const MAX_TOKEN_LENGTH = 4_096
const MAX_JTI_LENGTH = 128

export type Jwk = Jose.JWK
export interface Jwks {
  readonly keys: ReadonlyArray<Jwk>
}

/** A service's signing key: the private key (never exported) and its published public JWK. */
export interface SigningKeys {
  readonly kid: string
  readonly privateKey: CryptoKey
  /** {kty, crv, x, y, kid, alg, use}: what the JWKS publishes. */
  readonly publicJwk: Jwk
  readonly publicJwks: Jwks
}

/** Who signs and with which key: the platform, as its client id at the account service. */
export interface ServiceSigner {
  readonly iss: string
  readonly keys: SigningKeys
}

/** A trusted caller: its name (`iss`) and the JWKS its assertions are verified with. */
export interface TrustedService {
  readonly iss: string
  readonly jwks: Jwks
}

/** The key material could not be used (never holds any of it). */
export class ServiceKeyError extends Schema.TaggedError<ServiceKeyError>()("ServiceKeyError", {
  message: Schema.String
}) {}

export const RefusalReasons = [
  "malformed",
  "wrong_algorithm",
  "unknown_kid",
  "bad_signature",
  "wrong_audience",
  "untrusted_issuer",
  "issuer_not_subject",
  "lifetime_too_long",
  "expired",
  "issued_in_future",
  "missing_jti",
  "replayed"
] as const
export type RefusalReason = (typeof RefusalReasons)[number]

/** An assertion refused, and why (the reason only: never the token). */
export class AssertionRefused extends Schema.TaggedError<AssertionRefused>()("AssertionRefused", {
  reason: Schema.Literals(RefusalReasons)
}) {}

const refuse = (reason: RefusalReason) => new AssertionRefused({ reason })

// ---- keys -------------------------------------------------------------------------------------

const keysOf = (privateKey: CryptoKey, publicParts: { kty: string; crv: string; x: string; y: string }) =>
  Effect.map(
    Effect.promise(() => Jose.calculateJwkThumbprint(publicParts, "sha256")),
    (kid): SigningKeys => {
      const publicJwk: Jwk = { ...publicParts, kid, alg: ASSERTION_ALG, use: "sig" }
      return { kid, privateKey, publicJwk, publicJwks: { keys: [publicJwk] } }
    }
  )

/** A fresh key for this process (PLATFORM_SIGNING_KEY unset). */
export const generateSigningKeys: Effect.Effect<SigningKeys> = Effect.gen(function*() {
  const pair = yield* Effect.promise(() => Jose.generateKeyPair(ASSERTION_ALG))
  const { kty, crv, x, y } = yield* Effect.promise(() => Jose.exportJWK(pair.publicKey))
  return yield* keysOf(pair.privateKey, { kty: kty!, crv: crv!, x: x!, y: y! })
})

/**
 * The key of PLATFORM_SIGNING_KEY: a P-256 private JWK as JSON ({kty: "EC", crv: "P-256", x, y, d}).
 * A probe is signed and verified so a key whose public part does not match fails here, at start.
 */
export const signingKeysFromJwk = (secret: Redacted.Redacted<string>): Effect.Effect<SigningKeys, ServiceKeyError> =>
  Effect.gen(function*() {
    const invalid = (why: string) =>
      new ServiceKeyError({ message: `PLATFORM_SIGNING_KEY ${why}: it must be a P-256 private JWK as JSON ({"kty":"EC","crv":"P-256","x","y","d"})` })
    const jwk = yield* Effect.try({ try: () => JSON.parse(Redacted.value(secret)) as unknown, catch: () => invalid("is not JSON") })
    if (typeof jwk !== "object" || jwk === null) return yield* invalid("is not a JSON object")
    const { kty, crv, x, y, d } = jwk as Record<string, unknown>
    if (kty !== "EC" || crv !== "P-256") return yield* invalid("is not an EC P-256 key")
    if (typeof x !== "string" || typeof y !== "string" || typeof d !== "string") return yield* invalid("lacks x, y or d")
    const privateKey = yield* Effect.tryPromise({
      try: () => Jose.importJWK({ kty, crv, x, y, d }, ASSERTION_ALG) as Promise<CryptoKey>,
      catch: () => invalid("cannot be imported")
    })
    const keys = yield* keysOf(privateKey, { kty, crv, x, y })
    const probe = yield* sign(keys, { iss: "probe", aud: "urn:probe", now: Date.now() })
    yield* Effect.tryPromise({
      try: () => Jose.jwtVerify(probe, Jose.createLocalJWKSet(keys.publicJwks as Jose.JSONWebKeySet), { algorithms: [ASSERTION_ALG] }),
      catch: () => invalid("has a public part (x, y) that does not match its private part (d)")
    })
    return keys
  })

/** A JWKS from configuration (PLATFORM_JWKS): `{keys: [...]}` of EC P-256 public keys with a kid. */
export const parseJwks = (json: string, name = "PLATFORM_JWKS"): Effect.Effect<Jwks, ServiceKeyError> =>
  Effect.gen(function*() {
    const invalid = (why: string) => new ServiceKeyError({ message: `${name} ${why}: it must be a JWKS, {"keys":[{"kty":"EC","crv":"P-256","x","y","kid"}]}` })
    const value = yield* Effect.try({ try: () => JSON.parse(json) as unknown, catch: () => invalid("is not JSON") })
    const keys = (value as { keys?: unknown } | null)?.keys
    if (!Array.isArray(keys) || keys.length === 0) return yield* invalid("has no keys")
    for (const key of keys as ReadonlyArray<Record<string, unknown>>) {
      if (key?.["kty"] !== "EC" || key["crv"] !== "P-256" || typeof key["kid"] !== "string") return yield* invalid("holds a key that is not EC P-256 with a kid")
      if ("d" in key) return yield* invalid("holds a private key")
    }
    return { keys: keys as ReadonlyArray<Jwk> }
  })

// ---- configuration ----------------------------------------------------------------------------

/** PLATFORM_SIGNING_KEY (Redacted) and PLATFORM_JWKS, both optional (docs/configuration.md). */
export const ServiceAssertionConfig = Config.all({
  signingKey: Config.option(Config.Redacted("PLATFORM_SIGNING_KEY")),
  jwks: Config.option(Config.String("PLATFORM_JWKS"))
}).pipe(Config.map(({ jwks, signingKey }) => ({
  // Empty is unset (a stack parameter left at its default).
  signingKey: Option.filter(signingKey, (key) => Redacted.value(key) !== ""),
  jwks: Option.filter(jwks, (text) => text !== "")
})))

/** The configured signing key, if any. */
export const configuredSigningKeys = (
  signingKey: Option.Option<Redacted.Redacted<string>>
): Effect.Effect<SigningKeys | undefined, ServiceKeyError> =>
  Option.isNone(signingKey) ? Effect.succeed(undefined) : signingKeysFromJwk(signingKey.value)

/**
 * Whom the account service trusts: the platform (`iss`) with PLATFORM_JWKS when configured (a
 * platform elsewhere, or several keys while one is rotated), else the public part of the key
 * this process signs with; nobody when neither is known.
 */
export const trustedPlatform = (
  iss: string,
  keys: SigningKeys | undefined,
  jwks: Option.Option<string>
): Effect.Effect<ReadonlyArray<TrustedService>, ServiceKeyError> =>
  Option.match(jwks, {
    onSome: (json) => Effect.map(parseJwks(json), (parsed) => [{ iss, jwks: parsed }]),
    onNone: () => Effect.succeed(keys === undefined ? [] : [{ iss, jwks: keys.publicJwks }])
  })

/** The JWKS the platform publishes at /.well-known/jwks.json: its signing key's, else none. */
export const PublishedJwks = Context.Reference<Jwks>("@model-platform/core/agents/PublishedJwks", {
  defaultValue: () => ({ keys: [] })
})

// ---- sign -------------------------------------------------------------------------------------

/** An assertion from `iss` for a call to `aud` (the full URL), at `now` (epoch ms). */
export const sign = (keys: SigningKeys, claims: { readonly iss: string; readonly aud: string; readonly now: number }): Effect.Effect<string> =>
  Effect.promise(() => {
    const iat = Math.floor(claims.now / 1000)
    return new Jose.SignJWT({ jti: base64url(crypto.getRandomValues(new Uint8Array(16))) })
      .setProtectedHeader({ alg: ASSERTION_ALG, kid: keys.kid })
      .setIssuer(claims.iss)
      .setSubject(claims.iss)
      .setAudience(claims.aud)
      .setIssuedAt(iat)
      .setExpirationTime(iat + MAX_LIFETIME_SECONDS)
      .sign(keys.privateKey)
  })

// ---- verify -----------------------------------------------------------------------------------

/** Records a jti's use: true the first time (any process), false after. */
export type JtiOnce = (iss: string, jti: string, exp: number) => Effect.Effect<boolean>

/**
 * Single use of a jti across processes, in the RateLimitStore every shell shares: one counter per
 * `jti:<iss>:<jti>`, in the minute window that holds `exp` (every process computes the same one
 * from the token). The first hit answers 1 (accepted), any later one more (a replay). Why a window
 * suffices: the token is refused once `exp` (+ CLOCK_TOLERANCE_SECONDS) has passed, and the
 * stores keep a counter until at least its window's end (past `exp`) plus 5 minutes (their
 * RETAIN_MS), so the counter outlives every moment the token could still be accepted.
 */
export const jtiOnceIn = (store: RateLimitStore["Service"]): JtiOnce => (iss, jti, exp) => {
  const windowMs = 60_000
  const windowStart = windowStartOf((Math.floor(exp) + CLOCK_TOLERANCE_SECONDS) * 1000, windowMs)
  return Effect.map(store.hit(`jti:${iss}:${jti}`, windowStart, windowMs), (count) => count === 1)
}

/** jtiOnceIn over the RateLimitStore in context. */
export const jtiOnce: Effect.Effect<JtiOnce, never, RateLimitStore> = Effect.map(RateLimitStore, jtiOnceIn)

export interface VerifyOptions {
  /** The full URL of the endpoint called, as this service is known at. */
  readonly audience: string
  /** Trusted issuers and their JWKS. */
  readonly trusted: ReadonlyMap<string, Jwks>
  readonly jtiOnce: JtiOnce
  /** Epoch ms. */
  readonly now: number
}

export interface VerifiedAssertion {
  readonly iss: string
  readonly jti: string
  readonly exp: number
}

// One key resolver per JWKS (jose imports each key once per resolver).
const resolvers = new WeakMap<Jwks, ReturnType<typeof Jose.createLocalJWKSet>>()
const resolverOf = (jwks: Jwks) => {
  let found = resolvers.get(jwks)
  if (found === undefined) {
    found = Jose.createLocalJWKSet(jwks as Jose.JSONWebKeySet)
    resolvers.set(jwks, found)
  }
  return found
}

/** What jose's refusal means here. */
const reasonOf = (error: unknown): RefusalReason => {
  if (error instanceof Jose.errors.JWTExpired) return "expired"
  if (error instanceof Jose.errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case "aud":
        return "wrong_audience"
      case "iss":
        return "untrusted_issuer"
      case "sub":
        return "issuer_not_subject"
      case "jti":
        return "missing_jti"
      case "iat":
        return error.reason === "check_failed" ? "issued_in_future" : "malformed"
      default:
        return "malformed"
    }
  }
  if (error instanceof Jose.errors.JWSSignatureVerificationFailed) return "bad_signature"
  if (error instanceof Jose.errors.JOSEAlgNotAllowed) return "wrong_algorithm"
  if (error instanceof Jose.errors.JWKSNoMatchingKey) return "unknown_kid"
  return "malformed"
}

/**
 * Verifies an assertion: ES256 only (so never `none` nor a MAC), a kid of the issuer's trusted
 * JWKS, the signature, `aud` exactly `audience`, `iss` trusted and equal to `sub`, `exp - iat` at
 * most 60 s, not expired nor issued in the future (CLOCK_TOLERANCE_SECONDS either way), a `jti`,
 * then that jti's first use (recorded last, so a refused token spends nothing).
 */
export const verify = (token: string, options: VerifyOptions): Effect.Effect<VerifiedAssertion, AssertionRefused> =>
  Effect.gen(function*() {
    if (token.length > MAX_TOKEN_LENGTH) return yield* refuse("malformed")
    // Read before the signature is checked, only to choose the key: jwtVerify then checks both.
    const header = yield* Effect.try({ try: () => Jose.decodeProtectedHeader(token), catch: () => refuse("malformed") })
    if (header.alg !== ASSERTION_ALG) return yield* refuse("wrong_algorithm")
    const unverified = yield* Effect.try({ try: () => Jose.decodeJwt(token), catch: () => refuse("malformed") })
    const iss = unverified.iss
    const jwks = typeof iss === "string" ? options.trusted.get(iss) : undefined
    if (iss === undefined || jwks === undefined) return yield* refuse("untrusted_issuer")
    // A kid is required: without one jose would try the issuer's only key.
    if (typeof header.kid !== "string" || !jwks.keys.some((key) => key.kid === header.kid)) return yield* refuse("unknown_kid")

    const { payload } = yield* Effect.tryPromise({
      try: () =>
        Jose.jwtVerify(token, resolverOf(jwks), {
          algorithms: [ASSERTION_ALG],
          issuer: iss,
          subject: iss,
          audience: options.audience,
          currentDate: new Date(options.now),
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ["iss", "sub", "aud", "iat", "exp", "jti"]
        }),
      catch: reasonOf
    }).pipe(Effect.mapError(refuse))

    // One audience, exactly: a token for several endpoints is not one of ours.
    if (payload.aud !== options.audience) return yield* refuse("wrong_audience")
    const { iat, exp, jti } = payload
    if (typeof iat !== "number" || typeof exp !== "number") return yield* refuse("malformed")
    if (exp - iat > MAX_LIFETIME_SECONDS) return yield* refuse("lifetime_too_long")
    if (iat > options.now / 1000 + CLOCK_TOLERANCE_SECONDS) return yield* refuse("issued_in_future")
    if (typeof jti !== "string" || jti.length === 0 || jti.length > MAX_JTI_LENGTH) return yield* refuse("missing_jti")
    if (!(yield* options.jtiOnce(iss, jti, exp))) return yield* refuse("replayed")
    return { iss, jti, exp }
  })

/** A trust list as verify takes it. */
export const trustedMap = (services: ReadonlyArray<TrustedService> | undefined): ReadonlyMap<string, Jwks> =>
  new Map((services ?? []).map((service) => [service.iss, service.jwks]))
