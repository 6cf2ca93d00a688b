/**
 * The card processor's webhook (docs/payments.md "Webhooks"), a raw route: the body must reach the
 * processor's signature check byte for byte, as sent, so it is read as text here rather than
 * parsed by the HttpApi.
 *
 *   POST /webhooks/{processor}   e.g. /webhooks/stripe; the signature in `<processor>-signature`
 *                                (Stripe-Signature)
 *
 * 200 `{received: true, event_id, outcome}` for every event that verifies, whatever it did (so the
 * processor stops sending it); 400 `invalid_signature` for one that does not (nothing is read from
 * it); 404 for another processor than the platform's, or one whose pages are the platform's (the
 * test processor has no webhook). Served by every shell (AppRoutes).
 */
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { CardEvents } from "../billing/CardEvents.ts"
import { CardProcessor } from "../payments/CardProcessor.ts"
import { errorResponse } from "./ErrorShape.ts"

export const WEBHOOK_PATH = "/webhooks/:processor"

/** The route as the fallback route reads an API (405 naming its method). */
export const WebhookRouteTable = {
  groups: { webhooks: { endpoints: { receive: { method: "POST", path: WEBHOOK_PATH } } } }
}

export const WebhookRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const processor = yield* CardProcessor
    const events = yield* CardEvents
    yield* router.add("POST", WEBHOOK_PATH, Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = new URL(request.url, "http://x").pathname
      const named = (yield* HttpRouter.params)["processor"] ?? ""
      if (processor.pages !== "processor" || named !== processor.processor) {
        return errorResponse(path, 404, `No webhook is served for "${named}": the card processor is "${processor.processor}".`, "not_found")
      }
      const body = yield* Effect.option(request.text)
      if (body._tag === "None") return errorResponse(path, 400, "The request body could not be read.", "invalid_request")
      const answer = yield* Effect.result(events.receive(body.value, request.headers[`${processor.processor}-signature`]))
      if (answer._tag === "Failure") return errorResponse(path, 400, answer.failure.message, "invalid_signature")
      return HttpServerResponse.jsonUnsafe({ received: true, event_id: answer.success.event_id, outcome: answer.success.outcome })
    }))
  })
)
