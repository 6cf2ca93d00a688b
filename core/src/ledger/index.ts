/** The ledger area's public entry (docs/architecture.md "Areas"). */
export * from "./BudgetScope.ts"
export * from "./Credits.ts"
export * from "./Ledger.ts"
export * from "./LedgerErrors.ts"
export * from "./LedgerRules.ts"
export * from "./LedgerStore.ts"
export * from "./LedgerStoreRules.ts"
export * from "./ReservationSweeper.ts"
