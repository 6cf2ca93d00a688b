/**
 * Every store the platform needs (core's `PlatformStores`) on one Postgres database, with the
 * failures that mean the database is unreachable marked StoreUnavailable (PgUnavailable.ts).
 */
import { markPlatformStores, type PlatformStores } from "@model-platform/core/http"
import { Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { AgentStorePg, ApprovalStorePg, DocumentStoresPg } from "./PgDocuments.ts"
import { AlertStorePg } from "./PgAlertStore.ts"
import { BillingSettingsStorePg } from "./PgBillingSettingsStore.ts"
import { DepositWatchStorePg } from "./PgDepositWatchStore.ts"
import { GatewayStorePg } from "./PgGatewayStore.ts"
import { LedgerStorePg } from "./PgLedgerStore.ts"
import { OrderStorePg } from "./PgOrderStore.ts"
import { PeopleStorePg } from "./PgPeopleStore.ts"
import { PlanStorePg } from "./PgPlanStore.ts"
import { RateLimitStorePg } from "./PgRateLimitStore.ts"
import { PgStores } from "./PgStores.ts"
import { isPgUnavailable } from "./PgUnavailable.ts"
import { UsageStorePg } from "./PgUsageStore.ts"

export const PgPlatformStores: Layer.Layer<PlatformStores, never, SqlClient.SqlClient> = markPlatformStores(isPgUnavailable).pipe(Layer.provide(Layer.mergeAll(
  PgStores,
  LedgerStorePg,
  OrderStorePg,
  UsageStorePg,
  RateLimitStorePg,
  GatewayStorePg,
  PeopleStorePg,
  BillingSettingsStorePg,
  AlertStorePg,
  PlanStorePg,
  AgentStorePg,
  ApprovalStorePg,
  DocumentStoresPg,
  DepositWatchStorePg
)))
