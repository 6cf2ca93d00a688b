/**
 * A key's standing: whether what stands behind a live key still lets it authorise anything
 * (docs/api-decisions.md "Key scopes and standing"). One rule for every surface — the management
 * API, the dataset file routes and `/v1` — so a key refused on one is refused on all:
 *
 * - a key of an agent: the agent is active and its delegation runs (agents/Limits.ts agentGate);
 *   a revoked, failed or vanished agent: 401 invalid_api_key; an expired delegation: 403 agent_expired;
 * - a key scoped to a plan: the plan is active, else 403 subscription_inactive;
 * - a key scoped to a rental: the rental is running, else 403 rental_ended.
 *
 * A key with none of these (the common case) costs no read. The records read are handed on, so the
 * gateway does not read them again (the agent's limits, the plan's models and allowance).
 */
import { Effect } from "effect"
import { makeKeptCache } from "../kernel/AccountCache.ts"
import { agentGate } from "../agents/Limits.ts"
import { type StandingError, standingError } from "./GatewayErrors.ts"
import type { AgentRecord } from "../agents/Records.ts"
import type { KeyRecord } from "../keys/Keys.ts"
import { rentalView, subscriptionView } from "../plans/Plans.ts"
import { AgentStore } from "../agents/AgentStore.ts"
import { PlanStore, type RentalRecord, type SubscriptionRecord } from "../plans/PlanStore.ts"

export interface Standing {
  /** The key's agent (active, delegation running), or undefined for a key of no agent. */
  readonly agent: AgentRecord | undefined
  /** The key's plan (active), or undefined for a key not scoped to a plan. */
  readonly plan: SubscriptionRecord | undefined
  /** The key's rental (running), or undefined for a key not scoped to a rental. */
  readonly rental: RentalRecord | undefined
}

/** Why a live key may not authorise a call (GatewayErrors.ts; each surface answers it through http/Refusals.ts). */
export type KeyRefused = StandingError

/** The standing of a key with nothing behind it. */
export const NOTHING_BEHIND: Standing = { agent: undefined, plan: undefined, rental: undefined }

/** Whether anything stands behind `key` (an agent, a plan or a rental): only then is there a standing to read. */
export const hasStanding = (key: KeyRecord): boolean =>
  key.agent_id !== null || key.subscription_id !== null || key.rental_id !== null

/** The records behind a key, as read (each undefined when the key has none, or it is gone). */
type Behind = readonly [AgentRecord | undefined, SubscriptionRecord | undefined, RentalRecord | undefined]

/** The records behind `key`, read from these stores together (one round trip's wait, not three). */
const readBehind = (agents: AgentStore["Service"], plans: PlanStore["Service"], key: KeyRecord): Effect.Effect<Behind> =>
  Effect.all([
    key.agent_id === null ? Effect.undefined : agents.get(key.agent_id),
    key.subscription_id === null ? Effect.undefined : plans.subscription(key.subscription_id),
    key.rental_id === null ? Effect.undefined : plans.rental(key.rental_id)
  ], { concurrency: "unbounded" })

/** The standing of `key` at `now` from the records behind it, or why it is refused; judged in this order. */
const judge = (key: KeyRecord, [foundAgent, foundPlan, foundRental]: Behind, now: number): Effect.Effect<Standing, KeyRefused> =>
  Effect.gen(function*() {
    let agent: AgentRecord | undefined
    if (key.agent_id !== null) {
      const own = foundAgent?.account_id === key.account_id ? foundAgent : undefined
      switch (agentGate(own, now)) {
        case "revoked":
          return yield* standingError("agent_revoked", "The agent of this key was revoked.")
        case "expired":
          return yield* standingError("agent_expired", `The delegation of agent ${key.agent_id} has ended; propose the agent again.`)
        case "ok":
          agent = own
      }
    }
    let plan: SubscriptionRecord | undefined
    if (key.subscription_id !== null) {
      if (foundPlan === undefined || foundPlan.account_id !== key.account_id || subscriptionView(foundPlan, now).status !== "active") {
        return yield* standingError("subscription_inactive", `The plan behind this key (${key.subscription_id}) is not active.`)
      }
      plan = foundPlan
    }
    let rental: RentalRecord | undefined
    if (key.rental_id !== null) {
      if (foundRental === undefined || foundRental.account_id !== key.account_id || rentalView(foundRental, now).status !== "active") {
        return yield* standingError("rental_ended", `The rental behind this key (${key.rental_id}) is not running.`)
      }
      rental = foundRental
    }
    return { agent, plan, rental }
  })

/** The standing of `key` at `now` from the records `behind` gives, or why it is refused. */
const standingFrom = (behind: (key: KeyRecord, now: number) => Effect.Effect<Behind>) =>
(key: KeyRecord, now: number): Effect.Effect<Standing, KeyRefused> =>
  hasStanding(key) ? Effect.flatMap(behind(key, now), (records) => judge(key, records, now)) : Effect.succeed(NOTHING_BEHIND)

/** The standing of `key` at `now`, or why it is refused, read from the stores in the context. */
export const standingOf = (key: KeyRecord, now: number): Effect.Effect<Standing, KeyRefused, AgentStore | PlanStore> =>
  Effect.gen(function*() {
    const agents = yield* AgentStore
    const plans = yield* PlanStore
    return yield* standingFrom((key) => readBehind(agents, plans, key))(key, now)
  })

/**
 * `standingOf` with its stores taken now, for a surface that checks every request: the stores are
 * passed in, not provided per request (providing a context copies the request's whole context).
 * The records behind each key are read at every check, unless the shell sends account notices:
 * then they are kept until a notice of their account (kernel/AccountCache.ts; an agent revoked or
 * changed, a plan or rental changed), and judged afresh at each check (a delegation or a period
 * that ends meanwhile ends on time).
 */
export const makeStandingCheck = Effect.gen(function*() {
  const agents = yield* AgentStore
  const plans = yield* PlanStore
  const kept = yield* makeKeptCache<Behind>(0)
  return standingFrom((key, now) => kept.through(key.id, key.account_id, now, () => readBehind(agents, plans, key)))
})
