/**
 * The Lambda shell as a browser meets it, for the browser tests: the handlers over a fresh table
 * on DynamoDB Local behind a local stand-in for API Gateway, routed as cdk/stack.ts routes
 * (/accounts and /accounts/* to the accounts function, with two containers taking turns; the rest
 * to the API function). Used by Accounts.browser.test.ts and BillingPage.browser.test.ts.
 */
import { SmtpEmailSender } from "@model-platform/node-http/SmtpEmailSender"
import type { PlatformOptions } from "@model-platform/core/http"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { type FlowSetup, flowCatalogue, type PlatformUnderTest } from "@model-platform/test-harness/BrowserWorld"
import { randomPlatformClient, signingKeysFromJwk, SimulatedNetwork } from "@model-platform/core/agents"
import { Effect, Layer, Redacted } from "effect"
import { generateKeyPairSync } from "node:crypto"
import { readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type * as Net from "node:net"
import { resolve } from "node:path"
import { type LambdaHandler, makeHandler } from "../src/Handler.ts"
import { startDynamoLocal, tableOn } from "../../dynamodb-stores/test/dynamoLocal.ts"
import { invocationContext, requestToEvent, resultToResponse } from "./support.ts"

const demo = readFileSync(resolve(import.meta.dirname, "../../node-http/catalogue.demo.json"), "utf8")

/** Headers of one hop, which API Gateway does not pass on. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade"])

/** cdk/stack.ts's routes to the accounts function: `ANY /accounts` and `ANY /accounts/{proxy+}`. */
const isAccountsRoute = (path: string) => path === "/accounts" || path.startsWith("/accounts/")

/** The web Request a browser's request to the stand-in for API Gateway is. */
const toRequest = async (incoming: IncomingMessage, origin: string): Promise<Request> => {
  const headers = new Headers()
  for (let i = 0; i < incoming.rawHeaders.length; i += 2) {
    const name = incoming.rawHeaders[i]!.toLowerCase()
    if (!HOP_BY_HOP.has(name)) headers.append(name, incoming.rawHeaders[i + 1]!)
  }
  const chunks: Array<Buffer> = []
  for await (const chunk of incoming) chunks.push(chunk as Buffer)
  const body = Buffer.concat(chunks)
  return new Request(origin + (incoming.url ?? "/"), {
    method: incoming.method ?? "GET",
    headers,
    ...(body.length === 0 ? {} : { body })
  })
}

const send = async (response: Response, outgoing: ServerResponse) => {
  const headers: Array<[string, string]> = []
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers.push([name, value])
  })
  for (const cookie of response.headers.getSetCookie()) headers.push(["set-cookie", cookie])
  outgoing.writeHead(response.status, headers.flat())
  outgoing.end(Buffer.from(await response.arrayBuffer()))
}

/** A local stand-in for API Gateway on a free port, handing each request to the handler `route` picks. */
export const startStandInGateway = async (route: (path: string) => LambdaHandler) => {
  const gateway = createServer((incoming, outgoing) => {
    const origin = `http://localhost:${(gateway.address() as Net.AddressInfo).port}`
    toRequest(incoming, origin)
      .then(async (request) => resultToResponse(await route(new URL(request.url).pathname)(await requestToEvent(request), invocationContext)))
      .then((response) => send(response, outgoing))
      .catch((error: unknown) => {
        console.error("the stand-in for API Gateway failed", error)
        outgoing.writeHead(502).end()
      })
  })
  await new Promise<void>((listening) => gateway.listen(0, "127.0.0.1", listening))
  return {
    port: (gateway.address() as Net.AddressInfo).port,
    close: () => new Promise<void>((closed) => gateway.close(() => closed()))
  }
}

/** What a flow may add: another card processor (Stripe), the catalogue changed for it, plans renewing. */
export interface BrowserExtras {
  readonly catalogue?: (catalogue: CatalogueConfig) => CatalogueConfig
  readonly cardProcessor?: PlatformOptions["cardProcessor"]
  readonly renewPlans?: PlatformOptions["renewPlans"]
}

/** Starts the platform for a browser flow (AccountsBrowserFlow.ts FlowSetup). */
export const startLambdaForBrowser = async (
  { clock, machineUrl, recoveryDelayMs, smtpUrl }: FlowSetup,
  extras: BrowserExtras = {}
): Promise<PlatformUnderTest> => {
  const catalogue = (extras.catalogue ?? ((c) => c))(flowCatalogue(demo, machineUrl))
  const local = await startDynamoLocal()
  const dynamo = await tableOn(local)
  let api: LambdaHandler | undefined
  let accounts: Array<LambdaHandler> = []
  let turn = 0
  const gateway = await startStandInGateway((path) => isAccountsRoute(path) ? accounts[turn++ % accounts.length]! : api!)
  const port = gateway.port
  // What every function of the stack gets from the same environment (lambda.ts), and one network
  // for all of them, as a real network is one (the simulated one lives in a process).
  const network = Layer.succeedContext(await Effect.runPromise(Effect.scoped(Layer.build(SimulatedNetwork.layer()))))
  // PLATFORM_SIGNING_KEY, the same in every function: the API function's calls to the accounts
  // functions carry service assertions (a jti used once across containers, in DynamoDB).
  const signingKey = JSON.stringify(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" }))
  const options = {
    platformClient: randomPlatformClient(),
    serviceKeys: await Effect.runPromise(signingKeysFromJwk(Redacted.make(signingKey))),
    catalogue,
    ownerEmail: "owner@test.local",
    publicUrl: `http://localhost:${port}`,
    dynamo,
    platform: {
      clock,
      ...(extras.cardProcessor === undefined ? {} : { cardProcessor: extras.cardProcessor }),
      ...(extras.renewPlans === undefined ? {} : { renewPlans: extras.renewPlans })
    },
    accounts: {
      recoveryDelayMs,
      emailSender: SmtpEmailSender({ url: Redacted.make(smtpUrl), from: "Model Platform <no-reply@test.local>" }),
      network
    }
  }
  // A handler starts building at once: the first makes the owner before the others start, as
  // containers starting together could race for it (docs/lambda.md "The owner key").
  api = makeHandler(options)
  const owner = await api.firstStart()
  accounts = [makeHandler(options), makeHandler(options)]
  for (const handler of accounts) await handler.firstStart()
  return {
    url: `http://127.0.0.1:${port}`,
    accounts: `http://localhost:${port}/accounts`,
    ownerSecret: owner?.key.secret,
    stop: async () => {
      await gateway.close()
      for (const handler of [api, ...accounts]) await handler?.dispose()
      dynamo.client.destroy()
      await local.stop()
    }
  }
}
