/**
 * Plans and rentals over time (test-harness PlansLifecycleSuite.ts) through the Lambda handler on
 * DynamoDB Local: the clock moved past a plan's period, the renewal job running in the container.
 */
import { plansLifecycleSuite } from "@model-platform/test-harness/PlansLifecycleSuite"
import { startLambda } from "./support.ts"

plansLifecycleSuite("lambda (API Gateway v2), DynamoDB Local", (catalogue, platform) => startLambda(catalogue, { platform }))
