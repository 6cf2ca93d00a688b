/** The observability area's public entry (docs/architecture.md "Areas"). */
export * from "./Emf.ts"
export * from "./Logging.ts"
export * from "./Metrics.ts"
export * from "./Requests.ts"
