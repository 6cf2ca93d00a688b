/**
 * The one-off backfill of the renewing index (docs/lambda-ledger.md "Backfilling the renewing
 * plans index"): plans written before the store kept the `PLANRENEWING` index
 * (DynamoPlanRenewals.ts) have no index item, so `dueRenewals` never finds them and the renewal
 * job never renews them. This writes, for every plan item with `auto_renews` true, its index item
 * `PLANRENEWING` / `<current_period_end>#<plan id>` when missing, on a live table.
 *
 * 1. One paginated Scan (eventually consistent) keeps the renewing plan items (`id`,
 *    `current_period_end`) and the index items already there. A Scan is no snapshot, so the
 *    items are all read before anything is written (a plan may come before its index item).
 * 2. For each plan whose index item the Scan did not see, one TransactWriteItems: a ConditionCheck
 *    that the plan still has `auto_renews = true` and the period end read (item 0), and the Put of
 *    the index item with `attribute_not_exists(pk)` (item 1). Item 0 failing means the plan
 *    stopped renewing or moved its period since the Scan: the live code moved its index item in
 *    that write, so there is nothing to do. Item 1 failing means the live code wrote it meanwhile.
 *    Either way it is skipped; the plan item itself is never written (its `version` is left as is).
 *
 * Why an index item seen by the Scan needs nothing: only the current store writes index items, and
 * it keeps each one in step with its plan in every later write. Why this is safe beside the live
 * code: every write that changes `auto_renews` or `current_period_end` is a transaction on the plan
 * item, so it is ordered before the backfill's (whose check then fails) or after it (and then
 * deletes or moves the index item written, as for any renewing plan). Running it again writes
 * nothing. Writes go one at a time: they all land in the one `PLANRENEWING` partition, which the
 * live code writes too. Assumes the store that keeps the index is deployed to every function.
 */
import { Effect, Schema } from "effect"
import { bool, decode, keyOf, str, StringAttr, TimestampAttr } from "./DynamoAttributes.ts"
import { makeItemTable } from "./DynamoErrors.ts"
import { RenewalKeys } from "./DynamoPlanRenewals.ts"
import { PlanKeys } from "./DynamoPlanStore.ts"
import { DynamoConfig } from "./DynamoTable.ts"

/** What happened to one plan that had no index item in the Scan. */
export type PlanOutcome = "written" | "skipped" | "would_write"

export interface PlanReport {
  readonly id: string
  readonly current_period_end: string
  readonly outcome: PlanOutcome
}

export interface BackfillPlanRenewalsSummary {
  /** Plan items with `auto_renews` true that the Scan found. */
  readonly scanned: number
  /** Of those, the ones whose index item the Scan also found (nothing to do). */
  readonly indexed: number
  /** The others: without their index item in the Scan (= written + skipped, in a real run). */
  readonly missing: number
  /** Index items written. */
  readonly written: number
  /** Changed since the Scan (stopped renewing, moved its period, or indexed by the live code). */
  readonly skipped: number
}

export interface BackfillPlanRenewalsOptions {
  /** Scan and report what is missing; write nothing. */
  readonly dryRun?: boolean | undefined
  /** Told about each plan without an index item as soon as it is done (the command prints it). */
  readonly onPlan?: ((report: PlanReport) => Effect.Effect<void>) | undefined
}

const PlanItem = Schema.Struct({ id: StringAttr, current_period_end: TimestampAttr })
const IndexItem = Schema.Struct({ sk: StringAttr })

// Derived from the store's own keys, so the filter matches exactly its items.
const PLAN_KEY = PlanKeys.subscription("")
const RENEWING_PK = RenewalKeys.renewing("", "").pk

export const backfillPlanRenewals = Effect.fn("BackfillPlanRenewals")(function*(
  options: BackfillPlanRenewalsOptions = {}
) {
  const { client, tableName } = yield* DynamoConfig
  const { scanItems, transact } = makeItemTable(client, tableName, "BackfillPlanRenewals")
  const decodePlan = decode(PlanItem)
  const decodeIndex = decode(IndexItem)

  // Step 1. `sk = "SUBSCRIPTION"` keeps `SUBSCRIPTIONORDER#` items out of the prefix match.
  const plans: Array<typeof PlanItem.Type> = []
  const indexed = new Set<string>()
  const items = yield* scanItems({
    FilterExpression: "pk = :renewing OR (begins_with(pk, :plan) AND sk = :planSk AND #renews = :true)",
    ProjectionExpression: "pk, sk, #id, #end",
    ExpressionAttributeNames: { "#id": "id", "#end": "current_period_end", "#renews": "auto_renews" },
    ExpressionAttributeValues: {
      ":renewing": str(RENEWING_PK),
      ":plan": str(PLAN_KEY.pk),
      ":planSk": str(PLAN_KEY.sk),
      ":true": bool(true)
    }
  })
  for (const item of items) {
    if (item.pk?.S === RENEWING_PK) indexed.add((yield* decodeIndex(item)).sk)
    else plans.push(yield* decodePlan(item))
  }

  // Step 2, one plan at a time, in id order (a stable report).
  const missing = plans
    .filter((p) => !indexed.has(RenewalKeys.renewing(p.current_period_end, p.id).sk))
    .sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  let written = 0
  for (const plan of missing) {
    let outcome: PlanOutcome = "would_write"
    if (options.dryRun !== true) {
      const result = yield* transact("backfill", [
        {
          ConditionCheck: {
            TableName: tableName,
            Key: keyOf(PlanKeys.subscription(plan.id)),
            ConditionExpression: "#renews = :true AND #end = :end",
            ExpressionAttributeNames: { "#renews": "auto_renews", "#end": "current_period_end" },
            ExpressionAttributeValues: { ":true": bool(true), ":end": str(plan.current_period_end) }
          }
        },
        {
          Put: {
            TableName: tableName,
            // As renewingChanges writes it.
            Item: { ...keyOf(RenewalKeys.renewing(plan.current_period_end, plan.id)), subscription_id: str(plan.id) },
            ConditionExpression: "attribute_not_exists(pk)"
          }
        }
      ])
      outcome = result.committed ? "written" : "skipped"
      if (result.committed) written++
    }
    if (options.onPlan !== undefined) {
      yield* options.onPlan({ id: plan.id, current_period_end: plan.current_period_end, outcome })
    }
  }
  const dry = options.dryRun === true
  return {
    scanned: plans.length,
    indexed: plans.length - missing.length,
    missing: missing.length,
    written,
    skipped: dry ? 0 : missing.length - written
  } satisfies BackfillPlanRenewalsSummary
})
