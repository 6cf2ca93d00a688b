import { allStoreContracts } from "@model-platform/test-harness/StoreContract"
import { Layer } from "effect"
import { DynamoStores } from "../src/DynamoStores.ts"
import { LocalTable } from "./support.ts"

allStoreContracts("DynamoDB stores on DynamoDB Local", DynamoStores.pipe(Layer.provide(LocalTable)))
