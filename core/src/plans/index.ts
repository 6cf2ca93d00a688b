/** The plans area's public entry (docs/architecture.md "Areas"). */
export * from "./Offers.ts"
export * from "./PlanErrors.ts"
export * from "./PlanStates.ts"
export * from "./PlanStore.ts"
export * from "./Plans.ts"
export * from "./Schemas.ts"
export * from "./ScopeTargetsFromPlans.ts"
