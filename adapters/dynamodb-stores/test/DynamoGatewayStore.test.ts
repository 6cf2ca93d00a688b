/**
 * The gateway store contract on DynamoDB Local: `GatewayStoreComposed` over the DynamoDB stores of
 * one fresh table (`DynamoPlatformStores`). DynamoDB Local is started for this file and stopped
 * after it.
 */
import { gatewayStoreContract } from "@model-platform/contract-kit/GatewayStoreContract"
import { Layer } from "effect"
import { DynamoPlatformStores } from "../src/DynamoPlatformStores.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("gateway-test")

gatewayStoreContract(
  "GatewayStoreComposed on the DynamoDB stores (DynamoDB Local)",
  DynamoPlatformStores.pipe(Layer.provide(freshTable()))
)
