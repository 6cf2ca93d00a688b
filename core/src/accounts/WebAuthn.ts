/**
 * The WebAuthn side of the ceremonies (docs/accounts.md "Ceremonies"): options and verification by
 * @simplewebauthn/server, and the flows that carry a challenge from the options to the browser's
 * answer. A flow is a one-time token (purpose webauthn_challenge) whose data holds the challenge
 * and what the ceremony needs back; its token is handed to the route, its hash kept, and it is
 * consumed by the finish whatever the outcome, so an answer can never be replayed.
 */
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server"
import { Clock, Effect, Schema } from "effect"
import { base64url, randomBytes } from "../kernel/Ids.ts"
import type { PeopleStore } from "./PeopleStore.ts"
import * as Time from "../kernel/Time.ts"
import { type AccountError, accountError } from "./AccountErrors.ts"
import type { BegunCeremony, RelyingParty } from "./AccountTypes.ts"
import { hashToken, type PasskeyRecord } from "./Records.ts"

/** How long a begun ceremony may take (the browser's own timeout is FLOW_TTL_MS too). */
export const FLOW_TTL_MS = 5 * 60_000
export const RP_NAME = "Model Platform"

/** What a flow remembers between begin and finish. */
export const FlowData = Schema.Struct({
  kind: Schema.Literals(["sign_up", "sign_in", "add_passkey", "recovery", "approve", "claim"]),
  challenge: Schema.String,
  /** sign_up: the email; add_passkey and recovery: the person id; sign_in: ""; approve: the approval id; claim: the claim link's token hash. */
  subject: Schema.String,
  /** sign_up: the new person's id (the WebAuthn user handle); recovery: the expiry of the link; approve and claim: the person id. */
  extra: Schema.String
})
export type FlowData = typeof FlowData.Type
const FlowJson = Schema.fromJsonString(FlowData)

/** A new random token (256 bits, base64url): flows, sessions, links. */
export const newToken: Effect.Effect<string> = Effect.map(randomBytes(32), base64url)

const toOptions = (options: object) => options as unknown as BegunCeremony["options"]

/**
 * @simplewebauthn/server and what it brings (X.509, ASN.1: about 300 KB), imported at the first
 * ceremony rather than at start: only the account service uses it, and a Lambda cold start
 * compiles whatever is imported up front (docs/lambda.md "Cold start").
 */
let simpleWebAuthn: Promise<typeof import("@simplewebauthn/server")> | undefined
const webAuthn = () => (simpleWebAuthn ??= import("@simplewebauthn/server"))

/** Issues a flow for `data` and answers it with the browser's options. */
export const beginFlow = Effect.fnUntraced(function*(
  people: PeopleStore["Service"],
  data: FlowData,
  options: object
) {
  const flow = yield* newToken
  const now = yield* Clock.currentTimeMillis
  const expires_at = Time.toTimestamp(now + FLOW_TTL_MS)
  yield* people.issueToken({
    token_hash: hashToken(flow),
    purpose: "webauthn_challenge",
    subject: "",
    data: Schema.encodeSync(FlowJson)(data),
    created_at: Time.toTimestamp(now),
    not_before: Time.toTimestamp(now),
    expires_at,
    used_at: null
  })
  return { flow, options: toOptions(options), expires_at } satisfies BegunCeremony
})

/** Consumes a flow of `kind`: its data, or invalid_flow (unknown, replayed, expired, another kind). */
export const consumeFlow = Effect.fnUntraced(function*(
  people: PeopleStore["Service"],
  flow: string,
  kind: FlowData["kind"]
) {
  const refused = accountError("invalid_flow", "This sign-in or sign-up step expired or was already used; start again.")
  if (flow.length === 0 || flow.length > 256) return yield* refused
  const consumed = yield* people.consumeToken(hashToken(flow), "webauthn_challenge", yield* Time.now)
  if (consumed._tag !== "Consumed") return yield* refused
  const data = yield* Schema.decodeUnknownEffect(FlowJson)(consumed.token.data).pipe(Effect.orDie)
  if (data.kind !== kind) return yield* refused
  return data
})

const failed = (message: string) => accountError("verification_failed", message)

/** Options to create a passkey for `userName` (resident key required: sign-in is discoverable). */
export const registrationOptions = (input: {
  readonly rpId: string
  readonly userId: string
  readonly userName: string
  readonly exclude: ReadonlyArray<PasskeyRecord>
}) =>
  Effect.tryPromise({
    try: async () =>
      (await webAuthn()).generateRegistrationOptions({
        rpName: RP_NAME,
        rpID: input.rpId,
        userName: input.userName,
        userID: new TextEncoder().encode(input.userId),
        timeout: FLOW_TTL_MS,
        attestationType: "none",
        excludeCredentials: input.exclude.map((p) => ({ id: p.credential_id, transports: [...p.transports] })),
        authenticatorSelection: { residentKey: "required", userVerification: "preferred" }
      }),
    catch: (cause) => cause
  }).pipe(Effect.orDie)

/** Options to sign in with any passkey of this rpID (no allowCredentials: discoverable). */
export const authenticationOptions = (rpId: string) =>
  Effect.tryPromise({
    try: async () => (await webAuthn()).generateAuthenticationOptions({ rpID: rpId, timeout: FLOW_TTL_MS, userVerification: "preferred" }),
    catch: (cause) => cause
  }).pipe(Effect.orDie)

/** Options to approve with one of `passkeys` (a person's own), the person verified (PIN, biometrics). */
export const approvalOptions = (rpId: string, passkeys: ReadonlyArray<PasskeyRecord>) =>
  Effect.tryPromise({
    try: async () =>
      (await webAuthn()).generateAuthenticationOptions({
        rpID: rpId,
        timeout: FLOW_TTL_MS,
        userVerification: "required",
        allowCredentials: passkeys.map((p) => ({ id: p.credential_id, transports: [...p.transports] as Array<never> }))
      }),
    catch: (cause) => cause
  }).pipe(Effect.orDie)

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** The new credential of a verified registration, as the store keeps it (without person and name). */
export interface NewCredential {
  readonly credential_id: string
  readonly public_key: string
  readonly counter: number
  readonly transports: ReadonlyArray<string>
}

/** Verifies the browser's registration answer for `challenge` at `rp`. */
export const verifyRegistration = (
  response: unknown,
  challenge: string,
  rp: RelyingParty
): Effect.Effect<NewCredential, AccountError> =>
  Effect.gen(function*() {
    if (!isObject(response) || !isObject(response["response"])) return yield* failed("The passkey answer is malformed.")
    const verified = yield* Effect.tryPromise({
      try: async () =>
        (await webAuthn()).verifyRegistrationResponse({
          response: response as unknown as RegistrationResponseJSON,
          expectedChallenge: challenge,
          expectedOrigin: rp.origin,
          expectedRPID: rp.rpId,
          requireUserVerification: false
        }),
      catch: (cause) => failed(`The passkey could not be verified: ${messageOf(cause)}`)
    })
    if (!verified.verified) return yield* failed("The passkey could not be verified.")
    const { credential } = verified.registrationInfo
    const transports = Array.isArray((response["response"] as Record<string, unknown>)["transports"])
      ? ((response["response"] as Record<string, unknown>)["transports"] as Array<unknown>).filter(
        (t): t is string => typeof t === "string" && t.length <= 32
      ).slice(0, 8)
      : []
    return {
      credential_id: credential.id,
      public_key: base64url(credential.publicKey),
      counter: credential.counter,
      transports
    }
  })

/** The credential id an authentication answer names (before verifying it), or verification_failed. */
export const assertionCredentialId = (response: unknown): Effect.Effect<string, AccountError> =>
  isObject(response) && typeof response["id"] === "string" && response["id"].length > 0 && response["id"].length <= 1024
    ? Effect.succeed(response["id"])
    : failed("The passkey answer is malformed.")

/** Verifies the browser's authentication answer against the stored passkey; answers the new counter. */
export const verifyAuthentication = (
  response: unknown,
  challenge: string,
  rp: RelyingParty,
  passkey: PasskeyRecord,
  requireUserVerification = false
): Effect.Effect<number, AccountError> =>
  Effect.gen(function*() {
    if (!isObject(response) || !isObject(response["response"])) return yield* failed("The passkey answer is malformed.")
    const verified = yield* Effect.tryPromise({
      try: async () =>
        (await webAuthn()).verifyAuthenticationResponse({
          response: response as unknown as AuthenticationResponseJSON,
          expectedChallenge: challenge,
          expectedOrigin: rp.origin,
          expectedRPID: rp.rpId,
          credential: {
            id: passkey.credential_id,
            publicKey: fromBase64url(passkey.public_key),
            counter: passkey.counter,
            transports: [...passkey.transports] as Array<never>
          },
          requireUserVerification
        }),
      catch: (cause) => failed(`The passkey could not be verified: ${messageOf(cause)}`)
    })
    if (!verified.verified) return yield* failed("The passkey could not be verified.")
    return verified.authenticationInfo.newCounter
  })

const messageOf = (cause: unknown): string =>
  (cause instanceof Error ? cause.message : String(cause)).slice(0, 200)

/** base64url (no padding) to bytes. */
export const fromBase64url = (text: string): Uint8Array<ArrayBuffer> => {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/")
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4))
  return Uint8Array.from(binary, (c) => c.charCodeAt(0))
}
