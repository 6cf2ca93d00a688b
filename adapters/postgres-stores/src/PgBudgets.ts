/**
 * The budget part of the ledger store on Postgres (docs/billing.md "Monthly limits"): how claims
 * travel to the functions of migration 0012_ledger_budgets (three parallel arrays: budget, month,
 * default limit or NULL), how a reservation row's claims come back, and the two budget
 * operations of the port. Checking and holding happen inside ledger_reserve and
 * ledger_reserve_batch (migration 0024; ledger_reserve_in_order and gateway_admit_batch call it;
 * see 0012 for the lock order).
 *
 * Grants (docs/billing.md "Allowances and the trial", migration 0017_ledger_grants) are kept in
 * the same month rows (budget = the grant, month = its period) and travel the same way (parallel
 * arrays: grant, period, size or amount); `budgets` lists only budget rows, `grants` only grant rows.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import {
  type BudgetClaim,
  budgetLimitProblem,
  type BudgetState,
  type GrantClaim,
  type GrantHold,
  type GrantState,
  type Reservation
} from "@model-platform/core/ledger"

/**
 * A reservation's claims as the functions take them. `defaults` go in JSON (null: none);
 * `defaultsText` as a query parameter, "" for none, turned back into bigint[] by the query (the
 * driver cannot type an array holding only nulls).
 */
export const claimArrays = (claims: ReadonlyArray<BudgetClaim> | undefined) => ({
  budgets: (claims ?? []).map((c) => c.budget),
  months: (claims ?? []).map((c) => c.month),
  defaults: (claims ?? []).map((c) => c.default_limit),
  defaultsText: (claims ?? []).map((c) => c.default_limit?.toString() ?? "")
})

/** The `budgets` of a reservation row (budgets, budget_months): absent when it claims none. */
export const budgetsOf = (row: {
  readonly budgets: ReadonlyArray<string>
  readonly budget_months: ReadonlyArray<string>
}): Pick<Reservation, "budgets"> =>
  row.budgets.length === 0
    ? {}
    : { budgets: row.budgets.map((budget, i) => ({ budget, month: row.budget_months[i]! })) }

/** Grant claims (OrderedReservation.grants) as the functions take them. */
export const grantClaimArrays = (claims: ReadonlyArray<GrantClaim> | undefined) => ({
  grants: (claims ?? []).map((c) => c.grant),
  periods: (claims ?? []).map((c) => c.period),
  sizes: (claims ?? []).map((c) => c.size)
})

/** Grant holds or charges (NewReservation.grants, Settlement.grants) as the functions take them. */
export const grantHoldArrays = (holds: ReadonlyArray<GrantHold> | undefined) => ({
  grants: (holds ?? []).map((h) => h.grant),
  periods: (holds ?? []).map((h) => h.period),
  amounts: (holds ?? []).map((h) => h.amount)
})

/** Grant holds from the functions' parallel arrays (NULL: none), in their order. */
export const grantHoldsOf = (
  grants: ReadonlyArray<string> | null,
  periods: ReadonlyArray<string> | null,
  amounts: ReadonlyArray<string | bigint> | null
): Array<GrantHold> =>
  (grants ?? []).map((grant, i) => ({ grant, period: periods![i]!, amount: BigInt(amounts![i]!) }))

/** The `grants` of a reservation row (grant_names, grant_periods, grant_amounts): absent when it holds none. */
export const grantsOf = (row: {
  readonly grant_names: ReadonlyArray<string>
  readonly grant_periods: ReadonlyArray<string>
  readonly grant_amounts: ReadonlyArray<string | bigint>
}): Pick<Reservation, "grants"> =>
  row.grant_names.length === 0 ? {} : { grants: grantHoldsOf(row.grant_names, row.grant_periods, row.grant_amounts) }

const byBudget = (a: BudgetState, b: BudgetState) => a.budget < b.budget ? -1 : a.budget > b.budget ? 1 : 0

const byGrant = (a: GrantState, b: GrantState) =>
  a.grant < b.grant ? -1 : a.grant > b.grant ? 1 : a.period < b.period ? -1 : a.period > b.period ? 1 : 0

export const makeBudgets = (sql: SqlClient.SqlClient) => {
  const setBudgetLimit = (accountId: string, budget: string, limit: bigint | null) => {
    const problem = budgetLimitProblem(budget, limit)
    if (problem !== undefined) return Effect.die(new Error(`LedgerStore.setBudgetLimit: ${problem}`))
    const write = limit === null
      ? sql`DELETE FROM ledger_budget_limits WHERE account_id = ${accountId} AND budget = ${budget}`
      : sql`INSERT INTO ledger_budget_limits (account_id, budget, monthly_limit) VALUES (${accountId}, ${budget}, ${limit})
            ON CONFLICT (account_id, budget) DO UPDATE SET monthly_limit = EXCLUDED.monthly_limit`
    return write.pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("LedgerStore.setBudgetLimit"))
  }

  // Every budget with a limit, or with anything spent or held in the month (rows at zero are
  // left by refused or released claims).
  const budgets = (accountId: string, month: string) =>
    sql<{ readonly budget: string; readonly lim: bigint | null; readonly spent: bigint | null; readonly held: bigint | null }>`
      SELECT coalesce(l.budget, m.budget) AS budget, l.monthly_limit AS lim, m.spent, m.held
      FROM (SELECT budget, monthly_limit FROM ledger_budget_limits WHERE account_id = ${accountId}) AS l
      FULL JOIN (SELECT budget, spent, held FROM ledger_budget_months
                 WHERE account_id = ${accountId} AND month = ${month} AND (spent <> 0 OR held <> 0)
                   AND (budget = 'account' OR budget LIKE 'key:%' OR budget LIKE 'agent:%')) AS m
        ON m.budget = l.budget`.pipe(
      Effect.map((rows) =>
        rows
          .map((row): BudgetState => ({
            budget: row.budget,
            limit: row.lim === null ? null : BigInt(row.lim),
            spent: BigInt(row.spent ?? 0),
            held: BigInt(row.held ?? 0)
          }))
          .sort(byBudget)
      ),
      Effect.orDie,
      Effect.withSpan("LedgerStore.budgets")
    )

  // Grant rows are those whose name is a grant's (budgets are "account", "key:<id>" and
  // "agent:<id>:day|total"); rows at
  // zero are left by refused or released holds. Sorted here as JS compares strings (the port's order).
  const grants = (accountId: string) =>
    sql<{ readonly name: string; readonly period: string; readonly spent: bigint; readonly held: bigint }>`
      SELECT budget AS name, month AS period, spent, held FROM ledger_budget_months
      WHERE account_id = ${accountId} AND (budget LIKE 'allowance:%' OR budget LIKE 'trial:%')
        AND (spent <> 0 OR held <> 0)`.pipe(
      Effect.map((rows) =>
        rows
          .map((row): GrantState => ({ grant: row.name, period: row.period, spent: BigInt(row.spent), held: BigInt(row.held) }))
          .sort(byGrant)
      ),
      Effect.orDie,
      Effect.withSpan("LedgerStore.grants")
    )

  return { setBudgetLimit, budgets, grants } as const
}
