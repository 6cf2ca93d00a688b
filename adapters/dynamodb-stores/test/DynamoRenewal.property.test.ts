/** Concurrent renewal jobs charge a due card plan at most once on the DynamoDB stores (RenewalProperty.ts), on DynamoDB Local. */
import { AccountStoreMemory } from "@model-platform/memory-stores/MemoryStores"
import { renewalProperty } from "@model-platform/contract-kit/RenewalProperty"
import { Layer } from "effect"
import { AlertStoreDynamo } from "../src/DynamoAlertStore.ts"
import { BillingSettingsStoreDynamo } from "../src/DynamoBillingSettingsStore.ts"
import { LedgerStoreDynamo } from "../src/DynamoLedgerStore.ts"
import { OrderStoreDynamo } from "../src/DynamoOrderStore.ts"
import { PlanStoreDynamo } from "../src/DynamoPlanStore.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("renewal-property")

renewalProperty(
  "plan renewals on DynamoDB Local",
  Layer.mergeAll(PlanStoreDynamo, AlertStoreDynamo, LedgerStoreDynamo, OrderStoreDynamo, BillingSettingsStoreDynamo).pipe(
    Layer.provide(freshTable()),
    Layer.merge(AccountStoreMemory)
  ),
  12
)
