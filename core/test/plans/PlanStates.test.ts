/**
 * The plan state machine (core/src/plans/PlanStates.ts), for any sequence of events:
 * - a plan ends only at its period's end without auto_renews, or when its renewal fails; only a
 *   renewal moves it back to current, and only a stablecoin plan's renewal (by order) revives an
 *   ended plan;
 * - a card plan is `due` only while it renews by itself; a stablecoin plan is never due and never
 *   renews by itself;
 * - only card plans move on cancel and resume, while current, and then auto_renews and
 *   cancel_at_period_end are each other's opposite; cancel and resume are idempotent;
 * - a refused event changes nothing (the state is not even looked at again).
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { applyPlanEvent, type PlanEvent, type PlanState, startState } from "../../src/plans/PlanStates.ts"

const eventArb = fc.constantFrom<PlanEvent>("cancel", "resume", "cancel", "resume", "period_end", "period_end", "renewed", "renewal_failed")

describe("the plan state machine", () => {
  it("property: every sequence of events keeps the invariants of docs/plans.md", () => {
    fc.assert(fc.property(fc.constantFrom("card" as const, "stablecoin" as const), fc.array(eventArb, { maxLength: 40 }), (paidWith, events) => {
      let state: PlanState = startState(paidWith)
      expect(state).toEqual({ phase: "current", paid_with: paidWith, auto_renews: paidWith === "card", cancel_at_period_end: false })
      for (const event of events) {
        const before = state
        const move = applyPlanEvent(state, event)
        if (move._tag === "Refused") continue
        state = move.state
        expect(state.paid_with).toBe(paidWith)
        switch (event) {
          case "period_end":
            expect(before.phase).toBe("current")
            expect(state).toEqual({ ...before, phase: before.auto_renews ? "due" : "ended" })
            break
          case "renewed":
            expect(paidWith === "stablecoin" || before.phase === "due").toBe(true)
            expect(state).toEqual({ ...before, phase: "current" })
            break
          case "renewal_failed":
            expect(before.phase).toBe("due")
            expect(state).toEqual({ ...before, phase: "ended", auto_renews: false, cancel_at_period_end: false })
            break
          case "cancel":
          case "resume":
            expect([before.phase, paidWith]).toEqual(["current", "card"])
            expect(state.phase).toBe("current")
            expect([state.auto_renews, state.cancel_at_period_end]).toEqual(event === "resume" ? [true, false] : [false, true])
            // Idempotent: the same event again moves nowhere else.
            expect(applyPlanEvent(state, event)).toEqual({ _tag: "Moved", state })
        }
        if (paidWith === "stablecoin") {
          expect([state.auto_renews, state.cancel_at_period_end, state.phase === "due"]).toEqual([false, false, false])
        } else if (state.phase !== "ended") {
          expect(state.auto_renews).toBe(!state.cancel_at_period_end)
          if (state.phase === "due") expect(state.auto_renews).toBe(true)
        } else {
          // An ended card plan stays ended: nothing moves it.
          for (const e of ["cancel", "resume", "period_end", "renewed", "renewal_failed"] as const) {
            expect(applyPlanEvent(state, e)._tag).toBe("Refused")
          }
        }
      }
    }), { numRuns: 1000 })
  })

  it("the spec's cancel and resume: a current card plan stays active either way", () => {
    const cancelled = applyPlanEvent(startState("card"), "cancel")
    expect(cancelled).toEqual({ _tag: "Moved", state: { phase: "current", paid_with: "card", auto_renews: false, cancel_at_period_end: true } })
    expect(applyPlanEvent(startState("stablecoin"), "cancel")).toEqual({ _tag: "Refused", reason: "not_card" })
  })
})
