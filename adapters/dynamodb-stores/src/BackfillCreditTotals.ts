/**
 * The one-off backfill of the credit total items (docs/lambda-ledger.md "Backfilling credit
 * totals"): a table that held credit entries before `post` kept the per-month, per-type totals
 * has no totals for them, so statements under-count the credits added. This rebuilds, per
 * account, every `CREDITS#<month>#<type>` item so that `creditTotals(account)` equals
 * `creditTotalsOf(<the account's credit entries>)`, on a live table, while `post` keeps writing.
 *
 * Per account, in passes:
 *   1. read the account's total items (consistent Query), keeping each one's `amount` and
 *      `revision` (the count of writes to it: every post ADDs 1 in its transaction);
 *   2. read the account's credit entries (consistent Query; the usage entries are filtered out
 *      by DynamoDB) and sum them with core's `creditTotalsOf`;
 *   3. for each (month, type) whose total differs from the sum, SET amount = sum (and ADD 1 to
 *      revision) on the condition that the item is still exactly as read in step 1: absent, or
 *      the same amount and the same revision (absent: the item predates the counter).
 * A post that lands after step 1 changes its total's revision (and, being positive, its amount),
 * so the write of that total is refused; a post that landed before step 1 is in both reads. So
 * a write only ever commits a sum taken over exactly the entries the total had counted when it
 * was read, and each credit is counted once. After any write (or refused write) the account is
 * read again; it is done at the first pass that finds nothing to change, so every account the
 * backfill reports done was last seen with its totals equal to its entries' sums. Running it
 * again changes nothing (the first pass finds nothing). A Query is read-committed, not a
 * snapshot: this assumes that step 2 sees the entry of every post whose total step 1 saw (one
 * committed transaction wrote both, in one partition); the closing pass checks the outcome.
 *
 * Amounts stay bigint micro-credits, read with Schema.BigIntFromString and written as N strings.
 * Assumes every running `post` writes `revision` (deploy the store first); the amount condition
 * also refuses a write after an older post that does not (credits are positive, so they always
 * change the amount).
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb"
import { type CreditEntryType, type CreditTotal, creditTotalsOf } from "@model-platform/core/ledger"
import { Duration, Effect, Random, Schema } from "effect"
import { BigIntAttr, decode, keyOf, literalAttr, num, str, StringAttr } from "./DynamoAttributes.ts"
import { makeItemTable } from "./DynamoErrors.ts"
import { EntryItem, LEDGER_PREFIX, LedgerKeys, ledgerPk, toEntry } from "./DynamoLedgerStore.ts"
import { DynamoConfig } from "./DynamoTable.ts"

/** One total the backfill wrote (or, in a dry run, would write). */
export interface TotalChange {
  readonly month: string
  readonly type: CreditEntryType
  /** As read before the backfill's first write of it (0: no item). */
  readonly before: bigint
  /** As the backfill last wrote it: the sum of its credit entries. */
  readonly after: bigint
}

/**
 * "unchanged": the totals were right; "changed": some were written and a pass then found them
 * right; "would_change": a dry run found these to write; "gave_up": posts kept landing between
 * the reads and the writes for `maxPasses` passes (run it again later: nothing is half-done).
 */
export type AccountOutcome = "unchanged" | "changed" | "would_change" | "gave_up"

export interface AccountReport {
  readonly account_id: string
  readonly outcome: AccountOutcome
  /** By month, then type. */
  readonly changes: ReadonlyArray<TotalChange>
  /** The account's non-zero totals after it (as last computed from the entries). */
  readonly totals: ReadonlyArray<CreditTotal>
  /** Passes made (reads of the totals and the entries). */
  readonly passes: number
  /** Writes that committed. */
  readonly writes: number
}

export interface BackfillSummary {
  readonly accounts: number
  readonly unchanged: number
  readonly changed: number
  readonly would_change: number
  readonly gave_up: number
  /** Total items written, over all accounts. */
  readonly writes: number
}

export interface BackfillOptions {
  /** Only this account (no Scan); absent: every account with a credit entry. */
  readonly account?: string | undefined
  /** Read and report, write nothing. */
  readonly dryRun?: boolean | undefined
  /** Accounts worked on at once (default 4). */
  readonly concurrency?: number | undefined
  /** Passes per account before giving up on it (default 10). */
  readonly maxPasses?: number | undefined
  /** Told about each account as soon as it is done (the command prints it). */
  readonly onAccount?: ((report: AccountReport) => Effect.Effect<void>) | undefined
}

const TotalItem = Schema.Struct({
  month: StringAttr,
  type: literalAttr(["credit_added", "plan_credit_granted"]),
  amount: BigIntAttr,
  /** Absent on items written before posts counted their writes. */
  revision: Schema.optionalKey(BigIntAttr)
})

const AccountIdItem = Schema.Struct({ account_id: StringAttr })

const totalKey = (t: { readonly month: string; readonly type: string }) => `${t.month}#${t.type}`

/** A total item as read in step 1. */
interface ReadTotal {
  readonly month: string
  readonly type: CreditEntryType
  readonly amount: bigint
  readonly revision: bigint | undefined
}

/** What one pass found to write: the total as read (undefined: no item) and the entries' sum. */
interface Difference {
  readonly month: string
  readonly type: CreditEntryType
  readonly read: ReadTotal | undefined
  readonly sum: bigint
}

const byMonthThenType = (a: TotalChange, b: TotalChange) => totalKey(a) < totalKey(b) ? -1 : totalKey(a) > totalKey(b) ? 1 : 0

/**
 * The ledger's reads and the conditional write, on the DynamoConfig table; `backfillAccount` and
 * `backfillCreditTotals` below are built on it.
 */
const makeBackfill = Effect.gen(function*() {
  const { client, tableName } = yield* DynamoConfig
  const { queryItems, scanItems, transact } = makeItemTable(client, tableName, "BackfillCreditTotals")
  const decodeTotal = decode(TotalItem)
  const decodeEntry = decode(EntryItem)
  const decodeAccountId = decode(AccountIdItem)

  const readTotals = Effect.fnUntraced(function*(accountId: string) {
    const items = yield* queryItems({
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
      ExpressionAttributeValues: { ":pk": str(ledgerPk(accountId)), ":prefix": str(LEDGER_PREFIX.credits) }
    })
    const totals = new Map<string, ReadTotal>()
    for (const item of items) {
      const t = yield* decodeTotal(item)
      totals.set(totalKey(t), { month: t.month, type: t.type, amount: t.amount, revision: t.revision })
    }
    return totals
  })

  /** The credit entries only: DynamoDB drops the usage entries (they are still read, and paid for). */
  const readCreditSums = Effect.fnUntraced(function*(accountId: string) {
    const items = yield* queryItems({
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
      FilterExpression: "#type IN (:added, :plan)",
      ExpressionAttributeNames: { "#type": "type" },
      ExpressionAttributeValues: {
        ":pk": str(ledgerPk(accountId)),
        ":prefix": str(LEDGER_PREFIX.entry),
        ":added": str("credit_added"),
        ":plan": str("plan_credit_granted")
      }
    })
    const entries = []
    for (const item of items) entries.push(toEntry(yield* decodeEntry(item)))
    return creditTotalsOf(entries)
  })

  /** Steps 1 and 2: the totals that differ from their entries' sums, and those sums. */
  const differences = Effect.fnUntraced(function*(accountId: string) {
    const read = yield* readTotals(accountId) // first: see the module comment
    const sums = yield* readCreditSums(accountId)
    const summed = new Map(sums.map((t) => [totalKey(t), t]))
    const found: Array<Difference> = []
    // Every total read and every non-zero sum: a total without entries must come down to 0.
    for (const { month, type } of [...read.values(), ...sums.filter((t) => !read.has(totalKey(t)))]) {
      const total = read.get(totalKey({ month, type }))
      const sum = summed.get(totalKey({ month, type }))?.amount ?? 0n
      if ((total?.amount ?? 0n) !== sum) found.push({ month, type, read: total, sum })
    }
    return { differences: found, sums }
  })

  /** Step 3: true when it committed, false when the item is no longer as read. */
  const write = (accountId: string, d: Difference): Effect.Effect<boolean> => {
    const condition = d.read === undefined
      ? "attribute_not_exists(pk)"
      : `#amount = :read AND ${d.read.revision === undefined ? "attribute_not_exists(#revision)" : "#revision = :revision"}`
    const values: Record<string, AttributeValue> = {
      ":month": str(d.month),
      ":type": str(d.type),
      ":amount": num(d.sum),
      ":one": num(1),
      ...(d.read === undefined ? {} : { ":read": num(d.read.amount) }),
      ...(d.read?.revision === undefined ? {} : { ":revision": num(d.read.revision) })
    }
    return Effect.map(
      transact("backfill", [{
        Update: {
          TableName: tableName,
          Key: keyOf(LedgerKeys.credits(accountId, d.month, d.type)),
          UpdateExpression: "SET #month = :month, #type = :type, #amount = :amount ADD #revision :one",
          ConditionExpression: condition,
          ExpressionAttributeNames: { "#month": "month", "#type": "type", "#amount": "amount", "#revision": "revision" },
          ExpressionAttributeValues: values
        }
      }]),
      (result) => result.committed
    )
  }

  /**
   * Every account with a credit entry: one Scan of the table, eventually consistent (an account
   * whose first credit is posted during it needs nothing: post writes its totals), keeping only
   * the credit entries' account_id. Accounts with usage entries only are not listed.
   */
  const creditAccounts = Effect.gen(function*() {
    const accounts = new Set<string>()
    const items = yield* scanItems({
      FilterExpression: "begins_with(sk, :prefix) AND #type IN (:added, :plan)",
      ProjectionExpression: "#account",
      ExpressionAttributeNames: { "#type": "type", "#account": "account_id" },
      ExpressionAttributeValues: {
        ":prefix": str(LEDGER_PREFIX.entry),
        ":added": str("credit_added"),
        ":plan": str("plan_credit_granted")
      }
    })
    for (const item of items) accounts.add((yield* decodeAccountId(item)).account_id)
    return [...accounts].sort()
  })

  return { differences, write, creditAccounts }
})

/** Rebuilds one account's credit totals (see the module comment); never fails. */
export const backfillAccount = Effect.fn("BackfillCreditTotals.account")(function*(
  accountId: string,
  options: Pick<BackfillOptions, "dryRun" | "maxPasses"> = {}
) {
  const backfill = yield* makeBackfill
  const maxPasses = options.maxPasses ?? 10
  const changes = new Map<string, TotalChange>()
  let writes = 0
  let sums: ReadonlyArray<CreditTotal> = []
  const report = (outcome: AccountOutcome, passes: number): AccountReport => ({
    account_id: accountId,
    outcome,
    changes: [...changes.values()].sort(byMonthThenType),
    totals: sums,
    passes,
    writes
  })
  for (let pass = 1; pass <= maxPasses; pass++) {
    const found = yield* backfill.differences(accountId)
    sums = found.sums
    if (found.differences.length === 0) return report(changes.size === 0 ? "unchanged" : "changed", pass)
    if (options.dryRun === true) {
      for (const d of found.differences) {
        changes.set(totalKey(d), { month: d.month, type: d.type, before: d.read?.amount ?? 0n, after: d.sum })
      }
      return report("would_change", pass)
    }
    let refused = false
    for (const d of found.differences) {
      if (!(yield* backfill.write(accountId, d))) {
        refused = true // a post (or another backfill) wrote it since the read: read again
        continue
      }
      writes++
      const key = totalKey(d)
      changes.set(key, { month: d.month, type: d.type, before: changes.get(key)?.before ?? d.read?.amount ?? 0n, after: d.sum })
    }
    if (refused) yield* Effect.sleep(Duration.millis(Math.round((yield* Random.next) * 20 * pass)))
  }
  return report("gave_up", maxPasses)
})

/** Every account with a credit entry (or `options.account`), `concurrency` at a time. */
export const backfillCreditTotals = Effect.fn("BackfillCreditTotals")(function*(options: BackfillOptions = {}) {
  const accounts = options.account === undefined ? yield* (yield* makeBackfill).creditAccounts : [options.account]
  const counts = { unchanged: 0, changed: 0, would_change: 0, gave_up: 0 }
  let writes = 0
  yield* Effect.forEach(accounts, (account) =>
    Effect.gen(function*() {
      const report = yield* backfillAccount(account, options)
      counts[report.outcome]++
      writes += report.writes
      if (options.onAccount !== undefined) yield* options.onAccount(report)
    }), { concurrency: options.concurrency ?? 4, discard: true })
  return { accounts: accounts.length, ...counts, writes } satisfies BackfillSummary
})
