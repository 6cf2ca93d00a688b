/**
 * The fuzz suite (test-harness FuzzSuite.ts) against the Lambda handler on DynamoDB Local, its
 * machines pointing at a reference machine started here. Each request is made into the payload 2.0
 * event API Gateway would send, with the raw path and query as generated (percent-encodings and dot
 * segments intact), text bodies as text and others base64.
 */
import type { APIGatewayProxyEventV2 } from "aws-lambda"
// The reference machine is the Node adapter's test dependency; the Lambda tests reach its source.
import { startReferenceMachine } from "../../reference-machine/src/ReferenceMachine.ts"
import { FUZZ_MACHINE_MODELS, fuzzCatalogue } from "@model-platform/test-harness/FuzzCatalogue"
import { type FuzzShell, fuzzSuite, type RawAnswer, type RawRequest } from "@model-platform/test-harness/FuzzSuite"
import { Effect } from "effect"
import { createTable, DynamoConfig, makeDocumentClient } from "@model-platform/dynamodb-stores"
import { isTextualContentType } from "../src/Events.ts"
import { makeHandler } from "../src/Handler.ts"
import { localClientConfig, startDynamoLocal } from "../../dynamodb-stores/test/dynamoLocal.ts"
import { invocationContext, resultToResponse } from "./support.ts"

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** The event API Gateway (HTTP API, payload 2.0) sends for a request, raw path and query kept. */
export const eventOf = (request: RawRequest): APIGatewayProxyEventV2 => {
  const at = request.target.indexOf("?")
  const rawPath = at < 0 ? request.target : request.target.slice(0, at)
  const rawQueryString = at < 0 ? "" : request.target.slice(at + 1)
  const headers: Record<string, string> = { host: "api.platform.test" }
  for (const [name, value] of request.headers) {
    const key = name.toLowerCase()
    headers[key] = key in headers && key !== "host" ? `${headers[key]},${value}` : value
  }
  const queryStringParameters: Record<string, string> = {}
  for (const pair of rawQueryString === "" ? [] : rawQueryString.split("&")) {
    const [name = "", value = ""] = pair.split("=")
    const decode = (s: string) => {
      try {
        return decodeURIComponent(s.replaceAll("+", " "))
      } catch {
        return s
      }
    }
    const n = decode(name)
    queryStringParameters[n] = n in queryStringParameters ? `${queryStringParameters[n]},${decode(value)}` : decode(value)
  }
  let body: string | undefined
  let isBase64Encoded = false
  if (request.body !== undefined && request.body.length > 0) {
    const contentType = headers["content-type"]
    let text: string | undefined
    if (contentType === undefined || isTextualContentType(contentType)) {
      try {
        text = strictUtf8.decode(request.body)
      } catch {
        text = undefined
      }
    }
    body = text ?? Buffer.from(request.body).toString("base64")
    isBase64Encoded = text === undefined
  }
  const now = new Date()
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath,
    rawQueryString,
    headers,
    ...(rawQueryString === "" ? {} : { queryStringParameters }),
    requestContext: {
      accountId: "123456789012",
      apiId: "api-id",
      domainName: "api.platform.test",
      domainPrefix: "api",
      http: { method: request.method, path: rawPath, protocol: "HTTP/1.1", sourceIp: "192.0.2.1", userAgent: "" },
      requestId: crypto.randomUUID(),
      routeKey: "$default",
      stage: "$default",
      time: now.toUTCString(),
      timeEpoch: now.getTime()
    },
    ...(body === undefined ? {} : { body }),
    isBase64Encoded
  }
}

const startLambdaFuzz = async (): Promise<FuzzShell> => {
  const machine = await startReferenceMachine({ port: 0, models: FUZZ_MACHINE_MODELS })
  const local = await startDynamoLocal()
  const dynamo = { tableName: `fuzz-${crypto.randomUUID()}`, client: makeDocumentClient(localClientConfig(local.endpoint)) }
  await Effect.runPromise(Effect.provideService(createTable, DynamoConfig, dynamo))
  const handler = makeHandler({ catalogue: fuzzCatalogue(machine.url), ownerEmail: "owner@test.local", dynamo })
  const owner = await handler.firstStart()
  const raw = async (request: RawRequest): Promise<RawAnswer> => {
    const response = resultToResponse(await handler(eventOf(request), invocationContext))
    const headers: Record<string, string> = {}
    response.headers.forEach((value, name) => {
      headers[name] = value
    })
    return { status: response.status, headers, body: await response.text() }
  }
  return {
    ownerSecret: owner?.key.secret ?? "",
    fetch: async (path, init) => {
      const request = new Request(`https://api.platform.test${path}`, init)
      const headers: Array<[string, string]> = []
      request.headers.forEach((value, name) => headers.push([name, value]))
      const body = new Uint8Array(await request.arrayBuffer())
      const answer = await raw({ method: request.method, target: path, headers, body: body.length === 0 ? undefined : body })
      return new Response(answer.body === "" ? null : answer.body, { status: answer.status, headers: answer.headers })
    },
    raw,
    close: async () => {
      await handler.dispose()
      dynamo.client.destroy()
      await local.stop()
      await machine.close()
    }
  }
}

// 50 cases per endpoint by default (the Node shell runs 100 through the same core): DynamoDB Local
// makes each case several times slower, and the whole CI run has a budget (FUZZ_RUNS for more).
fuzzSuite("lambda (API Gateway v2), DynamoDB Local", startLambdaFuzz, 50)
