/**
 * A plan's states and the moves between them (docs/plans.md "Statuses, listing, cancel and
 * resume"), as one pure function every use-case goes through. The spec shows `active`; the rest is
 * ours:
 *
 *   active (auto_renews)  --cancel-->  active (cancel_at_period_end)  --resume-->  active (auto_renews)
 *   active (any)          --period_end-->  ended        (until renewals: every plan ends then)
 *   ended                 is final: nothing moves it.
 *
 * Cancel and resume are for card plans; a stablecoin plan never renews by itself, so neither moves
 * it. Cancelling a cancelled plan, or resuming a renewing one, changes nothing (they are
 * idempotent, as a client retrying expects).
 */
import type { PaymentMethod } from "../Orders.ts"

export interface PlanState {
  readonly status: "active" | "ended"
  readonly paid_with: PaymentMethod
  readonly auto_renews: boolean
  readonly cancel_at_period_end: boolean
}

export type PlanEvent = "cancel" | "resume" | "period_end"

export type PlanMove =
  | { readonly _tag: "Moved"; readonly state: PlanState }
  /** Why the event cannot apply to the plan; nothing changes. */
  | { readonly _tag: "Refused"; readonly reason: "ended" | "not_card" }

/** The state a newly paid plan starts in: card plans renew by themselves, stablecoin plans do not. */
export const startState = (paidWith: PaymentMethod): PlanState => ({
  status: "active",
  paid_with: paidWith,
  auto_renews: paidWith === "card",
  cancel_at_period_end: false
})

/** The one transition function of plans. */
export const applyPlanEvent = (state: PlanState, event: PlanEvent): PlanMove => {
  if (state.status === "ended") return { _tag: "Refused", reason: "ended" }
  switch (event) {
    case "period_end":
      return { _tag: "Moved", state: { ...state, status: "ended" } }
    case "cancel":
    case "resume":
      if (state.paid_with !== "card") return { _tag: "Refused", reason: "not_card" }
      return {
        _tag: "Moved",
        state: { ...state, auto_renews: event === "resume", cancel_at_period_end: event === "cancel" }
      }
  }
}
