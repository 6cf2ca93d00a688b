/**
 * Admission, the gateway's first stage (docs/gateway.md "Admission in one store step"): before a
 * call reaches a machine, in one store step shared with the admissions of its batch
 * (GatewayStore.admit, group commit), the key is confirmed live (else 401, and forgotten), its use
 * recorded (`last_used_at`, at most once per TOUCH_INTERVAL_MS), the call counted against the key's
 * rpm (the tier from purchased credits, kept per account for tierCacheMs or until its notice:
 * kernel/AccountCache.ts; past it 429
 * rate_limited with Retry-After) and, for a priced call, the upper bound of its cost reserved for
 * the first machine (402 insufficient_credit) against the account's and the key's monthly limits
 * of this UTC month, the account's at the tier's limit from the same cached purchases (past one,
 * 402 monthly_limit_reached or key_monthly_limit_reached: docs/billing.md).
 *
 * The reservation's ref is journaled before it is asked for (Settlement.opened), so a process
 * killed from then on has it released at restart; an admission that fails or is interrupted before
 * its answer is seen voids it (Settlement.abandon).
 *
 * It also remembers, per key and in process, when a call of it was last admitted here: a key
 * admitted lately is "likely admitted", and its first machine is called while admission runs
 * (speculative dispatch, Gateway.ts).
 */
import { agentBudgetClaims, agentLimitOf } from "../agents/Limits.ts"
import type { AgentRecord } from "../agents/Records.ts"
import { AgentStore } from "../agents/AgentStore.ts"
import { Effect } from "effect"
import { ApiKeys, TOUCH_INTERVAL_MS } from "../keys/ApiKeys.ts"
import { type Caller } from "../keys/Caller.ts"
import { makeBatcher } from "../kernel/Batcher.ts"
import type { CatalogueConfig } from "../catalogue/CatalogueConfig.ts"
import { type AllowanceSource, allowanceTable, grantClaims } from "../billing/Allowances.ts"
import { budgetClaims } from "../billing/Limits.ts"
import { monthOf } from "../kernel/Time.ts"
import { monthlyLimitAt, rpmAt, tierTable } from "../billing/Tiers.ts"
import { gatewayError, rateLimited } from "./GatewayErrors.ts"
import { type AccountId, generateId } from "../kernel/Ids.ts"
import { spendingOrder } from "../ledger/LedgerRules.ts"
import { makeAccountCache } from "../kernel/AccountCache.ts"
import { microToCredits } from "../kernel/Money.ts"
import { type Admission, type AdmissionResult, GatewayStore } from "./GatewayStore.ts"
import type { ReserveInOrderResult } from "../ledger/LedgerStore.ts"
import type { Candidate, Claims } from "./Candidate.ts"
import { makeLeaseAdmission } from "./LeaseAdmission.ts"
import type { GatewayError } from "./GatewayErrors.ts"
import { OrderStore } from "../payments/OrderStore.ts"
import { windowStartOf } from "../kernel/RateLimitStore.ts"
import * as Time from "../kernel/Time.ts"
import { netPurchasedCredits } from "../payments/Reversals.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import type { Held, Settlement } from "./Settlement.ts"

export interface AdmissionConfig {
  readonly tierCacheMs: number
  readonly rateWindowMs: number
  readonly speculativeDispatch: boolean
  readonly speculationWindowMs: number
  readonly storeBatch: number
  readonly reservationTtlMs: number
}

export const makeAdmission = (config: AdmissionConfig, catalogue: CatalogueConfig, settlement: Settlement) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    const agents = yield* AgentStore
    const store = yield* GatewayStore
    const orders = yield* OrderStore
    // The same rule as the billing summary's tier: purchases less what refunds took back.
    const purchasedCredits = netPurchasedCredits(orders, yield* LedgerStore)
    const tiers = tierTable(catalogue.tiers)
    const allowances = allowanceTable(catalogue)

    // -- tiers (purchased credits kept per account, kernel/AccountCache.ts): the rpm and the monthly limit --
    const purchased = yield* makeAccountCache(config.tierCacheMs, purchasedCredits)
    const purchasedOf = (accountId: AccountId, now: number) => purchased.through(accountId, now)
    /**
     * What a priced call of `caller` on `service` admitted at `now` reserves against: the monthly
     * limits it counts against (billing/Limits.ts budgetClaims: the account's, at the tier's limit
     * unless it set its own, and the key's, in the UTC month of `now`) and the grants it takes
     * from first (billing/Allowances.ts grantClaims: the allowance of `allowance`, the trial).
     */
    const claimsOf = (
      caller: Caller,
      service: string,
      now: number,
      bought: bigint,
      allowance: AllowanceSource,
      agent: AgentRecord | undefined
    ) => ({
      budgets: [
        ...budgetClaims(caller.key.id, monthOf(now), monthlyLimitAt(tiers, bought)),
        ...(agent === undefined ? [] : agentBudgetClaims(agent, now))
      ],
      grants: grantClaims(allowances, service, monthOf(now), allowance)
    })
    const claimsFor = (caller: Caller, service: string, now: number, allowance: AllowanceSource, agent: AgentRecord | undefined) =>
      Effect.map(purchasedOf(caller.account.id, now), (bought) => claimsOf(caller, service, now, bought, allowance, agent))

    // -- per key, in process: when admission last recorded its use (last_used_at at most once per
    // TOUCH_INTERVAL_MS) and when it last admitted a call (speculative dispatch) --
    const keyState = new Map<string, { touchedAt: number; admittedAt: number }>()
    const stateOf = (caller: Caller) => {
      let state = keyState.get(caller.key.id)
      if (state === undefined) {
        if (keyState.size >= 10_000) keyState.clear() // bounded: forgetting costs an early touch, a sequential call
        const lastUsed = caller.key.last_used_at === null ? 0 : Date.parse(caller.key.last_used_at)
        state = { touchedAt: lastUsed, admittedAt: 0 }
        keyState.set(caller.key.id, state)
      }
      return state
    }
    const touchAt = (caller: Caller, now: number) => {
      const state = stateOf(caller)
      if (now - state.touchedAt < TOUCH_INTERVAL_MS) return undefined
      state.touchedAt = now
      return Time.toTimestamp(now)
    }
    /** A key whose last admission here succeeded lately is expected to be admitted again. */
    const likelyAdmitted = (caller: Caller, now: number) =>
      config.speculativeDispatch && now - stateOf(caller).admittedAt < config.speculationWindowMs
    /** A call of this key was refused: no speculation for it until one is admitted again. */
    const refused = (caller: Caller) => Effect.sync(() => void (stateOf(caller).admittedAt = 0))

    // The batch's reservation refs are journaled (one append) before the store is asked for them:
    // a process killed from there on has them released at restart.
    const admissions = makeBatcher(
      (batch: ReadonlyArray<Admission>) =>
        Effect.andThen(settlement.opened(batch.flatMap((a) => a.reservation === undefined ? [] : [a.reservation.ref])), store.admit(batch)),
      config.storeBatch
    )

    /**
     * The admission batch's step for `candidate`'s key: its rpm hits (one unless `hits`) and, for a
     * reservation (a call's or a lease's), `amount` reserved against `claims` until `expiresAt`.
     * Uninterruptible: a client leaving meanwhile waits for the store's answer, so that a
     * reservation made for it is seen (and released), never left to expire.
     */
    const submit = (
      { caller, first, now }: Candidate,
      rate: { readonly rpm: number; readonly windowStart: number; readonly hits?: number },
      reservation: {
        readonly ref: string
        readonly amount: bigint
        readonly expiresAt: number
        readonly claims: Claims
      } | undefined
    ): Effect.Effect<AdmissionResult> =>
      Effect.uninterruptible(admissions.submit({
        account_id: caller.account.id,
        key_id: caller.key.id,
        touch_at: touchAt(caller, now),
        rate: {
          bucket: `rpm:${caller.key.id}`,
          window_start: rate.windowStart,
          window_ms: config.rateWindowMs,
          limit: rate.rpm,
          ...(rate.hits === undefined ? {} : { hits: rate.hits })
        },
        reservation: reservation === undefined ? undefined : {
          ref: reservation.ref,
          account_id: caller.account.id,
          machine_id: first.id,
          scopes: spendingOrder(first.id),
          amount: reservation.amount,
          created_at: Time.toTimestamp(now),
          expires_at: Time.toTimestamp(reservation.expiresAt),
          ...reservation.claims
        }
      }))

    // Generator functions are made once, here, not per call: a generator function made per call
    // keeps the call's state alive past young-generation collections (docs/performance.md
    // "Generators made per call").
    /** The key refused by the store: revoked (forgotten here too), or past its rpm. */
    const keyRefusal = (admission: AdmissionResult, caller: Caller, rpm: number, windowStart: number, now: number) => {
      if (admission._tag === "KeyRevoked") {
        return Effect.andThen(apiKeys.forget(caller.key.id), gatewayError("key_revoked", "The API key was revoked."))
      }
      if (admission._tag === "RateLimited") {
        const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + config.rateWindowMs - now) / 1000))
        return rateLimited(
          retryAfterSeconds,
          `Rate limit reached: this key may make ${rpm} requests per minute at the account's tier; retry in ${retryAfterSeconds} s.`
        )
      }
      return undefined
    }

    /** A priced call refused for its credit or one of its limits (nothing reserved). */
    const creditRefusal = Effect.fnUntraced(function*(
      { bound, caller, endpoint, now }: Candidate,
      reserved: Exclude<ReserveInOrderResult, { readonly _tag: "reserved" | "duplicate" }>
    ): Effect.fn.Return<never, GatewayError> {
      if (reserved._tag === "insufficient") {
        return yield* gatewayError(
          "insufficient_credit",
          `Insufficient credit: this call may cost up to ${microToCredits(bound ?? 0n)} credits and the balance usable on this machine (with what is left of this service's allowance and trial) is ${microToCredits(reserved.available)} credits. Add credits${endpoint === "/v1/chat/completions" ? ", or lower max_tokens" : ""}.`
        )
      }
      if (agentLimitOf(reserved.budget) !== undefined) {
        // docs/agents.md "Agent keys at the gateway": the agent's daily or total limit.
        const daily = agentLimitOf(reserved.budget) === "daily"
        return yield* gatewayError(
          daily ? "agent_daily_limit" : "agent_total_limit",
          `Agent limit reached: this call may cost up to ${microToCredits(bound ?? 0n)} credits and the agent may spend ${
            microToCredits(reserved.limit)
          } credits ${daily ? "a day (UTC)" : "in total"}, of which ${microToCredits(reserved.used)} are spent or held${
            daily ? " today" : ""
          }. The owner may raise the limit (POST /agents/{id}/settings, approved with a passkey).`
        )
      }
      // docs/billing.md "Monthly limits": the account's limit, or the key's ("key:<id>").
      const ofKey = reserved.budget !== "account"
      // Billing raises the limit-reached alert (once a month; docs/billing.md "Alerts").
      yield* settlement.limitReached(caller.account.id, reserved.budget, monthOf(now), reserved.limit)
      return yield* gatewayError(
        ofKey ? "key_monthly_limit_reached" : "monthly_limit_reached",
        `Monthly limit reached: this call may cost up to ${microToCredits(bound ?? 0n)} credits and ${
          ofKey ? "this key" : "the account"
        } has ${microToCredits(reserved.limit)} credits a month, of which ${
          microToCredits(reserved.used)
        } are spent or held this month. ${
          ofKey ? "Raise the key's monthly limit" : "Raise the account's monthly limit (up to the tier's)"
        }${endpoint === "/v1/chat/completions" ? ", or lower max_tokens" : ""}.`
      )
    })

    /** The admission's store step and what its answer means, for a call whose reservation is `ref`. */
    const admitStep = Effect.fnUntraced(function*(candidate: Candidate, ref: string | undefined, expiresAt: number) {
      const { agent, allowance, bound, caller, first, now, service } = candidate
      const bought = yield* purchasedOf(caller.account.id, now)
      const rpm = rpmAt(tiers, bought)
      const windowStart = windowStartOf(now, config.rateWindowMs)
      const admission = yield* submit(
        candidate,
        { rpm, windowStart },
        ref === undefined || bound === undefined
          ? undefined
          : { ref, amount: bound, expiresAt, claims: claimsOf(caller, service, now, bought, allowance, agent) }
      )
      const refused = keyRefusal(admission, caller, rpm, windowStart, now)
      if (refused !== undefined) return yield* refused
      const reserved = admission._tag === "Admitted" ? admission.reserved : undefined
      if (reserved?._tag === "duplicate") {
        return yield* Effect.die(new Error(`Gateway: generated reservation ref ${ref} already exists`))
      }
      if (reserved !== undefined && reserved._tag !== "reserved") return yield* creditRefusal(candidate, reserved)
      stateOf(caller).admittedAt = now
      return reserved === undefined || ref === undefined
        ? undefined
        : { ref, machineId: first.id, allocations: reserved.allocations, grants: reserved.grants ?? [], expiresAt } satisfies Held
    })

    const leasedStep = makeLeaseAdmission({
      config,
      settlement,
      rpmOf: (bought) => rpmAt(tiers, bought),
      purchasedOf,
      claimsOf,
      submit,
      keyRefusal,
      admitted: (caller, now) => void (stateOf(caller).admittedAt = now)
    })

    /** Admits a call: its first reservation (undefined when it reserves nothing), or why not. */
    const admit = Effect.fnUntraced(function*(candidate: Candidate) {
      const leases = settlement.leases
      if (leases !== undefined && candidate.bound !== undefined && leases.active()) {
        const held = yield* leasedStep(candidate, leases).pipe(Effect.onError(() => refused(candidate.caller)))
        if (held !== undefined) return held
      }
      const ref = candidate.bound === undefined ? undefined : yield* generateId("usage")
      return yield* admitStep(candidate, ref, candidate.now + config.reservationTtlMs).pipe(
        Effect.onExit((exit) =>
          ref === undefined || (exit._tag === "Success" && exit.value !== undefined) ? Effect.void : settlement.abandon(ref, exit)
        ),
        Effect.onError(() => refused(candidate.caller))
      )
    })

    return { admit, likelyAdmitted, refused, claimsFor } as const
  })
