import type { AgentId, KeyId } from "../kernel/Ids.ts"
/**
 * What a budget limits, as a tagged union, and its name in the stores (docs/architecture.md
 * "Money"): the account's monthly limit ("account"), a key's ("key:<id>"), an agent's per UTC day
 * ("agent:<id>:day") and in total ("agent:<id>:total"). Core decides by the union; the name is
 * only how a store keys the budget's rows (`BudgetClaim.budget`, `LedgerStore.setBudgetLimit`),
 * written and read here alone.
 */
export type BudgetScope =
  | { readonly _tag: "Account" }
  | { readonly _tag: "Key"; readonly key_id: KeyId }
  | { readonly _tag: "AgentDay"; readonly agent_id: AgentId }
  | { readonly _tag: "AgentTotal"; readonly agent_id: AgentId }

export const BudgetScope = {
  account: { _tag: "Account" } as BudgetScope,
  key: (key_id: KeyId): BudgetScope => ({ _tag: "Key", key_id }),
  agentDay: (agent_id: AgentId): BudgetScope => ({ _tag: "AgentDay", agent_id }),
  agentTotal: (agent_id: AgentId): BudgetScope => ({ _tag: "AgentTotal", agent_id })
} as const

/** The budget's name in the stores. */
export const budgetName = (scope: BudgetScope): string => {
  switch (scope._tag) {
    case "Account":
      return "account"
    case "Key":
      return `key:${scope.key_id}`
    case "AgentDay":
      return `agent:${scope.agent_id}:day`
    case "AgentTotal":
      return `agent:${scope.agent_id}:total`
  }
}

const KEY = /^key:(.+)$/s
const AGENT = /^agent:([^\s:]+):(day|total)$/

/** The scope a stored budget name stands for, or undefined for a name no scope has. */
export const budgetScopeOf = (name: string): BudgetScope | undefined => {
  if (name === "account") return BudgetScope.account
  const key = KEY.exec(name)
  if (key !== null) return BudgetScope.key(key[1]!)
  const agent = AGENT.exec(name)
  if (agent === null) return undefined
  return agent[2] === "day" ? BudgetScope.agentDay(agent[1]!) : BudgetScope.agentTotal(agent[1]!)
}
