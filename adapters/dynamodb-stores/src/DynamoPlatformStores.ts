/**
 * Every store the platform needs (core's `PlatformStores`) on the one DynamoDB table, its
 * unreachability marked StoreUnavailable (DynamoUnavailable.ts).
 */
import { markPlatformStores, type PlatformStores } from "@model-platform/core/http"
import { GatewayStoreComposed } from "@model-platform/core/gateway"
import { Layer } from "effect"
import { AgentStoreDynamo, ApprovalStoreDynamo, DocumentStoresDynamo } from "./DynamoDocuments.ts"
import { AlertStoreDynamo } from "./DynamoAlertStore.ts"
import { BillingSettingsStoreDynamo } from "./DynamoBillingSettingsStore.ts"
import { DepositWatchStoreDynamo } from "./DynamoDepositWatchStore.ts"
import { LedgerStoreDynamo } from "./DynamoLedgerStore.ts"
import { OrderStoreDynamo } from "./DynamoOrderStore.ts"
import { PeopleStoreDynamo } from "./DynamoPeopleStore.ts"
import { PlanStoreDynamo } from "./DynamoPlanStore.ts"
import { RateLimitStoreDynamo } from "./DynamoRateLimitStore.ts"
import { DynamoStores } from "./DynamoStores.ts"
import type { DynamoConfig } from "./DynamoTable.ts"
import { isDynamoUnavailable } from "./DynamoUnavailable.ts"
import { UsageStoreDynamo } from "./DynamoUsageStore.ts"

export const DynamoPlatformStores: Layer.Layer<PlatformStores, never, DynamoConfig> = markPlatformStores(isDynamoUnavailable).pipe(
  Layer.provide(Layer.provideMerge(
    GatewayStoreComposed,
    Layer.mergeAll(
      DynamoStores,
      LedgerStoreDynamo,
      OrderStoreDynamo,
      UsageStoreDynamo,
      RateLimitStoreDynamo,
      PeopleStoreDynamo,
      BillingSettingsStoreDynamo,
      AlertStoreDynamo,
      PlanStoreDynamo,
      AgentStoreDynamo,
      ApprovalStoreDynamo,
      DocumentStoresDynamo,
      DepositWatchStoreDynamo
    )
  ))
)
