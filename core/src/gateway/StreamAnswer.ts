/**
 * A streamed call's answer (docs/gateway.md "Streaming"): the machine's events passed on as they
 * come (Streaming.ts, the pump), and when the pump is done the call charged for what was read, or
 * its reservation released when the machine failed before any event. Made once per gateway
 * (Gateway.ts), never per call (docs/gateway.md "Code on the call path").
 */
import { Effect, Semaphore } from "effect"
import type { MachineConfig } from "../catalogue/CatalogueConfig.ts"
import type { Caller } from "../keys/Caller.ts"
import type { Dispatch } from "./Dispatch.ts"
import type { GatewayConfig } from "./GatewayConfig.ts"
import type { MachineResponse } from "./MachineClient.ts"
import { estimatedUsage, type Prices } from "./Metering.ts"
import type { Held, Settlement } from "./Settlement.ts"
import { startStream, type StreamOutcome } from "./Streaming.ts"
import type { ValidCall } from "./Validation.ts"

export const makeStreamAnswer = (config: GatewayConfig, dispatch: Dispatch, settlement: Settlement) =>
  Effect.map(Semaphore.make(config.maxDrains), (drains) => {
    /** The pump is done: charged for what was read, or released when it failed. */
    const finished = Effect.fnUntraced(function*(
      outcome: StreamOutcome,
      caller: Caller,
      vc: ValidCall,
      machine: MachineConfig,
      price: Prices,
      mine: Held | undefined
    ) {
      if (outcome._tag === "Failed") {
        yield* dispatch.suspect(machine, vc)
        yield* Effect.logWarning(`gateway: stream from ${machine.id} failed: ${outcome.reason}`)
        yield* settlement.release(mine)
        return true
      }
      const usage = outcome._tag === "Reported" ? outcome.usage : estimatedUsage(vc, outcome.outputChars)
      // Broken off after events were passed on: charged for what was read, and the machine is suspect all the same.
      if (outcome._tag === "Estimated" && outcome.broke !== undefined) yield* dispatch.suspect(machine, vc)
      if (outcome._tag === "Estimated") {
        yield* Effect.logWarning(`gateway: billing an estimate for a stream from ${machine.id}: ${outcome.reason}`)
      }
      // Inline (Lambda), metering that cannot be written ends the stream with an error, not [DONE].
      return yield* settlement.complete({ caller, call: vc, machineId: machine.id, price, held: mine, usage }).pipe(
        Effect.as(true),
        Effect.catchDefect((defect) =>
          Effect.as(Effect.logError("gateway: a streamed call could not be metered; not charged", defect), false))
      )
    })

    /** Starts the pump over the machine's answer; the client's body is the stream it returns. */
    return (caller: Caller, vc: ValidCall, machine: MachineConfig, price: Prices, response: MachineResponse, mine: Held | undefined) =>
      Effect.map(
        startStream({
          call: vc,
          machineId: machine.id,
          body: response.body,
          settings: {
            keepAliveMs: config.keepAliveMs,
            drainTimeoutMs: config.drainTimeoutMs,
            maxStreamMs: config.maxStreamMs,
            bufferBytes: config.streamBufferBytes,
            finishBeforeEnd: config.settleInline
          },
          drains,
          fork: settlement.fork,
          finish: (outcome) => Effect.uninterruptible(finished(outcome, caller, vc, machine, price, mine))
        }),
        ({ stream }) => stream
      )
  })
