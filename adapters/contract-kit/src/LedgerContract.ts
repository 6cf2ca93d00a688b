/**
 * The contract suite of the ledger store port (core/src/ledger/LedgerStore.ts). Every
 * implementation runs it against its own layer: `ledgerStoreContract("memory", LedgerStoreMemory)`.
 *
 * The layer is built once per suite and shared by its tests, so every test works on fresh random
 * account ids and refs and never assumes an empty store (the suite can run against a persistent
 * database that earlier runs have written to). Times are explicit: reservations that must stay
 * pending expire in 2100, and the expiry tests work in the year 2000, so `expire` in one test
 * never touches another test's reservations.
 */
import { layer } from "@effect/vitest"
import type { Layer } from "effect"
import type { LedgerStore } from "@model-platform/core/ledger"
import { budgetTests } from "./BudgetContract.ts"
import { creditTotalsTests } from "./CreditTotalsContract.ts"
import { budgetProperty } from "./BudgetProperty.ts"
import { grantTests } from "./GrantContract.ts"
import { grantProperty } from "./GrantProperty.ts"
import { drawTests } from "./DrawContract.ts"
import { drawProperty } from "./DrawProperty.ts"
import { entriesTests } from "./LedgerEntriesContract.ts"
import { reserveTests } from "./LedgerReserveContract.ts"
import { settleTests } from "./LedgerSettleContract.ts"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

export interface LedgerContractOptions {
  /** Scenarios of the budgets' interleaving property (BudgetProperty.ts); env BUDGET_PROPERTY_RUNS overrides. */
  readonly budgetRuns?: number
}

/** Declares the ledger store contract on `storeLayer` (built once for the suite). */
export const ledgerStoreContract = <E>(
  name: string,
  storeLayer: Layer.Layer<LedgerStore, E>,
  options: LedgerContractOptions = {}
): void =>
  layer(storeLayer, layerOptions)(name, (it) => {
    entriesTests(it)
    reserveTests(it)
    settleTests(it)
    budgetTests(it)
    grantTests(it)
    drawTests(it)
    creditTotalsTests(it)
    const runs = Number(process.env["BUDGET_PROPERTY_RUNS"] ?? options.budgetRuns ?? 30)
    budgetProperty(it, runs)
    grantProperty(it, runs)
    drawProperty(it, runs)
  })
