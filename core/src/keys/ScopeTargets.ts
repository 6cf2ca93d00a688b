/**
 * Port: what a key's plan or rental scope names, for the scope rule (KeyScope.ts) and for making
 * such a key (ApiKeys.create): the machine a plan or a rental of the account runs on, or undefined
 * when the account has no such plan or rental. plans/ScopeTargetsFromPlans.ts reads it from the
 * plan store, so keys need not know plans.
 */
import { Context, type Effect } from "effect"
import type { AccountId } from "../kernel/Ids.ts"

export interface PlanScope {
  readonly _tag: "Subscription" | "Rental"
  readonly id: string
}

export type MachineOfScope = (accountId: AccountId, scope: PlanScope) => Effect.Effect<string | undefined>

export class ScopeTargets extends Context.Service<ScopeTargets, {
  readonly machineOf: MachineOfScope
}>()("@model-platform/core/keys/ScopeTargets") {}
