/**
 * What the gateway has in hand right now, for the gauges GET /metrics reads (Metrics.ts): the
 * reservations this process holds for calls in progress (and the credits they hold), and the
 * entries of its metering journal not yet confirmed in the store. One `GatewayActivity` per
 * platform, provided by each shell with its metric registry (`PlatformMetrics`).
 *
 * The gateway tells it through small hooks (Settlement.ts: a reservation held, a reservation
 * closed; the journal through `observeJournal`); every method is synchronous and cheap.
 */
import { Context, Effect, Layer, Metric } from "effect"
import type { MeteringJournalShape } from "./MeteringJournal.ts"
import { MetricsRegistry, settlementsPending } from "../observability/Metrics.ts"

/** A reservation as the gateway holds it (Settlement.ts `Held`), the parts read here. */
export interface HeldReservation {
  readonly ref: string
  readonly allocations: ReadonlyArray<{ readonly amount: bigint }>
  readonly grants: ReadonlyArray<{ readonly amount: bigint }>
  /** Epoch ms: past it the store's sweeper releases it, so it is no longer counted here. */
  readonly expiresAt: number
}

export class GatewayActivity {
  private readonly held = new Map<string, { readonly amount: bigint; readonly expiresAt: number }>()
  private readonly journalOpen = new Set<string>()
  private readonly machineCalls = new Map<string, number>()

  /** A call is being answered by this machine (until `machineCallEnded`). */
  machineCallStarted(machine: string): void {
    this.machineCalls.set(machine, (this.machineCalls.get(machine) ?? 0) + 1)
  }

  machineCallEnded(machine: string): void {
    const n = (this.machineCalls.get(machine) ?? 1) - 1
    if (n <= 0) this.machineCalls.delete(machine)
    else this.machineCalls.set(machine, n)
  }

  /** Calls in flight on this machine, in this process. */
  callsOn(machine: string): number {
    return this.machineCalls.get(machine) ?? 0
  }

  /** A call now holds this reservation (admitted, or made again for another machine). */
  reservationHeld(reservation: HeldReservation): void {
    let amount = 0n
    for (const a of reservation.allocations) amount += a.amount
    for (const g of reservation.grants) amount += g.amount
    this.held.set(reservation.ref, { amount, expiresAt: reservation.expiresAt })
  }

  /** The store has the reservation's settlement, or it was voided. */
  reservationClosed(ref: string): void {
    this.held.delete(ref)
  }

  /** The reservations held now and their credits (micro-credits); those past their expiry are forgotten. */
  heldNow(now: number): { readonly count: number; readonly credits: bigint } {
    let credits = 0n
    for (const [ref, entry] of this.held) {
      if (entry.expiresAt <= now) this.held.delete(ref)
      else credits += entry.amount
    }
    return { count: this.held.size, credits }
  }

  /** Entries of this process's metering journal not yet closed. */
  journalBacklog(): number {
    return this.journalOpen.size
  }

  /** The journal, counting its open entries as it writes them. */
  observeJournal(journal: MeteringJournalShape): MeteringJournalShape {
    return {
      opened: (refs) => Effect.tap(journal.opened(refs), () => Effect.sync(() => refs.forEach((ref) => this.journalOpen.add(ref)))),
      completed: (metered) => Effect.tap(journal.completed(metered), () => Effect.sync(() => this.journalOpen.add(metered.record.ref))),
      closed: (refs) => Effect.tap(journal.closed(refs), () => Effect.sync(() => refs.forEach((ref) => this.journalOpen.delete(ref)))),
      orphans: journal.orphans,
      ...(journal.entriesOf === undefined ? {} : { entriesOf: journal.entriesOf })
    }
  }
}

/** The platform's activity; outside a shell that provides one (a service tested alone), a throwaway one. */
export const CurrentActivity = Context.Reference<GatewayActivity>("@model-platform/core/observability/CurrentActivity", {
  defaultValue: () => new GatewayActivity()
})

/**
 * A platform's metric registry and activity, for each shell to provide under everything it builds:
 * two platforms in one process (tests) keep their metrics apart.
 */
export const PlatformMetrics: Layer.Layer<never> = Layer.mergeAll(
  MetricsRegistry,
  Layer.sync(CurrentActivity, () => new GatewayActivity())
)

/** A call's metering (settlement and usage record) being written: counted while it is pending. */
export const pendingSettlement = <A, E, R>(write: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.andThen(Metric.modify(settlementsPending, 1), Effect.ensuring(write, Metric.modify(settlementsPending, -1)))
