/**
 * The alert store port in memory (core/src/billing/AlertStore.ts). One Ref holds the alerts (by id,
 * and their identities for the idempotent raise) and each account's top-up state; every write is
 * one `Ref.modify`, which is what makes `raise` and `swapTopUp` atomic between fibers. Broken
 * input is a defect and changes nothing.
 */
import {
  alertIdentity,
  alertProblem,
  type AlertRecord,
  AlertStore,
  newestFirst,
  type TopUpState,
  topUpProblem
} from "@model-platform/core/billing"
import { Effect, Layer, Ref } from "effect"

interface State {
  readonly alerts: ReadonlyMap<string, AlertRecord>
  readonly identities: ReadonlySet<string>
  readonly topUps: ReadonlyMap<string, TopUpState>
}

export const AlertStoreMemory: Layer.Layer<AlertStore> = Layer.effect(
  AlertStore,
  Effect.gen(function*() {
    const ref = yield* Ref.make<State>({ alerts: new Map(), identities: new Set(), topUps: new Map() })

    const raise = (alert: AlertRecord) => {
      const problem = alertProblem(alert)
      if (problem !== undefined) return Effect.die(new Error(`AlertStore.raise: ${problem}`))
      return Ref.modify(ref, (state): readonly ["raised" | "exists" | "duplicate id", State] => {
        const identity = alertIdentity(alert)
        if (state.identities.has(identity)) return ["exists", state]
        if (state.alerts.has(alert.id)) return ["duplicate id", state]
        return ["raised", {
          ...state,
          alerts: new Map(state.alerts).set(alert.id, { ...alert }),
          identities: new Set(state.identities).add(identity)
        }]
      }).pipe(
        Effect.flatMap((r) => r === "duplicate id" ? Effect.die(new Error(`AlertStore.raise: duplicate id ${alert.id}`)) : Effect.succeed(r)),
        Effect.withSpan("AlertStore.raise")
      )
    }

    const list = (accountId: string, limit: number) =>
      Effect.map(Ref.get(ref), (state) =>
        [...state.alerts.values()].filter((a) => a.account_id === accountId).sort(newestFirst).slice(0, limit).map((a) => ({ ...a }))
      ).pipe(Effect.withSpan("AlertStore.list"))

    const markSeen = (accountId: string, ids: ReadonlyArray<string>) =>
      Ref.modify(ref, (state): readonly [number, State] => {
        const alerts = new Map(state.alerts)
        let changed = 0
        for (const id of new Set(ids)) {
          const alert = alerts.get(id)
          if (alert === undefined || alert.account_id !== accountId || alert.seen) continue
          alerts.set(id, { ...alert, seen: true })
          changed += 1
        }
        return [changed, changed === 0 ? state : { ...state, alerts }]
      }).pipe(Effect.withSpan("AlertStore.markSeen"))

    const topUp = (accountId: string) =>
      Effect.map(Ref.get(ref), (state) => {
        const found = state.topUps.get(accountId)
        return found === undefined ? undefined : { ...found }
      }).pipe(Effect.withSpan("AlertStore.topUp"))

    const swapTopUp = (accountId: string, expected: number | undefined, next: TopUpState) => {
      const problem = topUpProblem(expected, next)
      if (problem !== undefined) return Effect.die(new Error(`AlertStore.swapTopUp: ${problem}`))
      return Ref.modify(ref, (state): readonly [boolean, State] =>
        state.topUps.get(accountId)?.version !== expected
          ? [false, state]
          : [true, { ...state, topUps: new Map(state.topUps).set(accountId, { ...next }) }]
      ).pipe(Effect.withSpan("AlertStore.swapTopUp"))
    }

    return AlertStore.of({ raise, list, markSeen, topUp, swapTopUp })
  })
)
