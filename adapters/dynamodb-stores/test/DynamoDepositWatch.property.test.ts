/** Racing deposit watchers over reorgs pay once on the DynamoDB stores (DepositWatchProperty.ts), on DynamoDB Local. */
import { depositWatchProperty } from "@model-platform/contract-kit/DepositWatchProperty"
import { Layer } from "effect"
import { DepositWatchStoreDynamo } from "../src/DynamoDepositWatchStore.ts"
import { LedgerStoreDynamo } from "../src/DynamoLedgerStore.ts"
import { OrderStoreDynamo } from "../src/DynamoOrderStore.ts"
import { PlanStoreDynamo } from "../src/DynamoPlanStore.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("deposit-watch-property")

depositWatchProperty(
  "the deposit watcher on DynamoDB Local",
  Layer.mergeAll(OrderStoreDynamo, LedgerStoreDynamo, PlanStoreDynamo, DepositWatchStoreDynamo).pipe(Layer.provide(freshTable())),
  10
)
