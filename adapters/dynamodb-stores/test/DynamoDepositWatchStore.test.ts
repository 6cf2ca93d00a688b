/**
 * The deposit watch store contract on DynamoDB Local, on a fresh table. One DynamoDB Local serves
 * the file and is stopped after it.
 */
import { depositWatchStoreContract } from "@model-platform/contract-kit/DepositWatchContract"
import { Layer } from "effect"
import { DepositWatchStoreDynamo } from "../src/DynamoDepositWatchStore.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("deposit-watch-test")

depositWatchStoreContract("DepositWatchStoreDynamo on DynamoDB Local", DepositWatchStoreDynamo.pipe(Layer.provide(freshTable())))
