/**
 * Dispatch, the gateway's middle stage (docs/gateway.md "Routing", "Cooldown"): which machines may
 * take a call, in which order, and trying them until one answers. Admission (before) and
 * settlement (after) are the gateway's other stages; this module never touches money, it is
 * handed a `prepare` step (the reservation for a machine) and a `send` step (the call itself).
 *
 * Failures feed the failure accounting of Cooldown.ts: a machine that fails a call becomes
 * suspect (a canary decides), it is never cooled down by a client's call alone.
 */
import { type AllowanceSource, MONTHLY_ALLOWANCE, planAllowance } from "../billing/Allowances.ts"
import { Effect, Option, type Result } from "effect"
import type { Caller } from "../keys/Caller.ts"
import type { CatalogueConfig, MachineConfig } from "../catalogue/CatalogueConfig.ts"
import { type GatewayError, gatewayError } from "./GatewayErrors.ts"
import type { MachineClient, MachineFailure, MachineResponse } from "./MachineClient.ts"
import { MachineStatus } from "../catalogue/MachineStatus.ts"
import { subscribeOfferOf } from "../plans/Offers.ts"
import type { Standing } from "./KeyStanding.ts"
import { orderRoutes, type RouteCandidate } from "../catalogue/Routing.ts"
import { type CanaryShape, type CooldownConfig, isRetryableStatus, makeCooldown } from "./Cooldown.ts"
import { HealthChecker } from "./HealthChecker.ts"
import type { ValidCall } from "./Validation.ts"

export { isRetryableStatus, machinePath } from "./Cooldown.ts"

export interface DispatchConfig extends CooldownConfig {
  /** Machines tried per call at most. */
  readonly maxAttempts: number
}

export interface Attempts {
  readonly call: ValidCall
  readonly candidates: ReadonlyArray<MachineConfig>
  /** Before a machine is tried: false skips it (no reservation could be made for it). */
  readonly prepare: (machine: MachineConfig) => Effect.Effect<boolean>
  /** Calls the machine; `attempt` counts from 1. */
  readonly send: (machine: MachineConfig, attempt: number) => Effect.Effect<Result.Result<MachineResponse, MachineFailure>>
  /** Reads and drops the body of an answer not passed on (so the connection is reused); a snippet of it. */
  readonly discard: (response: MachineResponse) => Effect.Effect<string>
}

export const noCapacity = (message: string) => gatewayError("no_capacity", message)

const shapeOf = (call: ValidCall): CanaryShape => ({ endpoint: call.endpoint, model: call.model, stream: call.stream })

export const makeDispatch = (config: DispatchConfig, catalogue: CatalogueConfig, machines: MachineClient["Service"]) =>
  Effect.gen(function*() {
    const status = yield* MachineStatus
    // Optional: when a health checker runs beside the gateway, a failed call makes it probe at once.
    const checker = Option.getOrUndefined(yield* Effect.serviceOption(HealthChecker))
    const cooldown = yield* makeCooldown(config, machines)

    const machinesById = new Map(catalogue.machines.map((m) => [m.id, m]))
    /** Each machine's plans that can be ordered (plans/Offers.ts), read once: by machine, then plan id. */
    const plansOf = new Map(catalogue.machines.map((m) => [m.id, new Map((subscribeOfferOf(m)?.plans ?? []).map((p) => [p.id, p]))]))
    const machinesOfModel = new Map<string, ReadonlyArray<MachineConfig>>(
      catalogue.models.map((model) => [model.id, catalogue.machines.filter((m) => m.serverless_models.includes(model.id))])
    )

    /**
     * A call to the machine failed, maybe by the machine's fault, maybe by the call's: a canary (and
     * the health checker's probe, when one runs) decides; the failure itself counts for nothing.
     */
    const suspect = (machine: MachineConfig, call: ValidCall): Effect.Effect<void> =>
      Effect.andThen(
        cooldown.suspect(machine, shapeOf(call)),
        checker === undefined ? Effect.void : checker.reportFailure(machine.id)
      )

    /**
     * The machine a key is bound to, or null: its own pin, or its plan's or rental's machine (the
     * key's standing, KeyStanding.ts, found them active: else 403 subscription_inactive or
     * rental_ended before this), 403 model_not_in_plan for a model not in the plan (docs/plans.md
     * "Keys scoped to a plan or a rental"); and whose allowance its calls spend (the plan's, or the
     * account's month's).
     */
    const keyMachineOf = Effect.fnUntraced(function*(caller: Caller, standing: Standing, call: ValidCall): Effect.fn.Return<{ readonly machine: string | null; readonly allowance: AllowanceSource }, GatewayError> {
      const plan = standing.plan
      if (plan !== undefined) {
        const offered = plansOf.get(plan.machine_id)?.get(plan.plan_id)
        if (offered === undefined || !offered.models.includes(call.model.id)) {
          return yield* gatewayError(
            "model_not_in_plan",
            `The plan behind this key (${plan.plan_id} on ${plan.machine_id}) does not include ${call.model.id}${
              offered === undefined ? "" : `; it includes ${offered.models.join(", ")}`
            }.`
          )
        }
        return { machine: plan.machine_id, allowance: planAllowance(plan) }
      }
      if (standing.rental !== undefined) return { machine: standing.rental.machine_id, allowance: MONTHLY_ALLOWANCE }
      return { machine: caller.key.machine_id, allowance: MONTHLY_ALLOWANCE }
    })

    /**
     * The machines that may take the call, best first (docs/gateway.md "Routing", step 3), and
     * whose allowance the call spends.
     */
    const candidatesFor = Effect.fnUntraced(function*(call: ValidCall, caller: Caller, standing: Standing, now: number) {
      const { allowance, machine: keyMachine } = yield* keyMachineOf(caller, standing, call)
      return { allowance, machines: yield* machinesFor(call, keyMachine, now) }
    })

    const machinesFor = Effect.fnUntraced(function*(call: ValidCall, keyMachine: string | null, now: number) {
      const model = call.model
      if (call.machine !== undefined && keyMachine !== null && call.machine !== keyMachine) {
        return yield* gatewayError(
          "key_not_scoped_to_machine",
          `This key is pinned to machine "${keyMachine}"; it cannot call machine "${call.machine}".`
        )
      }
      const target = call.machine ?? keyMachine ?? undefined
      if (target !== undefined) {
        const machine = machinesById.get(target)
        if (machine === undefined) {
          return yield* gatewayError("machine_not_found", `No machine "${target}".`)
        }
        const state = yield* status.get(target)
        if (
          !machine.serverless_models.includes(model.id) || state.health === "offline" ||
          !state.serving_now.includes(model.id)
        ) {
          return yield* noCapacity(`${model.id} is not serving on machine ${target} now; retry later or pick another machine.`)
        }
        // A pinned machine is tried even while it cools down: it is the only choice.
        return [machine] as ReadonlyArray<MachineConfig>
      }
      const configs = machinesOfModel.get(model.id) ?? []
      const candidates: Array<RouteCandidate & { readonly machine: MachineConfig }> = []
      for (const machine of configs) {
        const state = yield* status.get(machine.id)
        const serving = state.serving_now.includes(model.id)
        if (!serving || state.health === "offline" || cooldown.isCoolingDown(machine.id, now)) continue
        candidates.push({ machine_id: machine.id, region: machine.region, health: state.health, serving, score: machine.score, machine })
      }
      if (candidates.length === 0) return yield* noCapacity(`No machine is serving ${model.id} now; retry later.`)
      return orderRoutes(candidates).map((c) => c.machine)
    })

    /**
     * Tries the candidates in order until one answers with a status that is not retryable (docs/
     * gateway.md "Routing", step 5). Answers with the machine and its response; the response may
     * be the client's own 4xx, which the caller passes on.
     */
    const attempts = Effect.fnUntraced(function*(input: Attempts) {
      const { call } = input
      // Built when needed: an error object is costly (its stack), and most calls succeed.
      let last: (() => GatewayError) | undefined
      let attempt = 0
      for (const machine of input.candidates) {
        if (attempt >= config.maxAttempts) break
        if (!(yield* input.prepare(machine))) continue
        attempt += 1
        const result = yield* input.send(machine, attempt)
        if (result._tag === "Failure") {
          const reason = result.failure.reason
          if (reason === "unsendable") {
            // Nothing was sent: the body itself cannot be encoded, so no machine would take it.
            return yield* gatewayError("invalid_input", "The request body cannot be sent to a machine (it cannot be encoded as JSON).")
          }
          yield* suspect(machine, call)
          last = () =>
            gatewayError(
              "machine_unreachable",
              `Machine ${machine.id} ${reason === "timeout" ? "did not answer in time" : "could not be reached"}; retry with backoff.`
            )
          continue
        }
        const response = result.success
        if (isRetryableStatus(response.status)) {
          yield* suspect(machine, call)
          const detail = yield* input.discard(response)
          yield* Effect.logDebug(`gateway: machine ${machine.id} answered ${response.status}: ${detail}`)
          const answered = response.status
          last = () =>
            answered === 503
              ? noCapacity(`${call.model.id} is not serving on machine ${machine.id} now; retry later.`)
              : gatewayError("machine_error", `Machine ${machine.id} failed (status ${answered}); retry with backoff.`)
          continue
        }
        return { machine, response }
      }
      return yield* (last === undefined ? noCapacity(`No machine is serving ${call.model.id} now; retry later.`) : last())
    })

    return {
      candidatesFor,
      attempts,
      suspect,
      coolingDown: cooldown.coolingDown,
      idle: cooldown.idle
    }
  })

export type Dispatch = Effect.Success<ReturnType<typeof makeDispatch>>
