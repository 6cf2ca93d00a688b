/**
 * The plan state machine (core/src/plans/PlanStates.ts), for any sequence of events: ended is
 * final; only card plans move on cancel and resume, and then auto_renews and cancel_at_period_end
 * are each other's opposite; a stablecoin plan never renews by itself; a refused event changes
 * nothing; cancel and resume are idempotent.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { applyPlanEvent, type PlanEvent, type PlanState, startState } from "@model-platform/core/plans/PlanStates"

const eventArb = fc.constantFrom<PlanEvent>("cancel", "resume", "cancel", "resume", "period_end")

describe("the plan state machine", () => {
  it("property: every sequence of events keeps the invariants of docs/plans.md", () => {
    fc.assert(fc.property(fc.constantFrom("card" as const, "stablecoin" as const), fc.array(eventArb, { maxLength: 30 }), (paidWith, events) => {
      let state: PlanState = startState(paidWith)
      expect(state).toEqual({ status: "active", paid_with: paidWith, auto_renews: paidWith === "card", cancel_at_period_end: false })
      for (const event of events) {
        const before = state
        const move = applyPlanEvent(state, event)
        if (move._tag === "Refused") {
          // Refused: the plan has ended, or a stablecoin plan was asked to cancel or resume.
          expect(before.status === "ended" || (before.paid_with !== "card" && event !== "period_end")).toBe(true)
          continue
        }
        state = move.state
        expect(before.status).toBe("active")
        expect(state.paid_with).toBe(paidWith)
        if (event === "period_end") expect(state).toEqual({ ...before, status: "ended" })
        else {
          expect(state.status).toBe("active")
          expect([state.auto_renews, state.cancel_at_period_end]).toEqual(event === "resume" ? [true, false] : [false, true])
          // Idempotent: the same event again moves nowhere else.
          expect(applyPlanEvent(state, event)).toEqual({ _tag: "Moved", state })
        }
        if (state.paid_with === "card") expect(state.auto_renews).toBe(!state.cancel_at_period_end)
        else expect([state.auto_renews, state.cancel_at_period_end]).toEqual([false, false])
      }
      // Ended is final.
      const ended = applyPlanEvent({ ...state, status: "ended" }, "resume")
      expect(ended).toEqual({ _tag: "Refused", reason: "ended" })
    }), { numRuns: 500 })
  })
})
