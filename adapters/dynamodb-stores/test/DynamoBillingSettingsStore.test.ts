/** The billing settings store contract on DynamoDB Local. */
import { billingSettingsStoreContract } from "@model-platform/contract-kit/BillingSettingsContract"
import { Layer } from "effect"
import { BillingSettingsStoreDynamo } from "../src/DynamoBillingSettingsStore.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("billing-settings-test")

billingSettingsStoreContract("BillingSettingsStoreDynamo on DynamoDB Local", BillingSettingsStoreDynamo.pipe(Layer.provide(freshTable())))
