/**
 * The agent state machine (core/src/agents/AgentStates.ts), for any sequence of events from a
 * proposal: only the spec's transitions happen; at most one approval waits; revoked, expired and
 * failed are final, so once an agent is revoked or expired its keys never authorise a call again;
 * a key authorises only while the agent is active; a refused event changes nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { type AgentEvent, type AgentState, applyAgentEvent, authorises, proposedState } from "../../src/agents/AgentStates.ts"

const events: ReadonlyArray<AgentEvent> = ["propose_update", "propose_revoke", "collected", "link_expired", "refused", "delegation_ends"]

/** The spec's moves (docs/agents.md "States"), as (from status, pending, event) -> to status. */
const allowed = (before: AgentState, event: AgentEvent, after: AgentState): boolean => {
  const { pending, status } = before
  switch (event) {
    case "propose_update":
      return status === "active" && pending === null && after.status === "active" && after.pending === "update"
    case "propose_revoke":
      return status === "active" && pending !== "revoke" && after.status === "active" && after.pending === "revoke"
    case "collected":
      return pending !== null && after.pending === null &&
        after.status === (pending === "revoke" ? "revoked" : "active")
    case "link_expired":
    case "refused":
      return pending !== null && after.pending === null &&
        after.status === (pending === "create" ? (event === "refused" ? "failed" : "expired") : "active")
    case "delegation_ends":
      return status === "active" && after.status === "expired" && after.pending === null
  }
}

describe("the agent state machine", () => {
  it("property: every sequence of events moves only as the spec says", () => {
    fc.assert(fc.property(fc.array(fc.constantFrom(...events), { maxLength: 40 }), (sequence) => {
      let state = proposedState
      let ended = false
      for (const event of sequence) {
        const move = applyAgentEvent(state, event)
        if (move._tag === "Refused") continue
        expect(allowed(state, event, move.state), `${JSON.stringify(state)} --${event}--> ${JSON.stringify(move.state)}`).toBe(true)
        expect(ended, "a revoked, expired or failed agent never moves again").toBe(false)
        state = move.state
        if (state.status === "revoked" || state.status === "expired" || state.status === "failed") ended = true
        // At most one approval waits, and only an active agent (or one awaiting its creation) has one.
        if (state.pending !== null) expect(state.status === "active" || (state.status === "awaiting_approval" && state.pending === "create")).toBe(true)
        expect(authorises(state)).toBe(state.status === "active")
      }
      if (ended) {
        for (const e of events) expect(applyAgentEvent(state, e)._tag).toBe("Refused")
        expect(authorises(state)).toBe(false)
      }
    }), { numRuns: 2000 })
  })

  it("a second change waits for the first: propose_update while one is pending is refused", () => {
    const active: AgentState = { status: "active", pending: null }
    const updating = applyAgentEvent(active, "propose_update")
    expect(updating).toEqual({ _tag: "Moved", state: { status: "active", pending: "update" } })
    if (updating._tag === "Moved") expect(applyAgentEvent(updating.state, "propose_update")).toEqual({ _tag: "Refused", reason: "change_pending" })
  })
})
