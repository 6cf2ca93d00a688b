/** The catalogue area's public entry (docs/architecture.md "Areas"). */
export * from "./Catalogue.ts"
export * from "./CatalogueConfig.ts"
export * from "./CatalogueErrors.ts"
export * from "./Charging.ts"
export * from "./MachineStatus.ts"
export * from "./Routing.ts"
export * from "./StablecoinConfig.ts"
