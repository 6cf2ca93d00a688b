/**
 * The Idempotency-Key mechanism (as Stripe's): any write endpoint opts in with
 * `.middleware(Idempotency)`. The same key with the same request replays the first response;
 * with another request it is a 409. The record is claimed before the write runs, so two concurrent
 * requests with one key never both run it. Only completed writes are kept: a request that failed
 * (an error response or a crash) releases its claim, and the client may retry with the same key.
 */
import { Effect, Exit, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import * as Errors from "../Errors.ts"
import { hashSecret } from "../Keys.ts"
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "../Limits.ts"
import { IdempotencyStore } from "../ports/IdempotencyStore.ts"
import { textProblem } from "../Text.ts"
import * as Time from "../Time.ts"
import { CurrentCaller } from "./Security.ts"

export const IDEMPOTENCY_HEADER = "idempotency-key"
export const REPLAYED_HEADER = "idempotent-replayed"
/**
 * A claim with no response after this long belongs to a process that died mid-request (no code
 * ran to release it); a new request under the key may take it over.
 */
export const ABANDONED_CLAIM_MS = 5 * 60 * 1000

export class Idempotency extends HttpApiMiddleware.Service<Idempotency, { requires: CurrentCaller }>()(
  "@model-platform/core/api/Idempotency",
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
        const body = yield* Effect.orElseSucceed(request.text, () => "")
        const fingerprint = yield* hashSecret(`${request.method} ${request.url}\n${body}`)
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
              "This Idempotency-Key was used with another request; use a new key for a new request."
            )
          }
          if (record.response === undefined) {
            return yield* Errors.conflict(
              "idempotency_request_in_progress",
              "A request with this Idempotency-Key is still running; retry when it has finished."
            )
          }
          return HttpServerResponse.text(record.response.body, {
            status: record.response.status,
            contentType: "application/json",
            headers: { [REPLAYED_HEADER]: "true" }
          })
        }
        // An interrupted request (client gone, Lambda deadline) releases its claim too.
        const exit = yield* Effect.exit(Effect.onInterrupt(httpEffect, () => store.release(scope, key)))
        const stored = Exit.isSuccess(exit) ? storedResponse(exit.value) : undefined
        yield* stored === undefined ? store.release(scope, key) : store.complete(scope, key, stored)
        return yield* exit
      }))
    })
  )
}

/** The response to keep for replays: a successful JSON answer, or nothing (then release). */
const storedResponse = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.status >= 300 || response.body._tag !== "Uint8Array") return undefined
  return { status: response.status, body: new TextDecoder().decode(response.body.body) }
}
