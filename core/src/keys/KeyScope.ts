/**
 * The scope rule (docs/api-decisions.md "Key scopes and standing"): what a key scoped to a machine,
 * a plan or a rental may do on the management API. A scoped key is given to someone trusted with
 * one machine's, plan's or rental's calls; it must not reach past them:
 *
 * - every endpoint says how a scoped key may use it, beside the permission it needs (the
 *   `ScopeRule` annotation, read by the authentication middleware, http/Security.ts);
 * - unannotated, an endpoint needing `manage` is **account-wide**: a scoped key is refused
 *   (limits, auto-reload, invoicing, agents, redeeming, simulated deposits...); any other endpoint
 *   (reads, datasets, fieldwork) takes any key;
 * - a **within** endpoint acts on one thing (a key, an order, a plan): a scoped key may act only on
 *   things within its scope, which the handler checks with `requireWithin` once it knows the thing.
 *
 * Refusals are 403 key_scope_too_narrow. An unscoped key may do everything its permissions allow.
 */
import { Context, Effect } from "effect"
import type { Caller } from "./Caller.ts"
import { keyError } from "./KeyErrors.ts"
import type { KeyRecord } from "./Keys.ts"
import type { Permission } from "./Permissions.ts"
import type { MachineOfScope } from "./ScopeTargets.ts"
import type { AccountId } from "../kernel/Ids.ts"

/** What a key reaches: every machine of its account, or one machine, plan or rental. */
export type Scope =
  | { readonly _tag: "Account" }
  | { readonly _tag: "Machine"; readonly id: string }
  | { readonly _tag: "Subscription"; readonly id: string }
  | { readonly _tag: "Rental"; readonly id: string }

type Scoped = Pick<KeyRecord, "machine_id" | "subscription_id" | "rental_id">

export const scopeOf = (key: Scoped): Scope =>
  key.machine_id !== null
    ? { _tag: "Machine", id: key.machine_id }
    : key.subscription_id !== null
    ? { _tag: "Subscription", id: key.subscription_id }
    : key.rental_id !== null
    ? { _tag: "Rental", id: key.rental_id }
    : { _tag: "Account" }

export const sameScope = (a: Scope, b: Scope): boolean =>
  a._tag === b._tag && (a._tag === "Account" || a.id === (b as { readonly id: string }).id)

const describe = (scope: Scope): string =>
  scope._tag === "Machine"
    ? `machine "${scope.id}"`
    : scope._tag === "Subscription"
    ? `plan "${scope.id}"`
    : scope._tag === "Rental"
    ? `rental "${scope.id}"`
    : "the whole account"

/** What a thing acted on at a `within` endpoint is, for the rule. */
export type ScopeTarget =
  /** A key, made or revoked: a scoped key acts only on keys of exactly its own scope. */
  | { readonly _tag: "Key"; readonly scope: Scope }
  /** An order, made or paid: only for the machine the key reaches (null: not for one machine). */
  | { readonly _tag: "Order"; readonly machine_id: string | null }
  /** A plan, cancelled or resumed: the key's own plan, or one on the machine a machine key is pinned to. */
  | { readonly _tag: "Subscription"; readonly id: string; readonly machine_id: string }

/** How a scoped key may use an endpoint. */
export type ScopeRule = "any" | "account" | { readonly within: "key" | "order" | "subscription" }

/** An endpoint's rule, set with `.annotate(ScopeRuleAnnotation, { within: "key" })`; see `scopeRuleOf`. */
export const ScopeRuleAnnotation = Context.Reference<ScopeRule | undefined>(
  "@model-platform/core/KeyScope/ScopeRule",
  { defaultValue: () => undefined }
)

/** The rule of an endpoint needing `permission`, given its annotation: account-wide when it writes with manage. */
export const scopeRuleOf = (permission: Permission | undefined, annotated: ScopeRule | undefined): ScopeRule =>
  annotated ?? (permission === "manage" ? "account" : "any")

export const tooNarrow = (scope: Scope, what: string) =>
  keyError("key_scope_too_narrow", `This key is scoped to ${describe(scope)}; ${what}`)

/** An account-wide endpoint called with a scoped key: 403. */
export const requireAccountWide = (caller: Caller) => {
  const scope = scopeOf(caller.key)
  return scope._tag === "Account"
    ? Effect.void
    : Effect.fail(tooNarrow(scope, "this action applies to the whole account and needs a key without a machine, plan or rental scope."))
}

/** The machine a scoped key reaches: its pin, or its plan's or rental's machine (undefined when gone). */
const machineReached = (machineOf: MachineOfScope, accountId: AccountId, scope: Exclude<Scope, { _tag: "Account" }>) =>
  scope._tag === "Machine" ? Effect.succeed(scope.id) : machineOf(accountId, scope)

/** A `within` endpoint's check, once the handler knows what it acts on: 403 when it is beyond the key's scope. */
export const requireWithin = (machineOf: MachineOfScope, caller: Caller, target: ScopeTarget) =>
  Effect.gen(function*() {
    const scope = scopeOf(caller.key)
    if (scope._tag === "Account") return
    switch (target._tag) {
      case "Key":
        if (sameScope(scope, target.scope)) return
        return yield* tooNarrow(scope, `it can only make or revoke keys with that same scope, not ones scoped to ${describe(target.scope)}.`)
      case "Order": {
        const machine = yield* machineReached(machineOf, caller.account.id, scope)
        if (target.machine_id !== null && target.machine_id === machine) return
        return yield* tooNarrow(
          scope,
          `it can only order and pay for its own machine${machine === undefined ? "" : ` ("${machine}")`}, not ${
            target.machine_id === null ? "for the whole account" : `for machine "${target.machine_id}"`
          }.`
        )
      }
      case "Subscription": {
        if (scope._tag === "Subscription" ? scope.id === target.id : scope._tag === "Machine" && scope.id === target.machine_id) return
        return yield* tooNarrow(scope, `it can only change its own plan, not plan "${target.id}".`)
      }
    }
  })
