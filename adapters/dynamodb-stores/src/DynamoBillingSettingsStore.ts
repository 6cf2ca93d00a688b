/**
 * The billing settings store port (core/src/billing/BillingSettingsStore.ts) on the one DynamoDB
 * table of DynamoTable.ts, through the document client. One item per account:
 *
 *   BILLING#<account id>   SETTINGS   account_id, and each section of the record that was saved
 *
 * A section's attribute is its encoded form (core/src/billing/Settings.ts: JSON, amounts as
 * decimal strings), read back through the record's Schema; a section never saved is absent and
 * reads as its default. An update is one UpdateItem setting only the sections the patch names
 * (returning the item as it is after it), so concurrent updates of different sections both land.
 * Reads are strongly consistent.
 */
import { GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb"
import { type BillingSettingsPatch, BillingSettingsStore, decodeStored, encodePatch } from "@model-platform/core/billing"
import { Effect, Layer } from "effect"
import { call, retryConflictsBriefly } from "./DynamoErrors.ts"
import { DynamoConfig, type ItemKey } from "./DynamoTable.ts"

export const BillingSettingsKeys = {
  settings: (accountId: string): ItemKey => ({ pk: `BILLING#${accountId}`, sk: "SETTINGS" })
} as const

type Item = Record<string, unknown>

const read = (item: Item | undefined) => {
  const settings = decodeStored(item)
  return settings === undefined
    ? Effect.die(new Error("BillingSettingsStore: a stored item does not decode"))
    : Effect.succeed(settings)
}

export const BillingSettingsStoreDynamo: Layer.Layer<BillingSettingsStore, never, DynamoConfig> = Layer.effect(
  BillingSettingsStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig

    const get = (accountId: string) =>
      call((signal) =>
        client.send(
          new GetCommand({ TableName: tableName, Key: { ...BillingSettingsKeys.settings(accountId) }, ConsistentRead: true }),
          { abortSignal: signal }
        )
      ).pipe(
        Effect.orDie,
        Effect.flatMap((output) => read(output.Item)),
        Effect.withSpan("BillingSettingsStore.get")
      )

    const update = (accountId: string, patch: BillingSettingsPatch) => {
      const encoded = encodePatch(patch)
      if (encoded._tag === "invalid") return Effect.die(new Error(`BillingSettingsStore.update: ${encoded.message}`))
      const sections = Object.entries(encoded.sections)
      if (sections.length === 0) return get(accountId)
      // Section names are attribute names: placeholders keep them clear of DynamoDB's reserved words.
      const names: Record<string, string> = { "#account": "account_id" }
      const values: Record<string, unknown> = { ":account": accountId }
      const sets = ["#account = :account"]
      sections.forEach(([section, value], i) => {
        names[`#s${i}`] = section
        values[`:s${i}`] = value
        sets.push(`#s${i} = :s${i}`)
      })
      return call((signal) =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { ...BillingSettingsKeys.settings(accountId) },
            UpdateExpression: `SET ${sets.join(", ")}`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
            ReturnValues: "ALL_NEW"
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflictsBriefly,
        Effect.orDie,
        Effect.flatMap((output) => read(output.Attributes)),
        Effect.withSpan("BillingSettingsStore.update")
      )
    }

    return BillingSettingsStore.of({ get, update })
  })
)
