/** The operator area's public entry (docs/architecture.md "Areas"). */
export * from "./Audit.ts"
export * from "./Operator.ts"
export * from "./OperatorKeys.ts"
