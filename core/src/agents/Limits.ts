/**
 * What an agent's key may do at the gateway (docs/agents.md "Agent keys at the gateway"): whether
 * its agent lets it call at all, and the agent's credit limits as ledger budgets, claimed in the
 * same store step as the balance and every other budget (GatewayStore.admit), so concurrent calls
 * cannot overshoot them:
 *
 * - "agent:<id>:day" counts in the UTC day of the admission (YYYY-MM-DD), at daily_limit;
 * - "agent:<id>:total" counts in the period "total", at total_limit.
 *
 * The limits travel as the claims' default limits (no limit is ever set on these budgets), so the
 * approved settings in force are the limits, and an approved change applies from the next call.
 * Like the monthly limits, they count what credits pay (not allowances or the trial).
 */
import { dayOf } from "../kernel/Time.ts"
import { budgetName, BudgetScope, budgetScopeOf } from "../ledger/BudgetScope.ts"
import type { BudgetClaim } from "../ledger/LedgerStore.ts"
import type { AgentRecord } from "./Records.ts"
import type { AgentId } from "../kernel/Ids.ts"

export const agentDayBudget = (agentId: AgentId): string => budgetName(BudgetScope.agentDay(agentId))
export const agentTotalBudget = (agentId: AgentId): string => budgetName(BudgetScope.agentTotal(agentId))
/** The period of every total budget. */
export const TOTAL_PERIOD = "total"

/** The budget claims of a call of `agent`'s key admitted at `now`: its limits that are set. */
export const agentBudgetClaims = (agent: AgentRecord, now: number): ReadonlyArray<BudgetClaim> => {
  const settings = agent.settings
  if (settings === null) return []
  const claims: Array<BudgetClaim> = []
  if (settings.daily_limit !== null) claims.push({ budget: agentDayBudget(agent.id), month: dayOf(now), default_limit: settings.daily_limit })
  if (settings.total_limit !== null) claims.push({ budget: agentTotalBudget(agent.id), month: TOTAL_PERIOD, default_limit: settings.total_limit })
  return claims
}

/** Which of an agent's limits a refused budget is, or undefined when it is not an agent's. */
export const agentLimitOf = (budget: string): "daily" | "total" | undefined => {
  const scope = budgetScopeOf(budget)
  return scope?._tag === "AgentDay" ? "daily" : scope?._tag === "AgentTotal" ? "total" : undefined
}

/**
 * Whether a key of `agent` may call at `now`: "ok" while the agent is active and its delegation
 * runs; "expired" once the delegation has ended (403 agent_expired); "revoked" for a revoked
 * agent, or one that is gone or was never active (401: the key no longer identifies anyone).
 */
export const agentGate = (agent: AgentRecord | undefined, now: number): "ok" | "expired" | "revoked" => {
  if (agent === undefined) return "revoked"
  if (agent.status === "expired") return "expired"
  if (agent.status !== "active") return "revoked"
  return agent.expires_at !== null && now >= Date.parse(agent.expires_at) ? "expired" : "ok"
}
