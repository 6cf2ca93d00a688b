/** The keys' view of plans and rentals (keys/ScopeTargets.ts), read from the plan store. */
import { Effect, Layer } from "effect"
import { type MachineOfScope, ScopeTargets } from "../keys/ScopeTargets.ts"
import { PlanStore } from "./PlanStore.ts"
import type { AccountId } from "../kernel/Ids.ts"

/** The machine of the account's plan or rental (ended ones too), or undefined when it is not the account's. */
export const machineOfScope = (store: PlanStore["Service"]): MachineOfScope => (accountId, scope) =>
  Effect.map(
    scope._tag === "Subscription" ? store.subscription(scope.id) : (store.rental(scope.id) as Effect.Effect<{ readonly account_id: AccountId; readonly machine_id: string } | undefined>),
    (record) => record?.account_id === accountId ? record.machine_id : undefined
  )

export const ScopeTargetsFromPlans: Layer.Layer<ScopeTargets, never, PlanStore> = Layer.effect(
  ScopeTargets,
  Effect.gen(function*() {
    return ScopeTargets.of({ machineOf: machineOfScope(yield* PlanStore) })
  })
)
