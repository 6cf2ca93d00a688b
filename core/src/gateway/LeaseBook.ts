/**
 * The credit leases a process holds (docs/performance.md "Credit leases"), in memory: per key,
 * machine and claim shape at most one open lease, from which calls draw their estimates and take
 * their rpm hits without a store step. Pure bookkeeping: the gateway takes a lease through its
 * admission batch, tells the book, and voids in the store what the book hands back once a closed
 * lease has no drawn call left to meter.
 *
 * A lease stops lending when it closes: at `closesAt`, when its rpm window ends, at a notice of its
 * account (`closeAccount`), when notices may have been missed or at shutdown (`closeAll`), or when
 * it cannot lend a call and a successor waits under its key. It is handed back for voiding only
 * once it is closed and every call drawn from it is done (metered or given back), so a metered call
 * always finds its draw's holds (or, after a crash, its lease expired: the store still charges it,
 * LedgerStore.draw). The book keeps it until it is told the lease is voided (`voided`), so it knows
 * which accounts still hold one (`holdsAny`).
 * What a call was not charged of its draw is lent again, as the store keeps it with the lease.
 *
 * A lease spent fast asks once, at half spent, for its successor to be taken ahead (`Drawn.refill`),
 * so that its key's calls do not wait for a store step when it runs dry. The successor waits until
 * the lease cannot lend: the hits the lease took are used before the next ones.
 */
import { drawFrom, type Holds, takeDrawn } from "../ledger/Lease.ts"

/** How long a lease lends, from its opening. */
export const LEASE_LIFE_MS = 10_000
/** A lease is taken for this many calls' estimates (less where less is left: the store's answer). */
export const LEASE_CALLS = 32n

/**
 * A lease asks for its successor at half spent only when that half went within this part of its
 * life: a key whose calls come slower would leave the successor's hits unused when it closes.
 */
export const REFILL_WITHIN_MS = LEASE_LIFE_MS / 4

/** The rpm hits a lease takes ahead for a key allowed `rpm` a minute: min(16, rpm / 8), at least 1. */
export const hitsAhead = (rpm: number): number => Math.max(1, Math.min(16, Math.floor(rpm / 8)))

export interface OpenLease {
  /** The lease's reservation ref. */
  readonly ref: string
  readonly accountId: string
  /** The book's key: the key, machine and claim shape the lease was taken for. */
  readonly key: string
  /** The rpm window its hits count in (epoch ms). */
  readonly window: number
  readonly windowEnd: number
  readonly closesAt: number
  /** When its reservation expires (epoch ms): metering a call drawn from it is retried until then. */
  readonly expiresAt: number
  /** What the lease holds and has not lent. */
  readonly left: Holds
  /** Its rpm hits not yet used by a call. */
  readonly hitsLeft: number
}

interface Lease extends OpenLease {
  /** The place of each scope and grant in the lease's spending order, as it was opened. */
  readonly order: ReadonlyMap<string, number>
  /** What it held and the hits it had when opened: half of either spent asks for a successor. */
  readonly amountAtOpen: bigint
  readonly hitsAtOpen: number
  left: Holds
  hitsLeft: number
  /** Calls drawn from it and not yet metered or given back. */
  outstanding: number
  closed: boolean
  /** It asked for its successor once already. */
  refillAsked: boolean
  /** Handed back for voiding (closed, nothing left to meter); kept until it is voided. */
  handedBack: boolean
}

/** A call's draw: the lease it drew from (and when that expires) and what it drew. */
export interface Drawn {
  readonly lease: string
  readonly expiresAt: number
  readonly drawn: Holds
  /** This draw spent the lease's first half, fast: its successor is to be taken now (once per lease). */
  readonly refill: boolean
}

export const makeLeaseBook = () => {
  /** The lease lending under each key. */
  const byKey = new Map<string, Lease>()
  /** The successor taken ahead under a key, lending once the first cannot. */
  const nextByKey = new Map<string, Lease>()
  /** Every lease not yet voided. */
  const byRef = new Map<string, Lease>()
  /** How many of those each account has. */
  const heldBy = new Map<string, number>()

  /** Closes a lease (its successor, if one waits, lends next); the ref to void when nothing drawn from it is left to meter. */
  const close = (lease: Lease): ReadonlyArray<string> => {
    if (!lease.closed) {
      lease.closed = true
      if (nextByKey.get(lease.key) === lease) nextByKey.delete(lease.key)
      if (byKey.get(lease.key) === lease) {
        byKey.delete(lease.key)
        const next = nextByKey.get(lease.key)
        if (next !== undefined) {
          nextByKey.delete(lease.key)
          byKey.set(lease.key, next)
        }
      }
    }
    return settleIfDone(lease)
  }
  const settleIfDone = (lease: Lease): ReadonlyArray<string> => {
    if (!lease.closed || lease.outstanding > 0 || lease.handedBack) return []
    lease.handedBack = true
    return [lease.ref]
  }
  const pastTime = (lease: Lease, now: number) => now >= lease.closesAt || now >= lease.windowEnd || now < lease.window

  /** `estimate` and one hit from `lease`, or undefined when it has not that much left. */
  const lend = (lease: Lease, estimate: bigint, now: number): Drawn | undefined => {
    if (lease.hitsLeft === 0) return undefined
    const drawn = drawFrom(lease.left, estimate)
    if (drawn === undefined) return undefined
    const left = takeDrawn(lease.left, drawn)
    if ("problem" in left) throw new Error(`LeaseBook: ${left.problem}`) // drawFrom draws only what is there
    lease.left = left
    lease.hitsLeft -= 1
    lease.outstanding += 1
    const halfSpent = lease.hitsLeft * 2 <= lease.hitsAtOpen || total(left) * 2n <= lease.amountAtOpen
    const refill = !lease.refillAsked && lease.hitsAtOpen > 1 && halfSpent &&
      now < lease.closesAt - LEASE_LIFE_MS + REFILL_WITHIN_MS && !nextByKey.has(lease.key)
    if (refill) lease.refillAsked = true
    return { lease: lease.ref, expiresAt: lease.expiresAt, drawn, refill }
  }

  return {
    /**
     * A call's draw of `estimate` from the lease lending under `key`, with one of its rpm hits; or
     * undefined (none lends, past its time or window, out of hits or of credit and no successor
     * waits: the call goes to the store), having closed the leases that can no longer lend (their
     * refs to void in `toVoid`).
     */
    draw(key: string, estimate: bigint, now: number, toVoid: Array<string>): Drawn | undefined {
      for (;;) {
        const lease = byKey.get(key)
        if (lease === undefined) return undefined
        if (!pastTime(lease, now)) {
          const drawn = lend(lease, estimate, now)
          // A lease that cannot lend this call keeps lending (what its calls were not charged comes
          // back to it) unless a successor waits.
          if (drawn !== undefined || !nextByKey.has(key)) return drawn
        }
        toVoid.push(...close(lease))
      }
    },

    /**
     * A lease the store granted, with the hits it took that are within the limit: lending from
     * now, or, when a lease still lends under its key, once that one cannot (a successor waits at
     * most one deep: an older one waiting is closed, its ref to void, when nothing is left to
     * meter, in the answer).
     */
    open(lease: OpenLease): ReadonlyArray<string> {
      const keys = [...lease.left.grants.map(grantKey), ...lease.left.allocations.map(scopeOf)]
      const opened: Lease = {
        ...lease,
        order: new Map(keys.map((k, i) => [k, i])),
        amountAtOpen: total(lease.left),
        hitsAtOpen: lease.hitsLeft,
        outstanding: 0,
        closed: false,
        refillAsked: false,
        handedBack: false
      }
      byRef.set(lease.ref, opened)
      heldBy.set(lease.accountId, (heldBy.get(lease.accountId) ?? 0) + 1)
      if (!byKey.has(lease.key)) {
        byKey.set(lease.key, opened)
        return []
      }
      const waiting = nextByKey.get(lease.key)
      nextByKey.set(lease.key, opened)
      return waiting === undefined ? [] : close(waiting)
    },

    /**
     * A call drawn from a lease is done: metered, `charged` what it was charged of its draw
     * (ledger/Lease.ts chargedOf), or given back (refused by its machine, failed over elsewhere),
     * charged nothing. The rest of its draw is lent again while the lease lends, as the store keeps
     * it with the lease. The lease's ref to void when that was the closed lease's last call.
     */
    done(call: Pick<Drawn, "lease" | "drawn">, charged: Holds): ReadonlyArray<string> {
      const lease = byRef.get(call.lease)
      if (lease === undefined) return []
      lease.outstanding -= 1
      if (!lease.closed) {
        const rest = takeDrawn(call.drawn, charged)
        if ("problem" in rest) throw new Error(`LeaseBook: ${rest.problem}`) // a charge is within its draw
        lease.left = {
          allocations: merge(lease.left.allocations, rest.allocations, scopeOf, lease.order),
          grants: merge(lease.left.grants, rest.grants, grantKey, lease.order)
        }
      }
      return settleIfDone(lease)
    },

    /** Closes the leases of an account (its notice); the refs to void now. */
    closeAccount(accountId: string): ReadonlyArray<string> {
      return [...byRef.values()].filter((l) => l.accountId === accountId).flatMap(close)
    },

    /** Closes every lease (notices missed, shutdown); the refs to void now. */
    closeAll(): ReadonlyArray<string> {
      return [...byRef.values()].flatMap(close)
    },

    /** Closes the leases past their time or window at `now`; the refs to void now. */
    closeDue(now: number): ReadonlyArray<string> {
      return [...byRef.values()].filter((l) => pastTime(l, now)).flatMap(close)
    },

    /** A lease the book handed back is voided in the store: forgotten. Its account, if the book had it. */
    voided(ref: string): string | undefined {
      const lease = byRef.get(ref)
      if (lease === undefined) return undefined
      byRef.delete(ref)
      const count = heldBy.get(lease.accountId)! - 1
      if (count === 0) heldBy.delete(lease.accountId)
      else heldBy.set(lease.accountId, count)
      return lease.accountId
    },

    /** Whether an account has a lease not yet voided: open, closed with calls left to meter, or being voided. */
    holdsAny(accountId: string): boolean {
      return heldBy.has(accountId)
    },

    /** The leases not yet voided: open, closed with calls left to meter, or handed back (for tests). */
    held(): ReadonlyArray<OpenLease & { readonly outstanding: number; readonly closed: boolean }> {
      return [...byRef.values()].map((l) => ({ ...l }))
    }
  }
}

export type LeaseBook = ReturnType<typeof makeLeaseBook>

const total = (holds: Holds): bigint => [...holds.allocations, ...holds.grants].reduce((sum, h) => sum + h.amount, 0n)
const scopeOf = (a: { readonly machine_id: string | null }) => `scope ${a.machine_id ?? ""}`
const grantKey = (g: { readonly grant: string; readonly period: string }) => `grant ${g.grant} ${g.period}`

/** `into` with each item of `add` added to the one of its key, in the lease's spending `order`. */
const merge = <T extends { readonly amount: bigint }>(
  into: ReadonlyArray<T>,
  add: ReadonlyArray<T>,
  keyOf: (t: T) => string,
  order: ReadonlyMap<string, number>
): ReadonlyArray<T> => {
  const sums = new Map(into.map((t) => [keyOf(t), t]))
  for (const t of add) {
    const current = sums.get(keyOf(t))
    sums.set(keyOf(t), current === undefined ? t : { ...current, amount: current.amount + t.amount })
  }
  return [...sums.values()].sort((a, b) => order.get(keyOf(a))! - order.get(keyOf(b))!)
}
