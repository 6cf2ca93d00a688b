/** Automatic top-ups charge exactly once per crossing on the DynamoDB stores (TopUpProperty.ts), on DynamoDB Local. */
import { AccountStoreMemory } from "@model-platform/memory-stores/MemoryStores"
import { topUpProperty } from "@model-platform/contract-kit/TopUpProperty"
import { Layer } from "effect"
import { AlertStoreDynamo } from "../src/DynamoAlertStore.ts"
import { BillingSettingsStoreDynamo } from "../src/DynamoBillingSettingsStore.ts"
import { LedgerStoreDynamo } from "../src/DynamoLedgerStore.ts"
import { OrderStoreDynamo } from "../src/DynamoOrderStore.ts"
import { PlanStoreDynamo } from "../src/DynamoPlanStore.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("top-up-property")

topUpProperty(
  "automatic top-ups on DynamoDB Local",
  Layer.mergeAll(AlertStoreDynamo, LedgerStoreDynamo, OrderStoreDynamo, PlanStoreDynamo, BillingSettingsStoreDynamo).pipe(
    Layer.provide(freshTable()),
    Layer.merge(AccountStoreMemory)
  ),
  10
)
