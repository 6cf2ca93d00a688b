/**
 * A call to admit (Admission.ts) and what its reservation is made against; shared by the call's
 * own admission and the credit leases' (LeaseAdmission.ts).
 */
import type { AgentRecord } from "../agents/Records.ts"
import type { AllowanceSource } from "../billing/Allowances.ts"
import type { MachineConfig } from "../catalogue/CatalogueConfig.ts"
import type { Caller } from "../keys/Caller.ts"
import type { BudgetClaim, GrantClaim } from "../ledger/LedgerStore.ts"
import type { Endpoint } from "./Validation.ts"

/** One call to admit. */
export interface Candidate {
  readonly caller: Caller
  readonly endpoint: Endpoint
  readonly now: number
  /** The first machine: the reservation is made for it (credits pinned to it may pay). */
  readonly first: MachineConfig
  /** The cost bound to reserve; undefined for a call that reserves nothing (unpriced). */
  readonly bound: bigint | undefined
  /** The call's service: its allowance and trial are taken from first. */
  readonly service: string
  /** Whose allowance of the service: the month's, or the key's plan's (billing/Allowances.ts). */
  readonly allowance: AllowanceSource
  /** The agent of an agent's key (its limits are claimed too), else undefined. */
  readonly agent: AgentRecord | undefined
}

/** What a reservation is made against: the monthly and agent limits it counts against, the grants it takes from first. */
export interface Claims {
  readonly budgets: ReadonlyArray<BudgetClaim>
  readonly grants: ReadonlyArray<GrantClaim>
}
