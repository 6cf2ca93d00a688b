/**
 * The monthly limits' and the allowances' HTTP suites (test-harness BillingLimitsSuite.ts,
 * BillingAllowancesSuite.ts) through the Lambda handler on DynamoDB Local (settled inline: a call's
 * charge is written before its answer).
 */
import { billingAllowancesSuite } from "@model-platform/test-harness/BillingAllowancesSuite"
import { billingLimitsSuite } from "@model-platform/test-harness/BillingLimitsSuite"
import { startLambda } from "./support.ts"

billingLimitsSuite("lambda (API Gateway v2), DynamoDB Local", (catalogue) => startLambda(catalogue))
billingAllowancesSuite("lambda (API Gateway v2), DynamoDB Local", (catalogue) => startLambda(catalogue))
