/**
 * The budget part of the ledger store on DynamoDB (DynamoLedgerStore.ts; docs/lambda-ledger.md
 * "Budgets"; docs/billing.md "Monthly limits"). Two items in the account's ledger partition:
 * - a limit item (`BUDGETLIMIT#<budget>`: `limit`), present only while a limit is set;
 * - a month item (`BUDGET#<month>#<budget>`: `spent`, `held` and `used` = spent + held).
 *
 * A condition cannot add, so `used + amount <= limit` is written as `used <= :max` with
 * :max = limit - amount, computed from the limit read just before the transaction; the same
 * transaction holds a ConditionCheck that the limit item is still as read (its `limit` equal, or
 * no limit). So the transaction commits only if, at its commit, the limit in force is the one the
 * check used and the month's spent + held + amount is within it. A limit changed in between
 * cancels it (the reserve reads the limits again and retries); a month item over its limit
 * answers "over_budget". Releases and charges are ADDs in the transaction that finishes the
 * reservation (`used` moves with `held` and `spent`).
 */
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb"
import { type BudgetClaim, budgetLimitProblem, type BudgetState, type Reservation } from "@model-platform/core/ledger"
import { Effect, Schema } from "effect"
import { BigIntAttr, decode, type Item, keyOf, num, str, StringAttr } from "./DynamoAttributes.ts"
import type { makeItemTable } from "./DynamoErrors.ts"
import type { ItemKey } from "./DynamoTable.ts"

const ledgerPk = (accountId: string) => `LEDGER#${accountId}`

export const BUDGET_PREFIX = { limit: "BUDGETLIMIT#", month: "BUDGET#" } as const

export const BudgetKeys = {
  limit: (accountId: string, budget: string): ItemKey => ({ pk: ledgerPk(accountId), sk: `${BUDGET_PREFIX.limit}${budget}` }),
  month: (accountId: string, month: string, budget: string): ItemKey => ({
    pk: ledgerPk(accountId),
    sk: `${BUDGET_PREFIX.month}${month}#${budget}`
  })
} as const

const LimitItem = Schema.Struct({ budget: StringAttr, limit: BigIntAttr })
const MonthItem = Schema.Struct({ budget: StringAttr, spent: BigIntAttr, held: BigIntAttr, used: BigIntAttr })

/** A reservation's claims as its items keep them (budget and month, in claim order). */
export const BudgetsAttr = Schema.Struct({
  L: Schema.Array(Schema.Struct({ M: Schema.Struct({ budget: StringAttr, month: StringAttr }) }))
})

export const budgetsAttribute = (claims: ReadonlyArray<Pick<BudgetClaim, "budget" | "month">> | undefined): Item =>
  claims === undefined || claims.length === 0
    ? {}
    : { budgets: { L: claims.map((c) => ({ M: { budget: str(c.budget), month: str(c.month) } })) } }

export const budgetsOf = (attr: typeof BudgetsAttr.Type | undefined): Pick<Reservation, "budgets"> =>
  attr === undefined || attr.L.length === 0 ? {} : { budgets: attr.L.map(({ M }) => ({ budget: M.budget, month: M.month })) }

type ItemTable = ReturnType<typeof makeItemTable>

export const makeBudgets = (tableName: string, table: ItemTable) => {
  const decodeLimit = decode(LimitItem)
  const decodeMonth = decode(MonthItem)
  const die = (operation: string, problem: string) => Effect.die(new Error(`LedgerStore.${operation}: ${problem}`))

  const accountItems = (accountId: string, prefix: string) =>
    table.queryItems({
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
      ExpressionAttributeValues: { ":pk": str(ledgerPk(accountId)), ":prefix": str(prefix) }
    })

  /** The account's limits set, by budget (one Query). */
  const limits = (accountId: string) =>
    Effect.gen(function*() {
      const found = new Map<string, bigint>()
      for (const item of yield* accountItems(accountId, BUDGET_PREFIX.limit)) {
        const { budget, limit } = yield* decodeLimit(item)
        found.set(budget, limit)
      }
      return found
    })

  /**
   * Per claim, in claim order: a ConditionCheck that the budget's limit is still `limits` says,
   * then the month item's update holding `amount`, conditioned on the limit in force. Two items
   * per claim (`claimItemsPerClaim`); index 2i is the check, 2i + 1 the hold.
   */
  const claimItems = (
    accountId: string,
    claims: ReadonlyArray<BudgetClaim>,
    amount: bigint,
    set: ReadonlyMap<string, bigint>
  ): Array<TransactWriteItem> =>
    claims.flatMap((claim): Array<TransactWriteItem> => {
      const own = set.get(claim.budget)
      const inForce = own ?? claim.default_limit
      const max = inForce === null ? undefined : inForce - amount
      return [
        {
          ConditionCheck: {
            TableName: tableName,
            Key: keyOf(BudgetKeys.limit(accountId, claim.budget)),
            ConditionExpression: own === undefined ? "attribute_not_exists(#limit)" : "#limit = :limit",
            ExpressionAttributeNames: { "#limit": "limit" },
            ...(own === undefined ? {} : { ExpressionAttributeValues: { ":limit": num(own) } })
          }
        },
        {
          Update: {
            TableName: tableName,
            Key: keyOf(BudgetKeys.month(accountId, claim.month, claim.budget)),
            UpdateExpression: "SET #account = :account, #budget = :budget, #month = :month " +
              "ADD #held :amount, #used :amount, #spent :zero",
            // A missing item has used 0: it fits when max >= 0.
            ...(max === undefined ? {} : {
              ConditionExpression: max >= 0n ? "attribute_not_exists(#used) OR #used <= :max" : "#used <= :max"
            }),
            ExpressionAttributeNames: {
              "#account": "account_id",
              "#budget": "budget",
              "#month": "month",
              "#held": "held",
              "#used": "used",
              "#spent": "spent"
            },
            ExpressionAttributeValues: {
              ":account": str(accountId),
              ":budget": str(claim.budget),
              ":month": str(claim.month),
              ":amount": num(amount),
              ":zero": num(0n),
              ...(max === undefined ? {} : { ":max": num(max) })
            }
          }
        }
      ]
    })

  /** Releases `amount` from each claim's month and adds `charged` to its spent (0: void, expiry). */
  const releaseItems = (
    accountId: string,
    claims: ReadonlyArray<Pick<BudgetClaim, "budget" | "month">>,
    amount: bigint,
    charged: bigint
  ): Array<TransactWriteItem> =>
    claims.map((claim) => ({
      Update: {
        TableName: tableName,
        Key: keyOf(BudgetKeys.month(accountId, claim.month, claim.budget)),
        UpdateExpression: "ADD #held :held, #spent :spent, #used :used",
        ExpressionAttributeNames: { "#held": "held", "#spent": "spent", "#used": "used" },
        ExpressionAttributeValues: { ":held": num(-amount), ":spent": num(charged), ":used": num(charged - amount) }
      }
    }))

  // One item transaction: it waits out (retries) a transaction holding the item, as every write here.
  const setBudgetLimit = Effect.fn("LedgerStore.setBudgetLimit")(
    function*(accountId: string, budget: string, limit: bigint | null) {
      const problem = budgetLimitProblem(budget, limit)
      if (problem !== undefined) return yield* die("setBudgetLimit", problem)
      const key = BudgetKeys.limit(accountId, budget)
      const write: TransactWriteItem = limit === null
        ? table.deleteItem(key)
        : {
          Put: {
            TableName: tableName,
            Item: { ...keyOf(key), account_id: str(accountId), budget: str(budget), limit: num(limit) }
          }
        }
      const result = yield* table.transact("setBudgetLimit", [write])
      if (!result.committed) return yield* die("setBudgetLimit", "an unconditional write was cancelled")
    }
  )

  const budgets = Effect.fn("LedgerStore.budgets")(function*(accountId: string, month: string) {
    const [set, items] = yield* Effect.all([
      limits(accountId),
      accountItems(accountId, `${BUDGET_PREFIX.month}${month}#`)
    ], { concurrency: "unbounded" })
    const found = new Map<string, BudgetState>()
    for (const [budget, limit] of set) found.set(budget, { budget, limit, spent: 0n, held: 0n })
    for (const item of items) {
      const m = yield* decodeMonth(item)
      if (m.used !== m.spent + m.held) return yield* die("budgets", `${month} ${m.budget}: used is not spent + held`)
      if (m.spent === 0n && m.held === 0n) continue
      found.set(m.budget, { budget: m.budget, limit: set.get(m.budget) ?? null, spent: m.spent, held: m.held })
    }
    return [...found.values()].sort((a, b) => a.budget < b.budget ? -1 : a.budget > b.budget ? 1 : 0)
  })

  return { limits, claimItems, releaseItems, setBudgetLimit, budgets } as const
}
