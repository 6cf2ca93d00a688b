/**
 * The credit ledger's rules (docs in ledger/Ledger.ts, docs/architecture.md "Money"), as pure functions: what a
 * call may spend and in which order (grants, then scopes), how a reservation is allocated and a
 * settlement charged, the usage entries it writes, and the conservation check. ledger/Ledger.ts
 * applies them through the LedgerStore port.
 */
import { Effect } from "effect"
import type { ActivityEntry, CreditBalance } from "./Credits.ts"
import { type AccountId, generateId } from "../kernel/Ids.ts"
import { microToCredits } from "../kernel/Money.ts"
import {
  type Allocation,
  type GrantClaim,
  type GrantHold,
  type GrantState,
  type LedgerEntry,
  type Reservation,
  type ScopeBalance
} from "./LedgerStore.ts"
import { byScope, scopeKey } from "./LedgerStoreRules.ts"
import * as Time from "../kernel/Time.ts"
export const available = (balance: ScopeBalance): bigint => balance.posted - balance.held

/** Something a call may spend from, in spending order, with what it has available now. */
export interface Source {
  readonly machine_id: string | null
  readonly available: bigint
}

/**
 * The sources a call on `machineId` may spend, in spending order: credits pinned to that machine,
 * then account-wide credits. A call on no machine (null) spends account-wide credits only.
 */
export const spendingSources = (
  balances: ReadonlyArray<ScopeBalance>,
  machineId: string | null
): ReadonlyArray<Source> => {
  const find = (scope: string | null) => balances.find((b) => b.machine_id === scope)
  const source = (scope: string | null): Source => {
    const balance = find(scope)
    return { machine_id: scope, available: balance === undefined ? 0n : available(balance) }
  }
  return spendingOrder(machineId).map(source)
}

export type AllocationResult =
  | { readonly _tag: "Allocated"; readonly allocations: ReadonlyArray<Allocation> }
  | { readonly _tag: "Insufficient"; readonly available: bigint }

/**
 * Takes `amount` from the sources in order, each giving what it has (never below zero), and
 * leaves out sources that give nothing. Insufficient (with the total available) when they cannot
 * cover it all. An amount of 0 needs no allocation.
 */
export const allocate = (sources: ReadonlyArray<Source>, amount: bigint): AllocationResult => {
  if (amount < 0n) throw new RangeError(`allocate: negative amount ${amount}`)
  const allocations: Array<Allocation> = []
  let remaining = amount
  let total = 0n
  for (const source of sources) {
    if (source.available <= 0n) continue
    total += source.available
    if (remaining === 0n) continue
    const take = source.available < remaining ? source.available : remaining
    allocations.push({ machine_id: source.machine_id, amount: take })
    remaining -= take
  }
  return remaining === 0n ? { _tag: "Allocated", allocations } : { _tag: "Insufficient", available: total }
}

/** A grant a call may take from, with what it has left now (size - spent - held). */
export interface GrantSource {
  readonly grant: string
  readonly period: string
  readonly available: bigint
}

/** What a grant has left of its size, from its state (none: all of it). Never below zero. */
export const grantAvailable = (claim: GrantClaim, state: GrantState | undefined): bigint => {
  const left = claim.size - (state === undefined ? 0n : state.spent + state.held)
  return left > 0n ? left : 0n
}

/**
 * Takes `amount` from the grants in order, each giving what it has left: the holds (positive
 * only) and what is left of the amount for the ledger's scopes.
 */
export const takeGrants = (
  grants: ReadonlyArray<GrantSource>,
  amount: bigint
): { readonly holds: ReadonlyArray<GrantHold>; readonly rest: bigint } => {
  const holds: Array<GrantHold> = []
  let rest = amount
  for (const g of grants) {
    if (rest === 0n) break
    if (g.available <= 0n) continue
    const take = g.available < rest ? g.available : rest
    holds.push({ grant: g.grant, period: g.period, amount: take })
    rest -= take
  }
  return { holds, rest }
}

export interface Charges {
  /** What each grant held is charged (positive), in the reservation's order; no zero charges. */
  readonly grants: ReadonlyArray<GrantHold>
  /** What each scope is charged (positive), in the reservation's order; no zero charges. */
  readonly charges: ReadonlyArray<Allocation>
  /** The part of the actual cost above the reservation, included in the account-wide charge. */
  readonly excess: bigint
}

/**
 * What settling a reservation with these grant holds and allocations charges for an actual cost:
 * the grant holds in order, then the allocations in order, each up to its amount; anything left
 * is excess, charged account-wide (added to the account-wide charge when there is one, appended
 * otherwise). Grants cover only what they held: an over-report is paid with credits.
 */
export const settlementCharges = (
  grantHolds: ReadonlyArray<GrantHold>,
  allocations: ReadonlyArray<Allocation>,
  actual: bigint
): Charges => {
  if (actual < 0n) throw new RangeError(`settlementCharges: negative actual cost ${actual}`)
  const grants: Array<GrantHold> = []
  const charges: Array<Allocation> = []
  let remaining = actual
  for (const hold of grantHolds) {
    if (remaining === 0n) break
    const take = hold.amount < remaining ? hold.amount : remaining
    if (take > 0n) grants.push({ grant: hold.grant, period: hold.period, amount: take })
    remaining -= take
  }
  for (const allocation of allocations) {
    if (remaining === 0n) break
    const take = allocation.amount < remaining ? allocation.amount : remaining
    if (take > 0n) charges.push({ machine_id: allocation.machine_id, amount: take })
    remaining -= take
  }
  const excess = remaining
  if (excess > 0n) {
    const index = charges.findIndex((c) => c.machine_id === null)
    if (index === -1) charges.push({ machine_id: null, amount: excess })
    else charges[index] = { machine_id: null, amount: charges[index]!.amount + excess }
  }
  return { grants, charges, excess }
}

/**
 * The ref of a settlement's usage entry in one scope: the reservation's ref for the account-wide
 * charge, `<ref>@<machine_id>` for a pinned one (entry refs are unique per account, and a
 * settlement writes at most one entry per scope). Reservation refs contain no "@".
 */
export const usageEntryRef = (ref: string, machineId: string | null): string =>
  machineId === null ? ref : `${ref}@${machineId}`

/** The usage entries that settling reservation `ref` with these charges writes: one per charged scope. */
export const usageEntries = Effect.fnUntraced(function*(
  accountId: AccountId,
  ref: string,
  charges: ReadonlyArray<Allocation>,
  createdAt: Time.Timestamp
) {
  const entries: Array<LedgerEntry> = []
  for (const charge of charges) {
    entries.push({
      id: yield* generateId("led"),
      account_id: accountId,
      machine_id: charge.machine_id,
      amount: -charge.amount,
      type: "usage",
      ref: usageEntryRef(ref, charge.machine_id),
      created_at: createdAt
    })
  }
  return entries
})

/** Sums of signed amounts by scope key (scopeKey: "" is account-wide). */
export const sumByScope = (
  items: ReadonlyArray<{ readonly machine_id: string | null; readonly amount: bigint }>
): ReadonlyMap<string, bigint> => {
  const sums = new Map<string, bigint>()
  for (const item of items) {
    const key = scopeKey(item.machine_id)
    sums.set(key, (sums.get(key) ?? 0n) + item.amount)
  }
  return sums
}

/** Credits added (credit and plan entries) and credits charged (usage, positive) by some entries. */
export const totals = (entries: ReadonlyArray<LedgerEntry>): { readonly added: bigint; readonly charged: bigint } => {
  let added = 0n
  let charged = 0n
  for (const entry of entries) {
    if (entry.type === "usage") charged -= entry.amount
    else added += entry.amount
  }
  return { added, charged }
}

/**
 * Conservation check of one account: every scope's `posted` equals the sum of its entries, its
 * `held` the sum of the pending allocations in it, and held is never negative. Returns what is
 * wrong, in words (empty when the ledger is consistent).
 */
export const auditAccount = (input: {
  readonly balances: ReadonlyArray<ScopeBalance>
  readonly entries: ReadonlyArray<LedgerEntry>
  readonly pending: ReadonlyArray<Reservation>
}): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const posted = sumByScope(input.entries)
  const held = sumByScope(input.pending.flatMap((r) => r.allocations))
  const scopes = new Set([...posted.keys(), ...held.keys(), ...input.balances.map((b) => scopeKey(b.machine_id))])
  const name = (key: string) => key === "" ? "account-wide" : `machine ${key}`
  for (const key of scopes) {
    const balance = input.balances.find((b) => scopeKey(b.machine_id) === key)
    const wantPosted = posted.get(key) ?? 0n
    const wantHeld = held.get(key) ?? 0n
    const gotPosted = balance?.posted ?? 0n
    const gotHeld = balance?.held ?? 0n
    if (gotPosted !== wantPosted) problems.push(`${name(key)}: posted ${gotPosted} but its entries sum to ${wantPosted}`)
    if (gotHeld !== wantHeld) problems.push(`${name(key)}: held ${gotHeld} but its pending allocations sum to ${wantHeld}`)
    if (gotHeld < 0n) problems.push(`${name(key)}: held is negative (${gotHeld})`)
  }
  return problems
}

/** A ledger entry as GET /credits/activity shows it: credits signed, at = created_at. */
export const toActivityEntry = (entry: LedgerEntry): ActivityEntry => ({
  id: entry.id,
  type: entry.type,
  credits: microToCredits(entry.amount),
  machine_id: entry.machine_id,
  at: entry.created_at
})

/** GET /credits from the store's scopes: credits = available; account-wide always listed first. */
export const toCreditBalance = (balances: ReadonlyArray<ScopeBalance>): CreditBalance => {
  const scopes = balances.some((b) => b.machine_id === null)
    ? [...balances].sort(byScope)
    : [{ machine_id: null, posted: 0n, held: 0n }, ...[...balances].sort(byScope)]
  let total = 0n
  for (const scope of scopes) total += available(scope)
  return {
    total_credits: microToCredits(total),
    by_scope: scopes.map((scope) => ({ machine_id: scope.machine_id, credits: microToCredits(available(scope)) }))
  }
}

/**
 * The scopes a call on `machineId` spends, in spending order (`spendingSources` without balances);
 * the grants it takes from before them are billing/Allowances.ts grantClaims.
 */
export const spendingOrder = (machineId: string | null): ReadonlyArray<string | null> =>
  machineId === null ? [null] : [machineId, null]
