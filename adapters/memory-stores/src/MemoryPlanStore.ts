/**
 * The plan store port (core/src/plans/PlanStore.ts) in memory, for tests and the in-process shell:
 * one Ref, each write a single `Ref.modify` (atomic between fibers), input that breaks the port's
 * rules a defect.
 */
import { Effect, Layer, Ref } from "effect"
import {
  earliestEndFirst,
  newestFirst,
  type PlanRenewal,
  PlanStore,
  type RenewOutcome,
  renewalProblem,
  type RentalRecord,
  rentalProblem,
  type SubscriptionRecord,
  subscriptionProblem
} from "@model-platform/core/plans"

interface State {
  readonly subscriptions: ReadonlyMap<string, SubscriptionRecord>
  readonly rentals: ReadonlyMap<string, RentalRecord>
  /** The orders that renewed a plan: each renews once. */
  readonly renewalOrders: ReadonlySet<string>
}

/** Either [answer, next state] or a reason to die (the state unchanged). */
type Step<A> = readonly [A, State] | { readonly defect: string }

const modifyOrDie = <A>(ref: Ref.Ref<State>, f: (state: State) => Step<A>): Effect.Effect<A> =>
  Ref.modify(ref, (state): readonly [Step<A>, State] => {
    const step = f(state)
    return "defect" in step ? [step, state] : [step, step[1]]
  }).pipe(Effect.flatMap((step) => "defect" in step ? Effect.die(new Error(step.defect)) : Effect.succeed(step[0])))

/** Inserts `record` unless its order has one; a record of that id for another order is a defect. */
const insertOnce = <R extends { readonly id: string; readonly order_id: string }>(
  records: ReadonlyMap<string, R>,
  record: R,
  problem: string | undefined
): readonly [R, ReadonlyMap<string, R>] | { readonly defect: string } => {
  if (problem !== undefined) return { defect: problem }
  for (const existing of records.values()) if (existing.order_id === record.order_id) return [{ ...existing }, records]
  if (records.has(record.id)) return { defect: `duplicate id ${record.id}` }
  return [{ ...record }, new Map(records).set(record.id, { ...record })]
}

export const PlanStoreMemory: Layer.Layer<PlanStore> = Layer.effect(
  PlanStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<State>({ subscriptions: new Map(), rentals: new Map(), renewalOrders: new Set() })

    const insertSubscription = (record: SubscriptionRecord) =>
      modifyOrDie(state, (s): Step<SubscriptionRecord> => {
        const step = insertOnce(s.subscriptions, record, subscriptionProblem(record))
        return "defect" in step ? { defect: `PlanStore.insertSubscription: ${step.defect}` } : [step[0], { ...s, subscriptions: step[1] }]
      })

    const insertRental = (record: RentalRecord) =>
      modifyOrDie(state, (s): Step<RentalRecord> => {
        const step = insertOnce(s.rentals, record, rentalProblem(record))
        return "defect" in step ? { defect: `PlanStore.insertRental: ${step.defect}` } : [step[0], { ...s, rentals: step[1] }]
      })

    const setRenewal = (
      accountId: string,
      id: string,
      renewal: Pick<SubscriptionRecord, "auto_renews" | "cancel_at_period_end">
    ) =>
      Ref.modify(state, (s): readonly [SubscriptionRecord | undefined, State] => {
        const found = s.subscriptions.get(id)
        if (found === undefined || found.account_id !== accountId) return [undefined, s]
        const next = { ...found, auto_renews: renewal.auto_renews, cancel_at_period_end: renewal.cancel_at_period_end }
        return [{ ...next }, { ...s, subscriptions: new Map(s.subscriptions).set(id, next) }]
      })

    const renew = (renewal: PlanRenewal) =>
      modifyOrDie(state, (s): Step<RenewOutcome> => {
        const problem = renewalProblem(renewal)
        if (problem !== undefined) return { defect: `PlanStore.renew: ${problem}` }
        const found = s.subscriptions.get(renewal.subscription_id)
        if (found === undefined) return ["not_found", s]
        if (s.renewalOrders.has(renewal.order_id)) return ["already_renewed", s]
        if (found.current_period_end !== renewal.after_period_end) return ["stale", s]
        const next: SubscriptionRecord = {
          ...found,
          current_period_start: renewal.current_period_start,
          current_period_end: renewal.current_period_end,
          renewal_error: null
        }
        return ["renewed", {
          ...s,
          subscriptions: new Map(s.subscriptions).set(found.id, next),
          renewalOrders: new Set(s.renewalOrders).add(renewal.order_id)
        }]
      })

    const failRenewal = (id: string, afterPeriodEnd: string, error: string) =>
      Ref.modify(state, (s): readonly [boolean, State] => {
        const found = s.subscriptions.get(id)
        if (found === undefined || found.current_period_end !== afterPeriodEnd) return [false, s]
        const next: SubscriptionRecord = { ...found, auto_renews: false, renewal_error: error }
        return [true, { ...s, subscriptions: new Map(s.subscriptions).set(id, next) }]
      })

    const dueRenewals = (before: string, limit: number) =>
      Effect.map(Ref.get(state), (s) =>
        [...s.subscriptions.values()]
          .filter((r) => r.auto_renews && r.current_period_end <= before)
          .sort(earliestEndFirst)
          .slice(0, Math.max(0, limit))
          .map((r) => ({ ...r })))

    const copy = <R>(r: R | undefined): R | undefined => (r === undefined ? undefined : { ...r })
    const ofAccount = <R extends { readonly account_id: string; readonly created_at: string; readonly id: string }>(
      records: ReadonlyMap<string, R>,
      accountId: string
    ) => [...records.values()].filter((r) => r.account_id === accountId).sort(newestFirst).map((r) => ({ ...r }))

    return PlanStore.of({
      insertSubscription,
      subscription: (id) => Effect.map(Ref.get(state), (s) => copy(s.subscriptions.get(id))),
      subscriptions: (accountId) => Effect.map(Ref.get(state), (s) => ofAccount(s.subscriptions, accountId)),
      setRenewal,
      renew,
      failRenewal,
      dueRenewals,
      insertRental,
      rental: (id) => Effect.map(Ref.get(state), (s) => copy(s.rentals.get(id))),
      rentals: (accountId) => Effect.map(Ref.get(state), (s) => ofAccount(s.rentals, accountId))
    })
  })
)
