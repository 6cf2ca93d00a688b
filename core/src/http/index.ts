/**
 * The http layer's public entry (docs/architecture.md "Areas"): the platform assembled
 * (PlatformServices, AppRoutes), its HTTP contracts (PlatformApi, InferenceApi, SimulatedApi) with
 * their security annotations, the error shape, the stores it needs and the idempotency records' port.
 * Handlers, raw routes and pages are its own.
 */
export * from "./AccountRequests.ts"
export * from "./Api.ts"
export * from "./ErrorShape.ts"
export * from "./Http.ts"
export * from "./IdempotencyStore.ts"
export * from "./InferenceApi.ts"
export * from "./InferenceRoutes.ts"
export * from "./Platform.ts"
export * from "./PlatformStores.ts"
export * from "./PublicUrl.ts"
export { answer, answered, isAreaError, refusalOf, REFUSALS, toPlatformError } from "./Refusals.ts"
export { INFERENCE_REFUSALS, inferenceRefusalOf, toInferenceError } from "./InferenceRefusals.ts"
export { INGEST_REFUSALS, ingestStatusOf } from "./IngestRefusals.ts"
export { headBytes } from "./RequestLimits.ts"
export * from "./Security.ts"
export * from "./Simulated.ts"
export * from "./OperatorRoutes.ts"
export * from "./observe/Health.ts"
export * from "./observe/Tracing.ts"
