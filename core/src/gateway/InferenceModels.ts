/**
 * GET /v1/models: the models some machine is serving now, in OpenAI's list shape with the
 * platform's fields (endpoint, context_length, max_output_tokens, features, machines), and the
 * default machine. Derived from the catalogue configuration and MachineStatus on every call, so a
 * machine going offline or stopping a model removes it at once.
 */
import { Effect } from "effect"
import type { CatalogueConfig, MachineConfig } from "../catalogue/CatalogueConfig.ts"
import type { V1Model, V1ModelList } from "./Inference.ts"
import { type MachineState, MachineStatus } from "../catalogue/MachineStatus.ts"
import { orderRoutes } from "../catalogue/Routing.ts"

/** Whether a machine in this state can take calls for `model` now. */
export const servesNow = (state: MachineState, model: string): boolean =>
  state.health !== "offline" && state.serving_now.includes(model)

/**
 * The default machine: among machines that are not offline and serve at least one model now, the
 * first in route order (online before degraded, then higher score, then catalogue order); when no
 * machine serves anything, the first machine of the catalogue; null only for a catalogue without
 * machines.
 */
export const defaultMachine = (
  machines: ReadonlyArray<MachineConfig>,
  states: ReadonlyMap<string, MachineState>
): string | null => {
  const candidates = machines.map((m) => {
    const state = states.get(m.id)
    return {
      machine_id: m.id,
      region: m.region,
      health: state?.health ?? "unknown",
      serving: state !== undefined && state.health !== "offline" && state.serving_now.length > 0,
      score: m.score
    }
  })
  const best = orderRoutes(candidates)[0]
  if (best !== undefined && best.serving) return best.machine_id
  return machines[0]?.id ?? null
}

/** GET /v1/models: only models some machine serves now (and is not offline). */
export const inferenceModels = (config: CatalogueConfig): Effect.Effect<V1ModelList, never, MachineStatus> =>
  Effect.gen(function*() {
    const status = yield* MachineStatus
    const states = new Map<string, MachineState>()
    for (const m of config.machines) states.set(m.id, yield* status.get(m.id))
    const data: Array<V1Model> = []
    for (const model of config.models) {
      const serving = config.machines.filter((m) => servesNow(states.get(m.id)!, model.id))
      if (serving.length === 0) continue
      const ordered = orderRoutes(serving.map((m) => ({
        machine: m,
        machine_id: m.id,
        region: m.region,
        health: states.get(m.id)!.health,
        serving: true,
        score: m.score
      })))
      data.push({
        id: model.id,
        object: "model",
        owned_by: model.owned_by,
        name: model.name,
        modality: model.modality,
        endpoint: model.endpoint,
        context_length: model.context_length,
        max_output_tokens: model.max_output_tokens,
        features: model.features,
        machines: ordered.map(({ machine }) => ({ id: machine.id, name: machine.name, region: machine.region }))
      })
    }
    return { object: "list", default_machine: defaultMachine(config.machines, states), data }
  })
