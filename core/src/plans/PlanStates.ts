/**
 * A plan's states and the moves between them (docs/plans.md "Statuses" and "Renewals"), as one
 * pure function every use-case goes through. The spec shows `active`; the rest is ours. A plan is
 * in one of three phases (the API shows `current` and `due` as status `active`, `ended` as
 * `ended`):
 *
 *   current  --period_end, auto_renews-->      due      (its card is being charged)
 *   current  --period_end, not auto_renews-->  ended
 *   due      --renewed-->                      current  (the next period, paid by card)
 *   due      --renewal_failed-->               ended    (auto_renews off, the reason kept)
 *   any      --renewed by order-->             current  (stablecoin plans only: 30 days more)
 *   current  --cancel-->  current (cancel_at_period_end)  --resume-->  current (auto_renews)
 *
 * Cancel and resume are for card plans, while current; cancelling a cancelled plan, or resuming a
 * renewing one, changes nothing (they are idempotent, as a client retrying expects). A stablecoin
 * plan never renews by itself: an order renews it, also once ended.
 */
import type { PaymentMethod } from "../catalogue/CatalogueConfig.ts"

export type PlanPhase = "current" | "due" | "ended"

export interface PlanState {
  readonly phase: PlanPhase
  readonly paid_with: PaymentMethod
  readonly auto_renews: boolean
  readonly cancel_at_period_end: boolean
}

export type PlanEvent = "cancel" | "resume" | "period_end" | "renewed" | "renewal_failed"

export type PlanMove =
  | { readonly _tag: "Moved"; readonly state: PlanState }
  /** Why the event cannot apply to the plan; nothing changes. */
  | { readonly _tag: "Refused"; readonly reason: "ended" | "not_card" | "renewing" | "not_due" }

/** The state a newly paid plan starts in: card plans renew by themselves, stablecoin plans do not. */
export const startState = (paidWith: PaymentMethod): PlanState => ({
  phase: "current",
  paid_with: paidWith,
  auto_renews: paidWith === "card",
  cancel_at_period_end: false
})

/** The status the API shows of a phase. */
export const statusOf = (phase: PlanPhase): "active" | "ended" => (phase === "ended" ? "ended" : "active")

const moved = (state: PlanState): PlanMove => ({ _tag: "Moved", state })

/** The one transition function of plans. */
export const applyPlanEvent = (state: PlanState, event: PlanEvent): PlanMove => {
  switch (event) {
    case "period_end":
      if (state.phase !== "current") return { _tag: "Refused", reason: state.phase === "ended" ? "ended" : "not_due" }
      return moved({ ...state, phase: state.auto_renews ? "due" : "ended" })
    case "renewed":
      // A card plan is renewed by its charge while due; a stablecoin plan by an order, at any time.
      if (state.paid_with === "card" && state.phase !== "due") return { _tag: "Refused", reason: "not_due" }
      return moved({ ...state, phase: "current" })
    case "renewal_failed":
      if (state.phase !== "due") return { _tag: "Refused", reason: "not_due" }
      return moved({ ...state, phase: "ended", auto_renews: false, cancel_at_period_end: false })
    case "cancel":
    case "resume":
      if (state.phase === "ended") return { _tag: "Refused", reason: "ended" }
      if (state.paid_with !== "card") return { _tag: "Refused", reason: "not_card" }
      if (state.phase === "due") return { _tag: "Refused", reason: "renewing" }
      return moved({ ...state, auto_renews: event === "resume", cancel_at_period_end: event === "cancel" })
  }
}
