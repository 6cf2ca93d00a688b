/**
 * Port: what is known right now about each machine's health and the models it is serving.
 * The health checker (inference gateway) writes it; the catalogue and the router read it.
 * Until a machine has been observed, its configured initial health stands.
 */
import { Context, Effect, Layer, Ref } from "effect"
import type { CatalogueConfig } from "./CatalogueConfig.ts"
import type { Health } from "./Routing.ts"

export interface MachineState {
  readonly health: Health
  readonly serving_now: ReadonlyArray<string>
}

export class MachineStatus extends Context.Service<MachineStatus, {
  readonly get: (machineId: string) => Effect.Effect<MachineState>
  readonly set: (machineId: string, state: MachineState) => Effect.Effect<void>
}>()("@model-platform/core/catalogue/MachineStatus") {
  /** In-process status, seeded from the catalogue's initial health. */
  static readonly layerMemory = (config: CatalogueConfig) =>
    Layer.effect(
      MachineStatus,
      Effect.gen(function*() {
        const initial = new Map<string, MachineState>(
          config.machines.map((m) => [m.id, {
            health: m.initial_health,
            serving_now: m.initial_health === "offline" ? [] : m.serverless_models
          }])
        )
        const states = yield* Ref.make(initial)
        return MachineStatus.of({
          get: (machineId) =>
            Effect.map(Ref.get(states), (map) => map.get(machineId) ?? { health: "unknown", serving_now: [] }),
          set: (machineId, state) => Ref.update(states, (map) => new Map(map).set(machineId, state))
        })
      })
    )
}
