/**
 * Test support for the Lambda shell (DynamoDB Local and its fresh tables are in
 * adapters/dynamodb-stores/test/dynamoLocal.ts): the other half of API Gateway: a web Request made
 * into the payload 2.0 event API Gateway would send, and the handler's result made back into the
 * web Response the client would get. With these the shared HTTP suite drives the real handler
 * in-process.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { cardProcessorLayer, type PlatformOptions, ApiKeysLive } from "@model-platform/core/http"
import { Alerts, AutoReload, TopUps, UsageStore } from "@model-platform/core/billing"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { SmtpEmailSender } from "@model-platform/node-http/SmtpEmailSender"
import type { AlertsShell } from "@model-platform/test-harness/BillingAlertsSuite"
import { Catalogue } from "@model-platform/core/catalogue"
import { createAccount } from "@model-platform/test-harness/Accounts"
import type { StatementsShell } from "@model-platform/test-harness/BillingStatementsSuite"
import type { SeedServices } from "@model-platform/test-harness/HttpSuite"
import { DocumentStores } from "@model-platform/core/kernel"
import type { DocumentReader } from "@model-platform/test-harness/HttpSuite"
import { DocumentStoresDynamo } from "@model-platform/dynamodb-stores"
import { Effect, Layer, Redacted } from "effect"
import { DynamoPlatformStores } from "@model-platform/dynamodb-stores"
import { UsageStoreDynamo } from "@model-platform/dynamodb-stores"
import { LedgerStoreDynamo } from "@model-platform/dynamodb-stores"
import { DynamoConfig, type DynamoSettings } from "@model-platform/dynamodb-stores"
import { isTextualContentType } from "../src/Events.ts"
import { type InvocationContext, type LambdaHandler, makeHandler } from "../src/Handler.ts"
import { startDynamoLocal, tableOn } from "../../dynamodb-stores/test/dynamoLocal.ts"

// ---------------------------------------------------------------------------------------------
// the API Gateway side

const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304])

/**
 * The event API Gateway (HTTP API, payload 2.0) sends for a request: raw path and query, lowercase
 * headers without Cookie, cookies split into `cookies`, textual bodies as text and others base64.
 */
export const requestToEvent = async (request: Request): Promise<APIGatewayProxyEventV2> => {
  const url = new URL(request.url)
  const headers: Record<string, string> = {}
  let cookies: Array<string> | undefined
  request.headers.forEach((value, name) => {
    if (name === "cookie") cookies = value.split(/;\s*/)
    else headers[name] = value
  })
  headers.host = url.host
  const queryStringParameters: Record<string, string> = {}
  url.searchParams.forEach((value, name) => {
    queryStringParameters[name] = name in queryStringParameters ? `${queryStringParameters[name]},${value}` : value
  })
  const bytes = new Uint8Array(await request.arrayBuffer())
  const contentType = request.headers.get("content-type")
  const textual = contentType === null || isTextualContentType(contentType)
  const body = bytes.length === 0
    ? undefined
    : textual
    ? new TextDecoder().decode(bytes)
    : Buffer.from(bytes).toString("base64")
  const now = new Date()
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    ...(cookies === undefined ? {} : { cookies }),
    headers,
    ...(url.search === "" ? {} : { queryStringParameters }),
    requestContext: {
      accountId: "123456789012",
      apiId: "api-id",
      domainName: url.hostname,
      domainPrefix: url.hostname.split(".")[0] ?? "",
      http: {
        method: request.method,
        path: url.pathname,
        protocol: "HTTP/1.1",
        sourceIp: "192.0.2.1",
        userAgent: request.headers.get("user-agent") ?? ""
      },
      requestId: crypto.randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: now.toUTCString(),
      timeEpoch: now.getTime()
    },
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: body !== undefined && !textual
  }
}

/** The response API Gateway makes of a handler's result. */
export const resultToResponse = (result: APIGatewayProxyStructuredResultV2): Response => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(result.headers ?? {})) headers.set(name, String(value))
  for (const cookie of result.cookies ?? []) headers.append("set-cookie", cookie)
  const status = result.statusCode ?? 200
  const body = result.body === undefined || NULL_BODY_STATUSES.has(status)
    ? null
    : result.isBase64Encoded
    ? new Uint8Array(Buffer.from(result.body, "base64"))
    : result.body
  return new Response(body, { status, headers })
}

/** A Lambda context with plenty of time left. */
export const invocationContext: InvocationContext = { getRemainingTimeInMillis: () => 30_000 }

/** Sends a request through the handler as API Gateway would. */
export const invoke = async (handler: LambdaHandler, request: Request): Promise<Response> =>
  resultToResponse(await handler(await requestToEvent(request), invocationContext))

// ---------------------------------------------------------------------------------------------
// the shell under test

/**
 * The billing page's "save a card" (AutoReload.saveCard) on the same table, as another container
 * serving the page would run it.
 */
const saveCardOn = (catalogue: CatalogueConfig, dynamo: DynamoSettings): AlertsShell["saveCard"] => {
  const topUps = TopUps.layer.pipe(Layer.provideMerge(Alerts.layer), Layer.provide(Ledger.layer))
  const services = AutoReload.layer.pipe(
    Layer.provide(topUps),
    Layer.provide(Layer.mergeAll(cardProcessorLayer(catalogue.payments, undefined), Catalogue.layer(catalogue))),
    Layer.provide(DynamoPlatformStores),
    Layer.provide(DynamoConfig.layer(dynamo))
  )
  return (accountId, card) =>
    Effect.runPromise(Effect.flatMap(AutoReload, (autoReload) => autoReload.saveCard(accountId, card)).pipe(Effect.provide(services)))
}

/** Runs an effect on the shell's table (keys, accounts, plans, agents), as another container would. */
const seedOn = (catalogue: CatalogueConfig, dynamo: DynamoSettings) => {
  const services = ApiKeysLive.pipe(
    Layer.provideMerge(DynamoPlatformStores),
    Layer.provide(Catalogue.layer(catalogue)),
    Layer.provide(DynamoConfig.layer(dynamo))
  )
  return <A, E>(effect: Effect.Effect<A, E, SeedServices>): Promise<A> => Effect.runPromise(Effect.provide(effect, services))
}

/** The Lambda handler over a fresh table on its own DynamoDB Local, for the shared HTTP suite. */
export const startLambda = async (
  catalogue: CatalogueConfig,
  options: { readonly smtpUrl?: string; readonly platform?: PlatformOptions; readonly publicUrl?: string } = {}
): Promise<
  StatementsShell & AlertsShell & DocumentReader & { readonly handler: LambdaHandler; readonly dynamo: DynamoSettings }
> => {
  const local = await startDynamoLocal()
  try {
    const dynamo = await tableOn(local)
    const handler = makeHandler({
      catalogue,
      ownerEmail: "owner@test.local",
      dynamo,
      publicUrl: options.publicUrl,
      platform: {
        ...options.platform,
        ...(options.smtpUrl === undefined
          ? {}
          : { alertMail: SmtpEmailSender({ url: Redacted.make(options.smtpUrl), from: "billing@platform.test" }) })
      }
    })
    const close = async () => {
      await handler.dispose()
      dynamo.client.destroy()
      await local.stop()
    }
    try {
      const owner = await handler.firstStart()
      return {
        handler,
        dynamo,
        ownerSecret: owner?.key.secret ?? "",
        // Made on the same table, as a sign-up through the handler would.
        newAccount: () => seedOn(catalogue, dynamo)(createAccount(`user-${crypto.randomUUID()}@test.local`)),
        seed: seedOn(catalogue, dynamo),
        fetch: (path, init) => invoke(handler, new Request(`https://api.platform.test${path}`, init)),
        saveCard: saveCardOn(catalogue, dynamo),
        // Read on the same table, as another function would.
        document: (kind, id) =>
          Effect.runPromise(
            Effect.flatMap(DocumentStores, (stores) => stores.of(kind).get(id)).pipe(
              Effect.provide(DocumentStoresDynamo.pipe(Layer.provide(DynamoConfig.layer(dynamo))))
            )
          ),
        // Written on the same table, as the handler's metering would.
        recordUsage: (records) =>
          Effect.runPromise(
            Effect.flatMap(UsageStore, (usage) => Effect.forEach(records, usage.record, { discard: true })).pipe(
              Effect.provide(UsageStoreDynamo.pipe(Layer.provide(DynamoConfig.layer(dynamo))))
            )
          ),
        postCredits: (entries) =>
          Effect.runPromise(
            Effect.flatMap(LedgerStore, (ledger) => Effect.forEach(entries, ledger.post, { discard: true })).pipe(
              Effect.provide(LedgerStoreDynamo.pipe(Layer.provide(DynamoConfig.layer(dynamo))))
            )
          ),
        close
      }
    } catch (error) {
      await close()
      throw error
    }
  } catch (error) {
    await local.stop()
    throw error
  }
}
