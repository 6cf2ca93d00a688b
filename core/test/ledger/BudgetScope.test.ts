/** Budget scopes and their names in the stores (core/src/ledger/BudgetScope.ts). */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { budgetName, BudgetScope, budgetScopeOf } from "../../src/ledger/BudgetScope.ts"
import { budgetClaimsProblem } from "../../src/ledger/LedgerStoreRules.ts"

const id = fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/)
const scope: fc.Arbitrary<BudgetScope> = fc.oneof(
  fc.constant(BudgetScope.account),
  id.map(BudgetScope.key),
  id.map(BudgetScope.agentDay),
  id.map(BudgetScope.agentTotal)
)

describe("BudgetScope", () => {
  it("names each scope as the stores key it, and reads every name back to its scope", () => {
    expect(budgetName(BudgetScope.account)).toBe("account")
    expect(budgetName(BudgetScope.key("key_1"))).toBe("key:key_1")
    expect(budgetName(BudgetScope.agentDay("agt_1"))).toBe("agent:agt_1:day")
    expect(budgetName(BudgetScope.agentTotal("agt_1"))).toBe("agent:agt_1:total")
    fc.assert(fc.property(scope, (s) => {
      expect(budgetScopeOf(budgetName(s))).toEqual(s)
    }))
  })

  it("a name no scope has is none, and a claim on it is refused", () => {
    for (const name of ["", "accounts", "key:", "agent:a:week", "agent::day", "agent:a b:day", "team:1"]) {
      expect(budgetScopeOf(name)).toBeUndefined()
      expect(budgetClaimsProblem([{ budget: name, month: "2026-11", default_limit: null }])).toContain("a budget is")
    }
  })

  it("each scope counts in its own period: a month, an agent's UTC day, an agent's total", () => {
    const claim = (s: BudgetScope, month: string) => budgetClaimsProblem([{ budget: budgetName(s), month, default_limit: null }])
    expect(claim(BudgetScope.key("k"), "2026-11")).toBeUndefined()
    expect(claim(BudgetScope.key("k"), "2026-11-26")).toContain("YYYY-MM")
    expect(claim(BudgetScope.agentDay("a"), "2026-11-26")).toBeUndefined()
    expect(claim(BudgetScope.agentDay("a"), "2026-11")).toContain("a day")
    expect(claim(BudgetScope.agentTotal("a"), "total")).toBeUndefined()
    expect(claim(BudgetScope.agentTotal("a"), "2026-11")).toContain("total")
  })
})
