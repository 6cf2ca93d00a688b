/** Statements close month over month on the DynamoDB stores (StatementsProperty.ts), on DynamoDB Local. */
import { statementsProperty } from "@model-platform/contract-kit/StatementsProperty"
import { Layer } from "effect"
import { LedgerStoreDynamo } from "../src/DynamoLedgerStore.ts"
import { UsageStoreDynamo } from "../src/DynamoUsageStore.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("statements-property")

statementsProperty(
  "statements on DynamoDB Local",
  Layer.mergeAll(LedgerStoreDynamo, UsageStoreDynamo).pipe(Layer.provide(freshTable())),
  5
)
