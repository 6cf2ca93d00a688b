/**
 * Probes and request ids (test-harness OperationsSuite) through the Lambda handler on DynamoDB
 * Local; API Gateway's request id becomes the request's id; JSON log lines carry it.
 */
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { operationsSuite } from "@model-platform/test-harness/OperationsSuite"
import { operatorSuite } from "@model-platform/test-harness/OperatorSuite"
import { startLambda } from "./support.ts"

operationsSuite("lambda (API Gateway v2)", () => startLambda(fixtureCatalogue))

operatorSuite("lambda (API Gateway v2), DynamoDB Local", (operatorKeys) => startLambda(fixtureCatalogue, { platform: { operatorKeys } }))
