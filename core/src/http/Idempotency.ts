/**
 * The Idempotency-Key mechanism (as Stripe's): any write endpoint opts in with
 * `.middleware(Idempotency)`. The same key with the same request, from the same API key, replays
 * the first response; with another request or from another API key it is a 409. The record is
 * claimed before the write runs, so two concurrent requests with one key never both run it. Only
 * completed writes are kept: a request that failed (an error response or a crash) releases its
 * claim, and the client may retry with the same key. A kept response is sealed under the caller's
 * bearer secret (IdempotencySeal.ts), and a record is kept 24 hours (IdempotencyStore.ts).
 */
import { Effect, Exit, Layer, Redacted } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { hashSecret } from "../keys/Keys.ts"
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "../kernel/Limits.ts"
import { IdempotencyStore } from "./IdempotencyStore.ts"
import { textProblem } from "../kernel/Text.ts"
import * as Time from "../kernel/Time.ts"
import { seal, unseal } from "./IdempotencySeal.ts"
import { CurrentCaller } from "./Security.ts"

export const IDEMPOTENCY_HEADER = "idempotency-key"
export const REPLAYED_HEADER = "idempotent-replayed"
/**
 * A claim with no response after this long belongs to a process that died mid-request (no code
 * ran to release it); a new request under the key may take it over.
 */
export const ABANDONED_CLAIM_MS = 5 * 60 * 1000

export class Idempotency extends HttpApiMiddleware.Service<Idempotency, { requires: CurrentCaller }>()(
  "@model-platform/core/http/Idempotency",
  { error: [Errors.BadRequest, Errors.Conflict] }
) {
  static readonly layer = Layer.effect(
    Idempotency,
    Effect.gen(function*() {
      const store = yield* IdempotencyStore
      return Idempotency.of(Effect.fnUntraced(function*(httpEffect) {
        const request = yield* HttpServerRequest.HttpServerRequest
        const key = request.headers[IDEMPOTENCY_HEADER]
        if (key === undefined) return yield* httpEffect
        if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
          return yield* Errors.badRequest(
            "invalid_request",
            `The Idempotency-Key header must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`
          )
        }
        // The key is stored: the same text rule as every other string a client sends.
        const problem = textProblem(key)
        if (problem !== undefined) {
          return yield* Errors.badRequest("invalid_request", `header "Idempotency-Key": ${problem}.`)
        }
        const caller = yield* CurrentCaller
        // The bearer secret as Authentication read it: the one key that can open the kept answer.
        const secret = Redacted.value(yield* HttpApiBuilder.securityDecode(HttpApiSecurity.bearer)).trim()
        const body = yield* Effect.orElseSucceed(request.text, () => "")
        // The calling key is part of the request: another key of the account cannot open the
        // answer (it may hold a secret made for this key), so its replay is a conflict.
        const fingerprint = yield* hashSecret(`${caller.key.id}\n${request.method} ${request.url}\n${body}`)
        const scope = caller.account.id
        const claimKey = Effect.flatMap(Time.now, (created_at) => store.claim({ scope, key, fingerprint, created_at }))
        let claim = yield* claimKey
        if (claim._tag === "Exists" && claim.record.response === undefined) {
          const age = (yield* Effect.clockWith((clock) => clock.currentTimeMillis)) - Date.parse(claim.record.created_at)
          if (age > ABANDONED_CLAIM_MS) {
            yield* store.release(scope, key)
            claim = yield* claimKey
          }
        }
        if (claim._tag === "Exists") {
          const { record } = claim
          if (record.fingerprint !== fingerprint) {
            return yield* Errors.conflict(
              "idempotency_key_reused",
              "This Idempotency-Key was used with another request or by another API key; use a new key for a new request."
            )
          }
          if (record.response === undefined) {
            return yield* Errors.conflict(
              "idempotency_request_in_progress",
              "A request with this Idempotency-Key is still running; retry when it has finished."
            )
          }
          const answer = yield* unseal(secret, { scope, key, fingerprint }, record.response.body)
          // Same key, same fingerprint: only a record altered in the store does not open.
          if (answer === undefined) return yield* Effect.die(new Error("Idempotency: a kept response does not open"))
          return HttpServerResponse.text(answer, {
            status: record.response.status,
            contentType: "application/json",
            headers: { [REPLAYED_HEADER]: "true" }
          })
        }
        // An interrupted request (client gone, Lambda deadline) releases its claim too.
        const exit = yield* Effect.exit(Effect.onInterrupt(httpEffect, () => store.release(scope, key)))
        const kept = Exit.isSuccess(exit) ? keptResponse(exit.value) : undefined
        yield* kept === undefined
          ? store.release(scope, key)
          : Effect.flatMap(
            seal(secret, { scope, key, fingerprint }, kept.body),
            (sealed) => store.complete(scope, key, { status: kept.status, body: sealed })
          )
        return yield* exit
      }))
    })
  )
}

/** The response to keep for replays: a successful JSON answer, or nothing (then release). */
const keptResponse = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.status >= 300 || response.body._tag !== "Uint8Array") return undefined
  return { status: response.status, body: new TextDecoder().decode(response.body.body) }
}
