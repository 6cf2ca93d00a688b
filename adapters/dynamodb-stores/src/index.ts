/**
 * @model-platform/dynamodb-stores: every store port of @model-platform/core in one DynamoDB table
 * (docs/lambda.md "Key design"), the table's definition, and the one-off backfills that bring a
 * table written by an earlier release up to date. Each layer needs `DynamoConfig` (a document
 * client and the table's name); `createTable` makes the table where none is deployed.
 */
export {
  createTable,
  DynamoConfig,
  type DynamoSettings,
  type ItemKey,
  ItemKeys,
  makeDocumentClient,
  PK,
  SK,
  tableDefinition,
  TTL_ATTRIBUTE
} from "./DynamoTable.ts"
export { DynamoPlatformStores } from "./DynamoPlatformStores.ts"
export { AccountStoreDynamo, DynamoStores, IdempotencyStoreDynamo, KeyStoreDynamo } from "./DynamoStores.ts"
export { LedgerStoreDynamo } from "./DynamoLedgerStore.ts"
export { OrderStoreDynamo } from "./DynamoOrderStore.ts"
export { UsageStoreDynamo } from "./DynamoUsageStore.ts"
export { RateLimitStoreDynamo } from "./DynamoRateLimitStore.ts"
export { PeopleStoreDynamo } from "./DynamoPeopleStore.ts"
export { BillingSettingsStoreDynamo } from "./DynamoBillingSettingsStore.ts"
export { AlertStoreDynamo } from "./DynamoAlertStore.ts"
export { PlanStoreDynamo } from "./DynamoPlanStore.ts"
export { AgentStoreDynamo, ApprovalStoreDynamo, DocumentStoresDynamo } from "./DynamoDocuments.ts"
export { DepositWatchStoreDynamo } from "./DynamoDepositWatchStore.ts"
export { isDynamoUnavailable } from "./DynamoUnavailable.ts"
export {
  type AccountReport,
  backfillCreditTotals,
  type BackfillOptions,
  type BackfillSummary
} from "./BackfillCreditTotals.ts"
export { backfillIdempotencyRecords, type BackfillIdempotencySummary } from "./BackfillIdempotencyRecords.ts"
export {
  backfillPlanRenewals,
  type BackfillPlanRenewalsOptions,
  type BackfillPlanRenewalsSummary,
  type PlanReport
} from "./BackfillPlanRenewals.ts"
