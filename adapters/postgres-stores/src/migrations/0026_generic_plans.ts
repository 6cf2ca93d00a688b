/**
 * The gateway's batch functions (0024_ledger_batches.ts) plan each of their statements once per
 * connection and keep that plan (`plan_cache_mode = force_generic_plan`), instead of planning
 * several statements again at every call.
 *
 * PostgreSQL re-plans a statement with parameters for each call while it judges a plan for those
 * values cheaper than a plan for any values. For these statements it always did, because it
 * estimates an array of unknown length at 100 elements. `pg_stat_statements` with
 * `track_planning` counted one plan per call for six statements of admission and commit, about
 * 0.4 ms of planning per call at c=1 (docs/performance.md "Plans kept"). The plans those
 * statements get are fixed anyway: 0024 allows index lookups only (BY_KEY), so a plan for any
 * values is the plan for these values. The gateway's cost guard
 * (adapters/node-http/test/GatewayCost.test.ts) still counts no row read by a sequential scan.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const BATCH_FUNCTIONS = ["ledger_reserve_batch", "ledger_finish_batch", "gateway_admit_batch", "gateway_commit"] as const

export const genericPlans = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const name of BATCH_FUNCTIONS) {
    yield* sql.unsafe(`ALTER FUNCTION ${name} SET plan_cache_mode = force_generic_plan`)
  }
})
