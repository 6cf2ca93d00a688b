/** The alert store contract on DynamoDB Local. */
import { alertStoreContract } from "@model-platform/contract-kit/AlertContract"
import { Layer } from "effect"
import { AlertStoreDynamo } from "../src/DynamoAlertStore.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("alerts-test")

alertStoreContract("AlertStoreDynamo on DynamoDB Local", AlertStoreDynamo.pipe(Layer.provide(freshTable())))
