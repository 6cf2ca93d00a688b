/**
 * @model-platform/postgres-stores: every store port of @model-platform/core on PostgreSQL, and the
 * migrations that make their tables (docs/implementing-a-store.md). Each layer needs effect/sql's
 * `SqlClient` on a migrated database: `Database.layer` of "@model-platform/postgres-stores/database"
 * gives one (a PostgreSQL server, or PGlite embedded), or run `migrate` on a client of your own.
 */
export { PgPlatformStores } from "./PgPlatformStores.ts"
export { AccountStorePg, IdempotencyStorePg, KeyStorePg, PgStores } from "./PgStores.ts"
export { LedgerStorePg } from "./PgLedgerStore.ts"
export { OrderStorePg } from "./PgOrderStore.ts"
export { UsageStorePg } from "./PgUsageStore.ts"
export { RateLimitStorePg } from "./PgRateLimitStore.ts"
export { GatewayStorePg } from "./PgGatewayStore.ts"
export { PeopleStorePg } from "./PgPeopleStore.ts"
export { BillingSettingsStorePg } from "./PgBillingSettingsStore.ts"
export { AlertStorePg } from "./PgAlertStore.ts"
export { PlanStorePg } from "./PgPlanStore.ts"
export { AgentStorePg, ApprovalStorePg, DocumentStoresPg } from "./PgDocuments.ts"
export { DepositWatchStorePg } from "./PgDepositWatchStore.ts"
export { migrate, migrations } from "./migrations.ts"
export { isPgUnavailable } from "./PgUnavailable.ts"
export { AccountNoticesPg } from "./PgAccountNotices.ts"
