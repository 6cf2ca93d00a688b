/** The billing properties of the contract kit (BillingProperties.ts) on the DynamoDB stores, on DynamoDB Local. */
import { billingProperties } from "@model-platform/contract-kit/BillingProperties"
import { Layer } from "effect"
import { LedgerStoreDynamo } from "../src/DynamoLedgerStore.ts"
import { OrderStoreDynamo } from "../src/DynamoOrderStore.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("billing-properties")

billingProperties("billing on DynamoDB Local", Layer.mergeAll(LedgerStoreDynamo, OrderStoreDynamo).pipe(Layer.provide(freshTable())), { numRuns: 10 })
