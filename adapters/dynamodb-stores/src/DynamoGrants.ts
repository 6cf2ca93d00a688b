/**
 * The grant part of the ledger store on DynamoDB (DynamoLedgerStore.ts; docs/billing.md
 * "Allowances and the trial"): per account, grant and period one item in the account's ledger
 * partition, `GRANT#<grant>#<period>`, keeping `spent`, `held` and `used` = spent + held (the
 * period never holds "#", so the key is unambiguous even when the grant does).
 *
 * The size of a grant comes with each reservation (NewReservation.grants), so no other item is
 * read or checked: a condition cannot add, so `used + amount <= size` is written as
 * `used <= :max` with :max = size - amount (>= 0: a hold never exceeds its size), on the ADD that
 * holds the amount, in the reservation's transaction. A missing item has used 0, so it fits.
 * Finishing the reservation releases the hold and (settle) adds the grant's charge to `spent`,
 * in the transaction that finishes it. The budgets' month items (DynamoBudgets.ts,
 * `BUDGET#<month>#<budget>`) never see grant items: the prefixes differ.
 */
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb"
import type { GrantHold, GrantState, Reservation } from "@model-platform/core/ledger"
import { Effect, Schema } from "effect"
import { BigIntAttr, decode, type Item, keyOf, num, str, StringAttr } from "./DynamoAttributes.ts"
import type { makeItemTable } from "./DynamoErrors.ts"
import type { ItemKey } from "./DynamoTable.ts"

const ledgerPk = (accountId: string) => `LEDGER#${accountId}`

export const GRANT_PREFIX = "GRANT#"

export const GrantKeys = {
  /** One grant's period of an account: `spent`, `held`, `used`. */
  period: (accountId: string, grant: string, period: string): ItemKey => ({
    pk: ledgerPk(accountId),
    sk: `${GRANT_PREFIX}${grant}#${period}`
  })
} as const

const GrantItem = Schema.Struct({
  grant: StringAttr,
  period: StringAttr,
  spent: BigIntAttr,
  held: BigIntAttr,
  used: BigIntAttr
})

/** A reservation's grant holds as its items keep them (in spending order). */
export const GrantsAttr = Schema.Struct({
  L: Schema.Array(Schema.Struct({ M: Schema.Struct({ grant: StringAttr, period: StringAttr, amount: BigIntAttr }) }))
})

/** The reservation item's `grants` attribute: absent when it holds none. */
export const grantsAttribute = (holds: ReadonlyArray<GrantHold> | undefined): Item =>
  holds === undefined || holds.length === 0
    ? {}
    : {
      grants: {
        L: holds.map((h) => ({ M: { grant: str(h.grant), period: str(h.period), amount: num(h.amount) } }))
      }
    }

export const grantsOf = (attr: typeof GrantsAttr.Type | undefined): Pick<Reservation, "grants"> =>
  attr === undefined || attr.L.length === 0
    ? {}
    : { grants: attr.L.map(({ M }) => ({ grant: M.grant, period: M.period, amount: M.amount })) }

type ItemTable = ReturnType<typeof makeItemTable>

/** By grant, then period (JS string order). */
const byGrant = (a: GrantState, b: GrantState): number =>
  a.grant < b.grant ? -1 : a.grant > b.grant ? 1 : a.period < b.period ? -1 : a.period > b.period ? 1 : 0

export const makeGrants = (tableName: string, table: ItemTable) => {
  const decodeGrant = decode(GrantItem)
  const die = (operation: string, problem: string) => Effect.die(new Error(`LedgerStore.${operation}: ${problem}`))

  /**
   * Per hold, in order: one update of the grant's period holding its amount, only while
   * spent + held + amount <= size. One item per hold.
   */
  const holdItems = (
    accountId: string,
    holds: ReadonlyArray<GrantHold & { readonly size: bigint }>
  ): Array<TransactWriteItem> =>
    holds.map((hold) => ({
      Update: {
        TableName: tableName,
        Key: keyOf(GrantKeys.period(accountId, hold.grant, hold.period)),
        UpdateExpression: "SET #account = :account, #grant = :grant, #period = :period " +
          "ADD #held :amount, #used :amount, #spent :zero",
        // reservationProblem refused amount > size, so :max >= 0 and a missing item fits.
        ConditionExpression: "attribute_not_exists(#used) OR #used <= :max",
        ExpressionAttributeNames: {
          "#account": "account_id",
          "#grant": "grant",
          "#period": "period",
          "#held": "held",
          "#used": "used",
          "#spent": "spent"
        },
        ExpressionAttributeValues: {
          ":account": str(accountId),
          ":grant": str(hold.grant),
          ":period": str(hold.period),
          ":amount": num(hold.amount),
          ":zero": num(0n),
          ":max": num(hold.size - hold.amount)
        }
      }
    }))

  /**
   * Per hold: releases it and adds its charge (from `charges`, absent: 0; void and expiry pass
   * none) to the period's spent.
   */
  const releaseItems = (
    accountId: string,
    holds: ReadonlyArray<GrantHold>,
    charges: ReadonlyArray<GrantHold>
  ): Array<TransactWriteItem> =>
    holds.map((hold) => {
      const charged = charges.find((c) => c.grant === hold.grant && c.period === hold.period)?.amount ?? 0n
      return {
        Update: {
          TableName: tableName,
          Key: keyOf(GrantKeys.period(accountId, hold.grant, hold.period)),
          UpdateExpression: "ADD #held :held, #spent :spent, #used :used",
          ExpressionAttributeNames: { "#held": "held", "#spent": "spent", "#used": "used" },
          ExpressionAttributeValues: {
            ":held": num(-hold.amount),
            ":spent": num(charged),
            ":used": num(charged - hold.amount)
          }
        }
      }
    })

  const grants = Effect.fn("LedgerStore.grants")(function*(accountId: string) {
    const items = yield* table.queryItems({
      KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
      ExpressionAttributeValues: { ":pk": str(ledgerPk(accountId)), ":prefix": str(GRANT_PREFIX) }
    })
    const found: Array<GrantState> = []
    for (const item of items) {
      const g = yield* decodeGrant(item)
      if (g.used !== g.spent + g.held) return yield* die("grants", `${g.grant} ${g.period}: used is not spent + held`)
      if (g.spent === 0n && g.held === 0n) continue
      found.push({ grant: g.grant, period: g.period, spent: g.spent, held: g.held })
    }
    // Sort keys order by UTF-8 bytes; the port orders by grant, then period, as JS strings.
    return found.sort(byGrant)
  })

  return { holdItems, releaseItems, grants } as const
}
