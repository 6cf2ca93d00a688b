/**
 * The renewal side of the DynamoDB plan store (DynamoPlanStore.ts, whose header lists every item):
 * `setRenewal`, `renew`, `failRenewal`, `dueRenewals`, and the sparse index of renewing plans
 * that lets `dueRenewals` find them without a secondary index.
 *
 * - The renewing index is one partition, `PLANRENEWING`, holding `<current_period_end>#<plan id>`
 *   (pointing at the plan) for exactly the plans whose `auto_renews` is true. Timestamps are
 *   fixed width, so the sort key orders by end, then by id (`earliestEndFirst`).
 * - Every write that changes a plan's `auto_renews` or `current_period_end` moves its index item
 *   in the same TransactWriteItems (`renewingChanges`). The plan's `version` (+1 on every write)
 *   makes a read-then-write safe: `setRenewal` and `renew` read the plan, decide its index items
 *   from it, and write conditioned on the version read; a failed condition means it changed, and
 *   it is read again. `failRenewal` needs no read: its condition fixes the period end, so the
 *   only index item it can have is `<after_period_end>#<id>`, deleted unconditionally.
 * - Once per order: `renew` creates `PLANRENEWAL#<order id>` with `attribute_not_exists(pk)` in
 *   its transaction (item 0); that condition failing is "already_renewed", the plan's (item 1)
 *   alone is "stale" when the plan read had another period end, else a lost race (read again).
 */
import type { AttributeValue, TransactWriteItem } from "@aws-sdk/client-dynamodb"
import {
  earliestEndFirst,
  type PlanRenewal,
  type RenewOutcome,
  renewalProblem,
  type SubscriptionRecord
} from "@model-platform/core/plans"
import type { Timestamp } from "@model-platform/core/kernel"
import { Effect, Schema } from "effect"
import { bool, decode, type Item, keyOf, num, str, StringAttr } from "./DynamoAttributes.ts"
import type { makeItemTable } from "./DynamoErrors.ts"
import type { ItemKey } from "./DynamoTable.ts"

/** The partition of the renewing index. */
const RENEWING_PK = "PLANRENEWING"

export const RenewalKeys = {
  /** Remembers the order that renewed a plan: at most one renewal per order. */
  renewalOrder: (orderId: string): ItemKey => ({ pk: `PLANRENEWAL#${orderId}`, sk: "PLANRENEWAL" }),
  /** Lists a renewing plan by its period end, then id. */
  renewing: (periodEnd: string, id: string): ItemKey => ({ pk: RENEWING_PK, sk: `${periodEnd}#${id}` })
} as const

/** What a plan's index item depends on. */
type Renewing = Pick<SubscriptionRecord, "id" | "auto_renews" | "current_period_end">

/** A plan as read, with its version (undefined on items written before plans had one). */
export interface StoredPlan {
  readonly plan: SubscriptionRecord
  readonly version: number | undefined
}

/** What the renewals need of the plan store. */
export interface PlanItems {
  readonly tableName: string
  readonly table: ReturnType<typeof makeItemTable>
  readonly planKey: (id: string) => ItemKey
  readonly readPlan: (id: string) => Effect.Effect<StoredPlan | undefined>
  readonly decodePlan: (item: Item) => Effect.Effect<SubscriptionRecord>
  readonly die: (operation: string, problem: string) => Effect.Effect<never>
}

/** A lost optimistic race reads again; this many rounds without progress is a defect. */
const MAX_ATTEMPTS = 50

const Pointer = Schema.Struct({ subscription_id: StringAttr })

/**
 * The index writes taking a plan from `was` (undefined: a new plan) to `next`: delete the old
 * item, put the new one, nothing when both are the same item (one item may appear once in a
 * transaction). Plain puts and deletes: the plan's own condition is what guards them.
 */
export const renewingChanges = (tableName: string, was: Renewing | undefined, next: Renewing): Array<TransactWriteItem> => {
  const old = was?.auto_renews === true ? RenewalKeys.renewing(was.current_period_end, was.id) : undefined
  const now = next.auto_renews ? RenewalKeys.renewing(next.current_period_end, next.id) : undefined
  if (old !== undefined && now !== undefined && old.sk === now.sk) return []
  return [
    ...(old === undefined ? [] : [{ Delete: { TableName: tableName, Key: keyOf(old) } }]),
    ...(now === undefined ? [] : [{ Put: { TableName: tableName, Item: { ...keyOf(now), subscription_id: str(next.id) } } }])
  ]
}

/** The plan is as read: the same version (or still none, for an item written before versions). */
const asRead = (version: number | undefined) =>
  version === undefined
    ? { condition: "attribute_exists(pk) AND attribute_not_exists(#version)", values: {} }
    : { condition: "#version = :version", values: { ":version": num(version) } }

export const makePlanRenewals = ({ decodePlan, die, planKey, readPlan, table, tableName }: PlanItems) => {
  const { createItem, getItems, queryItems, transact } = table
  const decodePointer = decode(Pointer)

  /** One conditional update of the plan, as a transaction item. */
  const updatePlan = (
    id: string,
    update: string,
    condition: string,
    names: Record<string, string>,
    values: Record<string, AttributeValue>
  ): TransactWriteItem => ({
    Update: {
      TableName: tableName,
      Key: keyOf(planKey(id)),
      UpdateExpression: update,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values
    }
  })

  // Read, decide, write conditioned on the version read (the account is checked on the read:
  // it never changes). A failed condition means the plan changed since: read again.
  const setRenewal = Effect.fn("PlanStore.setRenewal")(function*(
    accountId: string,
    id: string,
    renewal: Pick<SubscriptionRecord, "auto_renews" | "cancel_at_period_end">
  ) {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const stored = yield* readPlan(id)
      if (stored === undefined || stored.plan.account_id !== accountId) return undefined
      const { plan, version } = stored
      const next = { ...plan, auto_renews: renewal.auto_renews, cancel_at_period_end: renewal.cancel_at_period_end }
      const same = asRead(version)
      const result = yield* transact("setRenewal", [
        updatePlan(
          id,
          "SET #renews = :renews, #cancel = :cancel, #version = :next",
          same.condition,
          { "#renews": "auto_renews", "#cancel": "cancel_at_period_end", "#version": "version" },
          {
            ":renews": bool(next.auto_renews),
            ":cancel": bool(next.cancel_at_period_end),
            ":next": num((version ?? 0) + 1),
            ...same.values
          }
        ),
        ...renewingChanges(tableName, plan, next)
      ])
      if (result.committed) return next
    }
    return yield* die("setRenewal", `plan ${id} kept changing`)
  })

  // The order's item (0), the plan from `after_period_end` at the version read (1), and its index
  // item moved with it. Index items are computed from `after_period_end`, which the plan's
  // condition makes its end when the transaction commits.
  const renew = Effect.fn("PlanStore.renew")(function*(renewal: PlanRenewal) {
    const problem = renewalProblem(renewal)
    if (problem !== undefined) return yield* die("renew", problem)
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const stored = yield* readPlan(renewal.subscription_id)
      // Plans are never deleted: an unknown plan was never renewed by any order.
      if (stored === undefined) return "not_found" as RenewOutcome
      const { plan, version } = stored
      const same = asRead(version)
      const result = yield* transact("renew", [
        createItem(RenewalKeys.renewalOrder(renewal.order_id), {
          subscription_id: str(plan.id),
          current_period_end: str(renewal.current_period_end)
        }),
        updatePlan(
          plan.id,
          "SET #start = :start, #end = :end, #version = :next REMOVE #error",
          `#end = :after AND ${same.condition}`,
          { "#start": "current_period_start", "#end": "current_period_end", "#error": "renewal_error", "#version": "version" },
          {
            ":start": str(renewal.current_period_start),
            ":end": str(renewal.current_period_end),
            ":after": str(renewal.after_period_end),
            ":next": num((version ?? 0) + 1),
            ...same.values
          }
        ),
        ...renewingChanges(
          tableName,
          { ...plan, current_period_end: renewal.after_period_end },
          { ...plan, current_period_end: renewal.current_period_end }
        )
      ])
      if (result.committed) return "renewed" as RenewOutcome
      if (result.failed.includes(0)) return "already_renewed" as RenewOutcome
      if (plan.current_period_end !== renewal.after_period_end) return "stale" as RenewOutcome
    }
    return yield* die("renew", `plan ${renewal.subscription_id} kept changing`)
  })

  // No read needed: the condition fixes the end, so the only index item the plan can have is
  // `<afterPeriodEnd>#<id>`; deleting it is a no-op when it did not renew.
  const failRenewal = Effect.fn("PlanStore.failRenewal")(function*(id: string, afterPeriodEnd: Timestamp, error: string) {
    const result = yield* transact("failRenewal", [
      updatePlan(
        id,
        "SET #renews = :false, #error = :error ADD #version :one",
        "attribute_exists(pk) AND #end = :after",
        { "#renews": "auto_renews", "#error": "renewal_error", "#end": "current_period_end", "#version": "version" },
        { ":false": bool(false), ":error": str(error), ":after": str(afterPeriodEnd), ":one": num(1) }
      ),
      { Delete: { TableName: tableName, Key: keyOf(RenewalKeys.renewing(afterPeriodEnd, id)) } }
    ])
    return result.committed
  })

  // The index in order up to `before` (`<before>$` is just above every `<before>#<id>`: "$"
  // follows "#"), then the plans; the filter only guards against an index item out of step.
  const dueRenewals = Effect.fn("PlanStore.dueRenewals")(function*(before: Timestamp, limit: number) {
    if (limit <= 0) return []
    const entries = yield* queryItems({
      KeyConditionExpression: "pk = :pk AND sk < :upper",
      ExpressionAttributeValues: { ":pk": str(RENEWING_PK), ":upper": str(`${before}$`) },
      ScanIndexForward: true
    }, limit)
    const keys: Array<ItemKey> = []
    for (const entry of entries) keys.push(planKey((yield* decodePointer(entry)).subscription_id))
    const due: Array<SubscriptionRecord> = []
    for (const item of yield* getItems(keys)) {
      const plan = yield* decodePlan(item)
      if (plan.auto_renews && plan.current_period_end <= before) due.push(plan)
    }
    return due.sort(earliestEndFirst)
  })

  return { setRenewal, renew, failRenewal, dueRenewals }
}
