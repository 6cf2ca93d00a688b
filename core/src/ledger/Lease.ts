/**
 * The rules of drawing from a lease (docs/performance.md "Credit leases"): a pending reservation
 * made for many calls, each of which draws its estimate from what the lease still holds and is
 * then charged by `LedgerStore.draw`. Pure: the process that holds a lease draws with `drawFrom`
 * in memory; a store checks a draw against the lease with `takeDrawn` and takes what the call was
 * charged (`chargedOf`) off the lease, which keeps the rest (a store that restates this, in SQL
 * say, is checked against it by the ledger contract's draw tests).
 */
import { Effect } from "effect"
import type { Allocation, Draw, GrantHold, Reservation, Settlement } from "./LedgerStore.ts"
import { settlementOf } from "./Ledger.ts"
import { scopeKey } from "./LedgerStoreRules.ts"

/** What a lease holds (or a call drew of it): allocations by scope, grant holds; positive amounts. */
export interface Holds {
  readonly allocations: ReadonlyArray<Allocation>
  readonly grants: ReadonlyArray<GrantHold>
}

const grantKey = (h: Pick<GrantHold, "grant" | "period">) => `${h.grant} ${h.period}`

/**
 * A call's draw of `amount` from what a lease holds, spent as a reservation's holds are: the
 * grants first, then the scopes, each in the lease's order, each giving what it has. Undefined
 * when the lease holds less than `amount` (the call waits for a store step instead).
 */
export const drawFrom = (lease: Holds, amount: bigint): Holds | undefined => {
  if (amount < 0n) throw new RangeError(`drawFrom: negative amount ${amount}`)
  const grants: Array<GrantHold> = []
  const allocations: Array<Allocation> = []
  let rest = amount
  for (const hold of lease.grants) {
    if (rest === 0n) break
    const take = hold.amount < rest ? hold.amount : rest
    grants.push({ grant: hold.grant, period: hold.period, amount: take })
    rest -= take
  }
  for (const allocation of lease.allocations) {
    if (rest === 0n) break
    const take = allocation.amount < rest ? allocation.amount : rest
    allocations.push({ machine_id: allocation.machine_id, amount: take })
    rest -= take
  }
  return rest === 0n ? { allocations, grants } : undefined
}

/**
 * What a lease holds once `drawn` is taken off it, in the lease's order, leaving out what drops
 * to zero; or why it cannot be taken (a scope or grant drawn twice, or past what the lease holds
 * there, or a non-positive amount): a defect in whoever drew.
 */
export const takeDrawn = (lease: Holds, drawn: Holds): Holds | { readonly problem: string } => {
  const allocations = new Map(lease.allocations.map((a) => [scopeKey(a.machine_id), a.amount]))
  const grants = new Map(lease.grants.map((h) => [grantKey(h), h.amount]))
  const take = (from: Map<string, bigint>, key: string, amount: bigint, name: string, seen: Set<string>) => {
    if (amount <= 0n) return `drew ${amount} of ${name}: draws are positive`
    if (seen.has(key)) return `drew ${name} twice`
    seen.add(key)
    const held = from.get(key) ?? 0n
    if (amount > held) return `drew ${amount} of ${name}, which the lease holds ${held} of`
    from.set(key, held - amount)
    return undefined
  }
  const scopes = new Set<string>()
  for (const a of drawn.allocations) {
    const problem = take(allocations, scopeKey(a.machine_id), a.amount, a.machine_id ?? "the account-wide scope", scopes)
    if (problem !== undefined) return { problem }
  }
  const grantsSeen = new Set<string>()
  for (const h of drawn.grants) {
    const problem = take(grants, grantKey(h), h.amount, grantKey(h), grantsSeen)
    if (problem !== undefined) return { problem }
  }
  return {
    allocations: lease.allocations
      .map((a) => ({ machine_id: a.machine_id, amount: allocations.get(scopeKey(a.machine_id))! }))
      .filter((a) => a.amount > 0n),
    grants: lease.grants
      .map((h) => ({ grant: h.grant, period: h.period, amount: grants.get(grantKey(h))! }))
      .filter((h) => h.amount > 0n)
  }
}

/**
 * Why a draw from a lease on `machineId` must be refused whatever the lease holds, or undefined:
 * a non-positive amount, a scope or grant twice, credits pinned to another machine.
 */
export const drawShapeProblem = (drawn: Holds, machineId: string | null): string | undefined => {
  const scopes = new Set<string>()
  for (const a of drawn.allocations) {
    if (a.amount <= 0n) return `drew ${a.amount}: draws are positive`
    if (a.machine_id !== null && a.machine_id !== machineId) return `drew credits pinned to ${a.machine_id} for a call on ${machineId ?? "no machine"}`
    if (scopes.has(scopeKey(a.machine_id))) return `drew ${a.machine_id ?? "the account-wide scope"} twice`
    scopes.add(scopeKey(a.machine_id))
  }
  const grants = new Set<string>()
  for (const h of drawn.grants) {
    if (h.amount <= 0n) return `drew ${h.amount} of ${grantKey(h)}: draws are positive`
    if (grants.has(grantKey(h))) return `drew ${grantKey(h)} twice`
    grants.add(grantKey(h))
  }
  return undefined
}

/**
 * What a call that drew `drawn` was charged of it: each grant's charge, and per scope its charge
 * up to what it drew there (an excess, charged account-wide beyond the draw, is not). That comes
 * off the lease; the rest of the draw stays with it (LedgerStore.draw), lent again.
 */
export const chargedOf = (drawn: Holds, settlement: Pick<Settlement, "entries" | "grants">): Holds => ({
  allocations: drawn.allocations.flatMap((a) => {
    const entry = settlement.entries.find((e) => e.machine_id === a.machine_id)
    const charged = entry === undefined ? 0n : -entry.amount < a.amount ? -entry.amount : a.amount
    return charged > 0n ? [{ machine_id: a.machine_id, amount: charged }] : []
  }),
  grants: settlement.grants ?? []
})

/** A lease's holds as its reservation records them. */
export const leaseHolds = (lease: Pick<Reservation, "allocations" | "grants">): Holds => ({
  allocations: lease.allocations,
  grants: lease.grants ?? []
})

/**
 * The draw that charges call `ref` its `actual` cost, having drawn `drawn` from lease `lease` of
 * account `accountId`: settled as a reservation holding what it drew would be (`settlementOf`).
 */
export const drawOf = (lease: string, accountId: Reservation["account_id"], ref: string, drawn: Holds, actual: bigint) =>
  Effect.map(
    settlementOf(ref, actual, { account_id: accountId, allocations: drawn.allocations, grants: drawn.grants }),
    (settlement): Draw => ({
      lease,
      allocations: drawn.allocations,
      ...(drawn.grants.length === 0 ? {} : { grants: drawn.grants }),
      settlement
    })
  )
