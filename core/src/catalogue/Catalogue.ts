/**
 * The public catalogue: models, machines, operators, the routing preview, packages, payment
 * methods, the price table and the usage tiers, as the API shows them. Everything here is derived
 * from the catalogue configuration and the machines' current status.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { type CatalogueConfig, type MachineConfig, type ModelConfig, ModelLimits, modelLimits, validateCatalogue } from "./CatalogueConfig.ts"
import { catalogueError, type CatalogueErrorOf } from "./CatalogueErrors.ts"
import { MachineStatus } from "./MachineStatus.ts"
import { orderRoutes, type RouteCandidate } from "./Routing.ts"

// ---- Resources ----------------------------------------------------------------------------

export const Pricing = Schema.Struct({
  input_credits_per_mtok: Schema.Number,
  output_credits_per_mtok: Schema.Number,
  credits_per_request: Schema.Number
})

export const Model = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  family: Schema.String,
  description: Schema.String,
  modality: Schema.String,
  context_length: Schema.Int,
  pricing: Pricing,
  available: Schema.Boolean,
  machines: Schema.Array(Schema.String)
})
export type Model = typeof Model.Type

export const Route = Schema.Struct({
  machine_id: Schema.String,
  health: Schema.String,
  region: Schema.String,
  score: Schema.Number
})
export type Route = typeof Route.Type

/** GET /models/{id}: the model, its limits and its routes. */
export const ModelWithRoutes = Schema.Struct({ ...Model.fields, limits: ModelLimits, routes: Schema.Array(Route) })
export type ModelWithRoutes = typeof ModelWithRoutes.Type

export const RoutePreview = Schema.Struct({ model: Schema.String, routes: Schema.Array(Route) })

export const Machine = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  region: Schema.String,
  operator: Schema.Struct({ id: Schema.String, name: Schema.String }),
  health: Schema.String,
  hardware: Schema.Struct({
    gpus: Schema.Array(Schema.Struct({ model: Schema.String, count: Schema.Int, vram_gb: Schema.Int })),
    cpu_cores: Schema.Int,
    memory_gb: Schema.Int,
    storage_gb: Schema.Int
  }),
  services: Schema.Struct({
    serverless: Schema.Struct({ models: Schema.Array(Schema.String), serving_now: Schema.Array(Schema.String) }),
    rent: Schema.NullOr(Schema.Record(Schema.String, Schema.Json)),
    subscribe: Schema.NullOr(Schema.Record(Schema.String, Schema.Json))
  }),
  network: Schema.Struct({ status: Schema.String, reachability: Schema.String })
})
export type Machine = typeof Machine.Type

export const Operator = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  website: Schema.String,
  featured: Schema.Boolean,
  certifications: Schema.Array(Schema.String)
})
export type Operator = typeof Operator.Type

/** The list form of an operator also has a description and its machines. */
export const OperatorListItem = Schema.Struct({
  ...Operator.fields,
  description: Schema.String,
  machines: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, health: Schema.String }))
})

export const Package = Schema.Struct({
  id: Schema.String,
  kind: Schema.String,
  name: Schema.String,
  description: Schema.String,
  amount_usd: Schema.Number,
  credits: Schema.Number,
  machine_id: Schema.NullOr(Schema.String)
})

export const PaymentMethods = Schema.Struct({
  card: Schema.Struct({ available: Schema.Boolean, processor: Schema.String }),
  stablecoin: Schema.Struct({
    available: Schema.Boolean,
    processor: Schema.String,
    options: Schema.Array(Schema.Struct({ chain: Schema.String, token: Schema.String }))
  })
})

export const Tier = Schema.Struct({
  tier: Schema.Int,
  name: Schema.String,
  purchased_credits: Schema.Number,
  rpm: Schema.Int,
  monthly_limit_credits: Schema.Number
})

export const PriceTable = Schema.Struct({
  unit: Schema.String,
  services: Schema.Array(Schema.Struct({
    service: Schema.String,
    group: Schema.String,
    name: Schema.String,
    unit: Schema.String,
    unit_label: Schema.String,
    credits_per_unit: Schema.Number,
    allowances: Schema.Struct({ free: Schema.Number, builder: Schema.Number, scale: Schema.Number, trial: Schema.Number })
  })),
  models: Schema.Array(Schema.Struct({
    model: Schema.String,
    service: Schema.String,
    input_credits_per_mtok: Schema.Number,
    output_credits_per_mtok: Schema.Number,
    credits_per_request: Schema.Number
  }))
})

/** Query of GET /machines; every filter optional. */
export interface MachineFilter {
  readonly service?: "serverless" | "rent" | "subscribe" | undefined
  readonly region?: string | undefined
  readonly gpu?: boolean | undefined
  readonly operator?: string | undefined
  readonly model?: string | undefined
}

// ---- Service ------------------------------------------------------------------------------

export class Catalogue extends Context.Service<Catalogue, {
  readonly config: CatalogueConfig
  readonly models: Effect.Effect<ReadonlyArray<Model>>
  readonly model: (id: string) => Effect.Effect<ModelWithRoutes, CatalogueErrorOf<"model_not_found">>
  readonly modelConfig: (id: string) => ModelConfig | undefined
  readonly machines: (filter: MachineFilter) => Effect.Effect<ReadonlyArray<Machine>>
  readonly machine: (id: string) => Effect.Effect<Machine, CatalogueErrorOf<"machine_not_found">>
  readonly machineConfig: (id: string) => MachineConfig | undefined
  readonly operators: Effect.Effect<ReadonlyArray<typeof OperatorListItem.Type>>
  readonly operator: (id: string) => Effect.Effect<Operator, CatalogueErrorOf<"operator_not_found">>
  /** Routes for a model, in the order an unscoped call would try them. */
  readonly routes: (model: string, region?: string) => Effect.Effect<ReadonlyArray<Route>, CatalogueErrorOf<"model_not_found">>
  readonly packages: ReadonlyArray<typeof Package.Type>
  readonly paymentMethods: typeof PaymentMethods.Type
  readonly prices: typeof PriceTable.Type
  readonly tiers: ReadonlyArray<typeof Tier.Type>
}>()("@model-platform/core/catalogue/Catalogue") {
  /** A catalogue over a decoded configuration; fails at start when its references don't hold. */
  static readonly layer = (config: CatalogueConfig) =>
    Layer.effect(Catalogue, make(config)).pipe(Layer.provideMerge(MachineStatus.layerMemory(config)))

  /** The same, reading status from a MachineStatus provided elsewhere. */
  static readonly layerWithStatus = (config: CatalogueConfig) => Layer.effect(Catalogue, make(config))
}

const make = (config: CatalogueConfig) =>
  Effect.gen(function*() {
    const problems = validateCatalogue(config)
    if (problems.length > 0) {
      return yield* Effect.die(new Error(`invalid catalogue: ${problems.join("; ")}`))
    }
    const status = yield* MachineStatus
    const operatorsById = new Map(config.operators.map((o) => [o.id, o]))
    const machinesById = new Map(config.machines.map((m) => [m.id, m]))
    const modelsById = new Map(config.models.map((m) => [m.id, m]))
    const machinesOf = (modelId: string) => config.machines.filter((m) => m.serverless_models.includes(modelId))

    const toMachine = Effect.fnUntraced(function*(m: MachineConfig) {
      const state = yield* status.get(m.id)
      return {
        id: m.id,
        name: m.name,
        region: m.region,
        operator: { id: m.operator, name: operatorsById.get(m.operator)?.name ?? m.operator },
        health: state.health,
        hardware: m.hardware,
        services: {
          serverless: { models: m.serverless_models, serving_now: state.serving_now },
          rent: m.rent,
          subscribe: m.subscribe
        },
        network: m.network
      } satisfies Machine
    })

    const routes = Effect.fnUntraced(function*(modelId: string, region?: string) {
      if (!modelsById.has(modelId)) return yield* catalogueError("model_not_found", `No model "${modelId}".`)
      const candidates: Array<RouteCandidate> = []
      for (const m of machinesOf(modelId)) {
        const state = yield* status.get(m.id)
        candidates.push({
          machine_id: m.id,
          region: m.region,
          health: state.health,
          serving: state.serving_now.includes(modelId),
          score: m.score
        })
      }
      return orderRoutes(candidates, region).map(({ machine_id, health, region, score }) => ({
        machine_id, health, region, score
      }))
    })

    const toModel = Effect.fnUntraced(function*(m: ModelConfig) {
      const machines = machinesOf(m.id)
      let available = false
      for (const machine of machines) {
        const state = yield* status.get(machine.id)
        if (state.serving_now.includes(m.id) && state.health !== "offline") available = true
      }
      return {
        id: m.id,
        name: m.name,
        family: m.family,
        description: m.description,
        modality: m.modality,
        context_length: m.context_length,
        pricing: m.pricing,
        available,
        machines: machines.map((x) => x.id)
      } satisfies Model
    })

    const matches = (m: MachineConfig, f: MachineFilter) =>
      (f.service === undefined ||
        (f.service === "serverless" ? m.serverless_models.length > 0 : m[f.service] !== null)) &&
      (f.region === undefined || m.region === f.region) &&
      (f.gpu === undefined || (m.hardware.gpus.length > 0) === f.gpu) &&
      (f.operator === undefined || m.operator === f.operator) &&
      (f.model === undefined || m.serverless_models.includes(f.model))

    const payments = config.payments
    return Catalogue.of({
      config,
      models: Effect.forEach(config.models, toModel),
      model: Effect.fnUntraced(function*(id: string) {
        const m = modelsById.get(id)
        if (m === undefined) return yield* catalogueError("model_not_found", `No model "${id}".`)
        return { ...(yield* toModel(m)), limits: modelLimits(m), routes: yield* routes(id) }
      }),
      modelConfig: (id) => modelsById.get(id),
      machines: (filter) => Effect.forEach(config.machines.filter((m) => matches(m, filter)), toMachine),
      machine: Effect.fnUntraced(function*(id: string) {
        const m = machinesById.get(id)
        if (m === undefined) return yield* catalogueError("machine_not_found", `No machine "${id}".`)
        return yield* toMachine(m)
      }),
      machineConfig: (id) => machinesById.get(id),
      operators: Effect.forEach(config.operators, (o) =>
        Effect.map(
          Effect.forEach(config.machines.filter((m) => m.operator === o.id), (m) =>
            Effect.map(status.get(m.id), (s) => ({ id: m.id, name: m.name, health: s.health }))),
          (machines) => ({ ...o, machines })
        )),
      operator: (id) => {
        const o = operatorsById.get(id)
        return o === undefined
          ? Effect.fail(catalogueError("operator_not_found", `No operator "${id}".`))
          : Effect.succeed({
            id: o.id, name: o.name, website: o.website, featured: o.featured, certifications: o.certifications
          })
      },
      routes,
      packages: config.packages,
      paymentMethods: {
        card: { available: payments.card !== null, processor: payments.card?.processor ?? "none" },
        stablecoin: {
          available: payments.stablecoin !== null,
          processor: payments.stablecoin?.processor ?? "none",
          options: (payments.stablecoin?.options ?? []).map(({ chain, token }) => ({ chain, token }))
        }
      },
      prices: {
        unit: "credit",
        services: config.prices.services.map(({ service, group, name, unit, unit_label, credits_per_unit, allowances }) => ({
          service, group, name, unit, unit_label, credits_per_unit, allowances
        })),
        models: config.models.map((m) => ({ model: m.id, service: m.service, ...m.pricing }))
      },
      tiers: config.tiers
    })
  })
