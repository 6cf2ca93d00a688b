import { billingAlertsSuite } from "@model-platform/test-harness/BillingAlertsSuite"
import { billingStatementsSuite } from "@model-platform/test-harness/BillingStatementsSuite"
import { billingUsageSuite } from "@model-platform/test-harness/BillingUsageSuite"
import { boundarySuite, type RawSender, readAll } from "@model-platform/test-harness/BoundarySuite"
import { checkoutOnceSuite } from "@model-platform/test-harness/CheckoutOnceSuite"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { giftCodesSuite } from "@model-platform/test-harness/GiftCodesSuite"
import { platformHttpSuite } from "@model-platform/test-harness/HttpSuite"
import { permissionMatrixSuite } from "@model-platform/test-harness/PermissionMatrix"
import type { LambdaHandler } from "../src/Handler.ts"
import { invocationContext, requestToEvent, resultToResponse, startLambda } from "./support.ts"

platformHttpSuite("lambda (API Gateway v2)", () => startLambda(fixtureCatalogue))

permissionMatrixSuite("lambda (API Gateway v2)", () => startLambda(fixtureCatalogue))

giftCodesSuite("lambda (API Gateway v2)", () => startLambda(fixtureCatalogue))
checkoutOnceSuite("lambda (API Gateway v2)", (platform) => startLambda(fixtureCatalogue, { platform }))

billingUsageSuite("lambda (API Gateway v2)", () => startLambda(fixtureCatalogue))

billingStatementsSuite("lambda (API Gateway v2)", () => startLambda(fixtureCatalogue))

billingAlertsSuite("lambda (API Gateway v2)", ({ catalogue, smtpUrl }) => startLambda(catalogue, { smtpUrl }))

/** The event API Gateway sends, with the path and query as the client sent them (rawPath). */
const rawSender = (handler: LambdaHandler): RawSender => async (method, target, init = {}) => {
  const query = target.indexOf("?")
  const body = init.body === undefined ? undefined : new Uint8Array(await readAll(init.body))
  const event = await requestToEvent(
    new Request("https://api.platform.test/", { method, ...(init.headers === undefined ? {} : { headers: init.headers }), ...(body === undefined ? {} : { body }) })
  )
  const rawPath = query === -1 ? target : target.slice(0, query)
  const response = resultToResponse(
    await handler({ ...event, rawPath, rawQueryString: query === -1 ? "" : target.slice(query + 1) }, invocationContext)
  )
  return { status: response.status, headers: response.headers, text: await response.text() }
}

// API Gateway takes at most 10 MB of payload, and hands the Lambda the whole body at once.
boundarySuite("lambda (API Gateway v2)", async () => {
  const shell = await startLambda(fixtureCatalogue)
  return { ...shell, raw: rawSender(shell.handler) }
}, { hugeBodyBytes: 8 * 1000 * 1000, buffersBody: true })
