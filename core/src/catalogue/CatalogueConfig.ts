/**
 * The catalogue configuration file (docs/catalogue.md): operators, machines, models, packages,
 * payment methods, prices, tiers and plan allowances. Adapters read the file; this schema decides
 * what a valid catalogue is, and `validateCatalogue` checks the references between its parts.
 */
import { Effect, Schema } from "effect"
import { MAX_EMBEDDING_TEXTS } from "../kernel/Limits.ts"
import { CreditAmount } from "../kernel/Money.ts"
import { StablecoinConfig, stablecoinProblems } from "./StablecoinConfig.ts"

/** How an order can be paid: the rails a catalogue may offer (its `payments`). */
export const PaymentMethodValues = ["card", "stablecoin"] as const
export const PaymentMethod = Schema.Literals(PaymentMethodValues)
export type PaymentMethod = typeof PaymentMethod.Type

const Id = Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9._:-]{0,127}$/, {
  expected: "an id of lowercase letters, digits, dots, dashes, underscores and colons"
}))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const NonNegativeCredits = CreditAmount.check(Schema.isGreaterThanOrEqualTo(0))

export const OperatorConfig = Schema.Struct({
  id: Id,
  name: Schema.String,
  website: Schema.String,
  description: Schema.String,
  featured: Schema.Boolean,
  certifications: Schema.Array(Schema.String)
})

export const Gpu = Schema.Struct({ model: Schema.String, count: PositiveInt, vram_gb: NonNegativeInt })

export const Hardware = Schema.Struct({
  gpus: Schema.Array(Gpu),
  cpu_cores: PositiveInt,
  memory_gb: PositiveInt,
  storage_gb: NonNegativeInt
})

/** Rent and subscribe offers: shown as configured; null when not offered. */
export const Offer = Schema.NullOr(Schema.Record(Schema.String, Schema.Json))

export const MachineConfig = Schema.Struct({
  id: Id,
  name: Schema.String,
  operator: Id,
  region: Schema.String,
  /** Base URL of the machine's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8101/v1 */
  base_url: Schema.String,
  hardware: Hardware,
  serverless_models: Schema.Array(Id),
  rent: Offer,
  subscribe: Offer,
  network: Schema.Struct({ status: Schema.String, reachability: Schema.String }),
  /** Routing weight set by the platform (higher routes first among healthy machines). */
  score: Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 1 })),
  /** Health assumed until the health checker has observed the machine. */
  initial_health: Schema.Literals(["online", "degraded", "offline"])
})

/** An image size as OpenAI writes it: `WIDTHxHEIGHT` in pixels, e.g. `1024x1024`. */
export const ImageSize = Schema.String.check(Schema.isPattern(/^[1-9]\d{0,4}x[1-9]\d{0,4}$/, {
  expected: "an image size WIDTHxHEIGHT, e.g. 1024x1024"
}))

export const ModelEndpoint = Schema.Literals([
  "/v1/chat/completions", "/v1/embeddings", "/v1/forecasts", "/v1/images/generations"
])

export const ModelConfig = Schema.Struct({
  id: Id,
  name: Schema.String,
  family: Schema.String,
  description: Schema.String,
  modality: Schema.String,
  /** The service the model's usage is billed under in the price table (e.g. chat, embeddings). */
  service: Id,
  owned_by: Schema.String,
  endpoint: ModelEndpoint,
  context_length: PositiveInt,
  max_output_tokens: NonNegativeInt,
  features: Schema.Array(Schema.String),
  pricing: Schema.Struct({
    input_credits_per_mtok: NonNegativeCredits,
    output_credits_per_mtok: NonNegativeCredits,
    credits_per_request: NonNegativeCredits
  }),
  /**
   * Model-specific limits: embedding dimensions and texts, forecast history and horizon, image
   * sizes (the first is the default). `modelLimits` fills in the defaults of those left out.
   */
  limits: Schema.optionalKey(Schema.Struct({
    dimensions: Schema.optionalKey(Schema.Array(PositiveInt)),
    max_history: Schema.optionalKey(PositiveInt),
    max_horizon: Schema.optionalKey(PositiveInt),
    max_inputs: Schema.optionalKey(PositiveInt),
    image_sizes: Schema.optionalKey(Schema.Array(ImageSize).check(Schema.isMinLength(1, { expected: "at least one size" })))
  }))
})

export const PackageConfig = Schema.Struct({
  id: Id,
  name: Schema.String,
  description: Schema.String,
  kind: Schema.Literals(["package", "offer"]),
  amount_usd: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 100_000 })),
  credits: NonNegativeCredits,
  machine_id: Schema.NullOr(Id)
})

export const PaymentsConfig = Schema.Struct({
  /** The card processor; null while card payments are not set up. */
  card: Schema.NullOr(Schema.Struct({ processor: Schema.String })),
  /** The stablecoin rail and its options (StablecoinConfig.ts); null while not set up. */
  stablecoin: Schema.NullOr(StablecoinConfig),
  /** When charging opens once a rail is set (ISO timestamp), or null for at once. */
  charging_starts_at: Schema.NullOr(Schema.String)
})
export type PaymentsConfig = typeof PaymentsConfig.Type

export const Allowances = Schema.Struct({
  free: NonNegativeCredits,
  builder: NonNegativeCredits,
  scale: NonNegativeCredits,
  trial: NonNegativeCredits
})

export const ServicePriceConfig = Schema.Struct({
  service: Id,
  group: Schema.String,
  name: Schema.String,
  unit: Schema.String,
  unit_label: Schema.String,
  credits_per_unit: NonNegativeCredits,
  allowances: Allowances
})

export const TierConfig = Schema.Struct({
  tier: NonNegativeInt,
  name: Schema.String,
  purchased_credits: NonNegativeCredits,
  rpm: PositiveInt,
  monthly_limit_credits: NonNegativeCredits
})

export const CatalogueConfig = Schema.Struct({
  operators: Schema.Array(OperatorConfig),
  machines: Schema.Array(MachineConfig),
  models: Schema.Array(ModelConfig),
  packages: Schema.Array(PackageConfig),
  payments: PaymentsConfig,
  prices: Schema.Struct({
    /** Credits granted per US dollar; null while no credit price is set. */
    credits_per_usd: Schema.NullOr(PositiveInt),
    services: Schema.Array(ServicePriceConfig)
  }),
  tiers: Schema.Array(TierConfig).check(Schema.isMinLength(1))
})
export type CatalogueConfig = typeof CatalogueConfig.Type
export type MachineConfig = typeof MachineConfig.Type
export type ModelConfig = typeof ModelConfig.Type
export type OperatorConfig = typeof OperatorConfig.Type

/**
 * The bounds a model of a kind always has, for a catalogue that does not set them: a call is
 * priced per request, so what one request may ask for (steps forecast, pixels drawn) is bounded
 * even when the catalogue forgets to (docs/catalogue.md "Model").
 */
export const DEFAULT_MAX_HORIZON = 64
/** OpenAI's sizes of its smallest image model; the first is the default. */
export const DEFAULT_IMAGE_SIZES: ReadonlyArray<string> = ["1024x1024", "512x512", "256x256"]

/** Embeddings: the vector lengths a request may ask for (none: no `dimensions`). */
export const dimensionsOf = (model: ModelConfig): ReadonlyArray<number> => model.limits?.dimensions ?? []
/** Embeddings: texts per request, never above the spec's 256. */
export const maxInputsOf = (model: ModelConfig): number =>
  Math.min(model.limits?.max_inputs ?? MAX_EMBEDDING_TEXTS, MAX_EMBEDDING_TEXTS)
/** Forecasts: history values used (a longer history is cut to its newest). */
export const maxHistoryOf = (model: ModelConfig): number => model.limits?.max_history ?? model.context_length
/** Forecasts: the largest horizon. */
export const maxHorizonOf = (model: ModelConfig): number => model.limits?.max_horizon ?? DEFAULT_MAX_HORIZON
/** Images: the sizes drawn, the first the default. */
export const imageSizesOf = (model: ModelConfig): ReadonlyArray<string> => model.limits?.image_sizes ?? DEFAULT_IMAGE_SIZES

/** The limits a call of the model is held to, those of its endpoint only, defaults filled in. */
export const ModelLimits = Schema.Struct({
  dimensions: Schema.optionalKey(Schema.Array(Schema.Int)),
  max_inputs: Schema.optionalKey(Schema.Int),
  max_history: Schema.optionalKey(Schema.Int),
  max_horizon: Schema.optionalKey(Schema.Int),
  image_sizes: Schema.optionalKey(Schema.Array(Schema.String))
})
export type ModelLimits = typeof ModelLimits.Type

export const modelLimits = (model: ModelConfig): ModelLimits => {
  switch (model.endpoint) {
    case "/v1/embeddings":
      return { dimensions: dimensionsOf(model), max_inputs: maxInputsOf(model) }
    case "/v1/forecasts":
      return { max_history: maxHistoryOf(model), max_horizon: maxHorizonOf(model) }
    case "/v1/images/generations":
      return { image_sizes: imageSizesOf(model) }
    case "/v1/chat/completions":
      return {}
  }
}

/** Problems with references between parts of a decoded catalogue; empty when it is consistent. */
export const validateCatalogue = (config: CatalogueConfig): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const duplicates = (kind: string, ids: ReadonlyArray<string>) => {
    const seen = new Set<string>()
    for (const id of ids) {
      if (seen.has(id)) problems.push(`${kind} id "${id}" appears twice`)
      seen.add(id)
    }
    return seen
  }
  const operators = duplicates("operator", config.operators.map((o) => o.id))
  const machines = duplicates("machine", config.machines.map((m) => m.id))
  const models = duplicates("model", config.models.map((m) => m.id))
  duplicates("package", config.packages.map((p) => p.id))
  const services = duplicates("price service", config.prices.services.map((s) => s.service))
  for (const model of config.models) {
    if (!services.has(model.service)) problems.push(`model "${model.id}" is billed under unknown service "${model.service}"`)
  }
  for (const machine of config.machines) {
    if (!operators.has(machine.operator)) {
      problems.push(`machine "${machine.id}" names unknown operator "${machine.operator}"`)
    }
    for (const model of machine.serverless_models) {
      if (!models.has(model)) problems.push(`machine "${machine.id}" serves unknown model "${model}"`)
    }
  }
  for (const pkg of config.packages) {
    if (pkg.machine_id !== null && !machines.has(pkg.machine_id)) {
      problems.push(`package "${pkg.id}" pins unknown machine "${pkg.machine_id}"`)
    }
  }
  problems.push(...stablecoinProblems(config.payments.stablecoin))
  const tiers = config.tiers.map((t) => t.purchased_credits)
  if (config.tiers[0]?.purchased_credits !== 0) problems.push("the first tier must start at 0 purchased credits")
  if (tiers.some((c, i) => i > 0 && c <= tiers[i - 1]!)) {
    problems.push("tiers must be listed by strictly rising purchased_credits")
  }
  return problems
}

export class CatalogueInvalid extends Schema.TaggedError<CatalogueInvalid>()("CatalogueInvalid", {
  message: Schema.String
}) {}

/**
 * A catalogue from the JSON text of a catalogue file: decoded strictly (an unknown field is an
 * error, so a misspelt one is not silently dropped) and checked with validateCatalogue.
 * Every shell reads its catalogue through this.
 */
export const parseCatalogue = Effect.fnUntraced(function*(text: string) {
  const json = yield* Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (e) => new CatalogueInvalid({ message: `not valid JSON: ${String(e)}` })
  })
  const config = yield* Schema.decodeUnknownEffect(CatalogueConfig)(json, { onExcessProperty: "error" }).pipe(
    Effect.mapError((e) => new CatalogueInvalid({ message: e.message }))
  )
  const problems = validateCatalogue(config)
  if (problems.length > 0) return yield* new CatalogueInvalid({ message: problems.join("; ") })
  return config
})
