/**
 * What the gateway learns of the call it answers, noted for the call's metrics and span
 * (Calls.ts): its model once validated against the catalogue, the machine that answered. Kept
 * apart from Calls.ts so that the gateway's hooks import nothing of what observes it.
 */
import { Context, Effect } from "effect"
import type { Endpoint } from "./Validation.ts"

/** OpenTelemetry's `gen_ai.operation.name` of each endpoint (images and forecasts have no standard name). */
export const OPERATIONS: Readonly<Record<Endpoint, string>> = {
  "/v1/chat/completions": "chat",
  "/v1/embeddings": "embeddings",
  "/v1/images/generations": "generate_content",
  "/v1/forecasts": "forecast"
}

/** What is known of the call being answered. */
export interface CallFacts {
  model: string | undefined
  machine: string | undefined
  /** Told once the machine that answers is known (per-machine calls in flight, Activity.ts). */
  readonly onMachine?: ((machine: string) => void) | undefined
}

/** The call being answered, set by Calls.ts around the gateway's `call`. */
export const CurrentCall = Context.Reference<CallFacts | undefined>("@model-platform/core/observability/CurrentCall", {
  defaultValue: () => undefined
})

/** The gateway notes what it learnt of the call: its model (validated against the catalogue), the machine that answered. */
export const noteCall = (facts: { readonly model?: string; readonly machine?: string }): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    const call = fiber.getRef(CurrentCall)
    if (call !== undefined) {
      if (facts.model !== undefined) call.model = facts.model
      if (facts.machine !== undefined && call.machine === undefined) {
        call.machine = facts.machine
        call.onMachine?.(facts.machine)
      }
    }
    return Effect.void
  })
