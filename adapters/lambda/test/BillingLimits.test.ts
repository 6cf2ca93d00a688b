/**
 * The monthly limits' HTTP suite (test-harness BillingLimitsSuite.ts) through the Lambda handler
 * on DynamoDB Local (settled inline: a call's charge is written before its answer).
 */
import { billingLimitsSuite } from "@model-platform/test-harness/BillingLimitsSuite"
import { startLambda } from "./support.ts"

billingLimitsSuite("lambda (API Gateway v2), DynamoDB Local", (catalogue) => startLambda(catalogue))
