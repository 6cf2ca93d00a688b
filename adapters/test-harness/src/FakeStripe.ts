/**
 * A Stripe-compatible fake server for tests (node:http on 127.0.0.1), speaking the subset of
 * Stripe's v1 API the platform uses, so the official `stripe` client pointed at it (its `host`,
 * `port` and `protocol` options) does the real request encoding, error classes and signature
 * checks. Objects and their rules are in FakeStripeState.ts, the test cards in FakeStripeCards.ts,
 * the hosted pages in FakeStripePages.ts.
 *
 *   POST /v1/customers, GET /v1/customers/{id}
 *   POST /v1/checkout/sessions, GET /v1/checkout/sessions/{id}, POST …/{id}/expire
 *   POST /v1/payment_intents (confirm with a saved card, off-session), GET /v1/payment_intents/{id}
 *   GET /v1/payment_methods/{id}, POST /v1/payment_methods/{id}/detach
 *   GET /v1/setup_intents/{id}, GET /v1/charges/{id}, GET /v1/events/{id}
 *   POST /v1/refunds, GET /v1/refunds?charge=
 *   GET, POST /c/pay/{session}        the hosted Checkout page a browser completes
 *   POST /c/pay/{session}/authenticate  the bank's authentication step; GET …/cancel
 *
 * Requests need `Authorization: Bearer <secretKey>`; `expand[]` is honoured; a POST's
 * `Idempotency-Key` replays the first answer to the same parameters (a different body with the
 * same key is an idempotency_error), as Stripe does. Errors are Stripe's JSON shape. Every change
 * is an event, posted to each webhook endpoint signed with `stripe.webhooks.generateTestHeaderString`
 * (timestamp: the fake's clock); deliveries can be held back and released, or sent again.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type * as Net from "node:net"
import { randomBytes } from "node:crypto"
import Stripe from "stripe"
import { expandList, type FormObject, parseStripeForm, str } from "./FakeStripeForm.ts"
import { authenticatePage, checkoutPage, closedPage } from "./FakeStripePages.ts"
import { makeFakeStripeState, type PageOutcome, StripeFailure, type StripeObject } from "./FakeStripeState.ts"

export interface FakeStripeOptions {
  /** The secret key clients must send; default a random `sk_test_…`. */
  readonly secretKey?: string
  /** The fake's clock (epoch milliseconds); default the system's. Tests moving the platform's clock share it. */
  readonly now?: () => number
}

export interface WebhookDelivery {
  readonly event_id: string
  readonly type: string
  readonly url: string
  /** The endpoint's HTTP status, or 0 when it could not be reached. */
  readonly status: number
  readonly body: string
}

export interface FakeStripe {
  /** http://127.0.0.1:<port> */
  readonly url: string
  readonly port: number
  readonly secretKey: string
  /** The options the official client needs to talk to the fake (no retries: each case deterministic). */
  readonly clientOptions: { readonly host: string; readonly port: number; readonly protocol: "http"; readonly maxNetworkRetries: 0 }
  /** Adds a webhook endpoint; answers its signing secret (`whsec_…`). */
  readonly addWebhook: (url: string, secret?: string) => string
  readonly removeWebhooks: () => void
  /** Events are kept back from the endpoints until `release` (to let a person's return win a race, say). */
  readonly hold: () => void
  readonly release: () => Promise<void>
  /** Waits for every delivery started so far. */
  readonly settled: () => Promise<void>
  /** Posts an event to every endpoint again (a Stripe retry). */
  readonly redeliver: (eventId: string) => Promise<void>
  readonly deliveries: ReadonlyArray<WebhookDelivery>
  /** Every event so far, oldest first. */
  readonly events: ReadonlyArray<StripeObject>
  /** Every object of one kind ("payment_intent", "charge", "customer"…), oldest first. */
  readonly all: (kind: string) => ReadonlyArray<StripeObject>
  readonly get: (id: string) => StripeObject | undefined
  /** The card holder disputes a charge with their bank. */
  readonly dispute: (chargeId: string, amount?: number) => StripeObject
  /**
   * A person completes a hosted Checkout page over HTTP (as a browser would): types the card,
   * authenticates when the bank asks (unless `authenticate: false`). Answers where the page sent
   * them (the success URL), or the page's refusal.
   */
  readonly completeCheckout: (
    checkoutUrl: string,
    card: string,
    options?: { readonly authenticate?: boolean }
  ) => Promise<{ readonly _tag: "Redirected"; readonly location: string } | { readonly _tag: "Refused"; readonly status: number; readonly page: string }>
  readonly close: () => Promise<void>
}

const readBody = async (request: IncomingMessage): Promise<string> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString("utf8")
}

const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "application/json", "request-id": `req_${randomBytes(6).toString("hex")}`, ...headers })
  response.end(JSON.stringify(body))
}

const html = (response: ServerResponse, status: number, page: string) => {
  response.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
  response.end(page)
}

const redirect = (response: ServerResponse, location: string) => {
  response.writeHead(303, { location })
  response.end()
}

const parseExpiry = (text: string): { month: number; year: number } => {
  const match = /^\s*(\d{1,2})\s*\/\s*(\d{2}|\d{4})\s*$/.exec(text)
  if (match === null) return { month: 0, year: 0 }
  const year = Number(match[2])
  return { month: Number(match[1]), year: year < 100 ? 2000 + year : year }
}

export const startFakeStripe = async (options: FakeStripeOptions = {}): Promise<FakeStripe> => {
  const now = options.now ?? Date.now
  const secretKey = options.secretKey ?? `sk_test_fake_${randomBytes(12).toString("hex")}`
  const state = makeFakeStripeState(now)
  const endpoints: Array<{ readonly url: string; readonly secret: string }> = []
  const deliveries: Array<WebhookDelivery> = []
  const pending = new Set<Promise<void>>()
  const idempotency = new Map<string, { readonly fingerprint: string; readonly status: number; readonly body: unknown }>()
  let held: Array<StripeObject> | undefined
  let baseUrl = ""

  const post = async (event: StripeObject, endpoint: { readonly url: string; readonly secret: string }) => {
    const payload = JSON.stringify(event, null, 2)
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: endpoint.secret, timestamp: Math.floor(now() / 1000) })
    let status = 0
    let body = ""
    try {
      const answer = await fetch(endpoint.url, { method: "POST", headers: { "content-type": "application/json", "stripe-signature": signature }, body: payload })
      status = answer.status
      body = await answer.text()
    } catch (error) {
      body = String(error)
    }
    deliveries.push({ event_id: event["id"], type: event["type"], url: endpoint.url, status, body })
  }

  const deliver = (event: StripeObject) => {
    for (const endpoint of endpoints) {
      const sending: Promise<void> = post(event, endpoint).finally(() => pending.delete(sending))
      pending.add(sending)
    }
  }
  state.listeners.push((event) => (held === undefined ? deliver(event) : held.push(event)))

  /** Runs a POST once per Idempotency-Key: a replay answers the first answer. */
  const idempotent = (key: string | undefined, fingerprint: string, run: () => { status: number; body: unknown }) => {
    if (key === undefined) return { ...run(), replayed: false }
    const before = idempotency.get(key)
    if (before !== undefined) {
      if (before.fingerprint !== fingerprint) {
        throw new StripeFailure(400, {
          type: "idempotency_error",
          message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`
        })
      }
      return { status: before.status, body: before.body, replayed: true }
    }
    const answer = run()
    // Stripe keeps the answers of requests it executed, errors included (not 5xx, not 409).
    idempotency.set(key, { fingerprint, ...answer })
    return { ...answer, replayed: false }
  }

  const attempt = (run: () => unknown): { status: number; body: unknown } => {
    try {
      return { status: 200, body: run() }
    } catch (error) {
      if (error instanceof StripeFailure) return { status: error.status, body: { error: { ...error.error, doc_url: "https://docs.stripe.com/error-codes" } } }
      throw error
    }
  }

  const api = (method: string, path: string, form: FormObject): unknown => {
    const parts = path.split("/").filter((p) => p !== "")
    const [, resource, id, action] = parts
    const expand = expandList(form)
    const show = (object: StripeObject) => state.expanded(object, expand)
    if (resource === "customers" && method === "POST" && id === undefined) return show(state.createCustomer(form))
    if (resource === "customers" && method === "GET" && id !== undefined) return show(state.get(id, "cus_"))
    if (resource === "checkout" && id === "sessions") {
      const sessionId = action
      if (method === "POST" && sessionId === undefined) return show(state.createSession(form, baseUrl))
      if (method === "GET" && sessionId !== undefined && parts.length === 4) return show(state.session(sessionId))
      if (method === "POST" && sessionId !== undefined && parts[4] === "expire") return show(state.expireSession(sessionId))
    }
    if (resource === "payment_intents" && method === "POST" && id === undefined) return show(state.createPaymentIntent(form))
    if (resource === "payment_intents" && method === "GET" && id !== undefined) return show(state.get(id, "pi_"))
    if (resource === "payment_methods" && method === "GET" && id !== undefined) return show(state.get(id, "pm_"))
    if (resource === "payment_methods" && method === "POST" && id !== undefined && action === "detach") return show(state.detach(id))
    if (resource === "setup_intents" && method === "GET" && id !== undefined) return show(state.get(id, "seti_"))
    if (resource === "charges" && method === "GET" && id !== undefined) return show(state.get(id, "ch_"))
    if (resource === "events" && method === "GET" && id !== undefined) return show(state.get(id, "evt_"))
    if (resource === "refunds" && method === "POST" && id === undefined) return show(state.createRefund(form))
    if (resource === "refunds" && method === "GET" && id === undefined) {
      const charge = str(form, "charge")
      const data = charge === undefined ? state.all("refund") : state.refundsOf(charge)
      return { object: "list", data: data.map(show), has_more: false, url: "/v1/refunds" }
    }
    throw new StripeFailure(404, { type: "invalid_request_error", message: `Unrecognized request URL (${method}: ${path}).` })
  }

  const serveApi = async (request: IncomingMessage, response: ServerResponse, url: URL) => {
    const auth = request.headers["authorization"] ?? ""
    if (auth !== `Bearer ${secretKey}`) {
      return json(response, 401, {
        error: { type: "invalid_request_error", message: `Invalid API Key provided: ${auth.replace(/^Bearer /, "").slice(0, 8)}****` }
      })
    }
    const method = request.method ?? "GET"
    const text = await readBody(request)
    const form = parseStripeForm(method === "GET" || method === "DELETE" ? url.search.slice(1) : text)
    const key = method === "POST" ? (request.headers["idempotency-key"] as string | undefined) : undefined
    const answer = method === "POST"
      ? idempotent(key, `${url.pathname}\n${text}`, () => attempt(() => api(method, url.pathname, form)))
      : { ...attempt(() => api(method, url.pathname, form)), replayed: false }
    json(response, answer.status, answer.body, answer.replayed ? { "idempotent-replayed": "true" } : {})
  }

  const pageOutcome = (response: ServerResponse, session: StripeObject, outcome: PageOutcome) => {
    if (outcome._tag === "declined") return html(response, 402, checkoutPage(session, outcome.decline))
    if (outcome._tag === "authenticate") return html(response, 200, authenticatePage(session, outcome.attempt))
    redirect(response, String(outcome.session["success_url"]).replace("{CHECKOUT_SESSION_ID}", outcome.session["id"]))
  }

  const servePage = async (request: IncomingMessage, response: ServerResponse, url: URL) => {
    const [, , , id, action] = url.pathname.split("/")
    const session = state.objects.get(id ?? "")
    if (session === undefined || !String(id).startsWith("cs_")) return html(response, 404, "<h1>No such checkout</h1>")
    state.session(session["id"])
    const fields = new URLSearchParams(await readBody(request))
    if (request.method === "GET" && action === "cancel") {
      return session["cancel_url"] === null ? html(response, 200, closedPage(session)) : redirect(response, String(session["cancel_url"]).replace("{CHECKOUT_SESSION_ID}", session["id"]))
    }
    if (session["status"] !== "open") return html(response, 410, closedPage(session))
    if (request.method === "GET") return html(response, 200, checkoutPage(session))
    if (action === "authenticate") {
      const done = state.authenticate(fields.get("attempt") ?? "", fields.get("result") === "complete")
      return pageOutcome(response, session, done)
    }
    const expiry = parseExpiry(fields.get("expiry") ?? "")
    const outcome = state.submitPage(session["id"], {
      number: fields.get("card_number") ?? "",
      exp_month: expiry.month,
      exp_year: expiry.year,
      cvc: (fields.get("cvc") ?? "").trim()
    })
    pageOutcome(response, session, outcome)
  }

  const server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://fake-stripe")
    const serve = url.pathname.startsWith("/v1/") ? serveApi : url.pathname.startsWith("/c/pay/") ? servePage : undefined
    if (serve === undefined) return json(response, 404, { error: { type: "invalid_request_error", message: `Unrecognized request URL: ${url.pathname}` } })
    serve(request, response, url).catch((error: unknown) => {
      if (error instanceof StripeFailure) return json(response, error.status, { error: error.error })
      console.error("fake Stripe failed", error)
      json(response, 500, { error: { type: "api_error", message: String(error) } })
    })
  })
  // Idle connections are kept a minute (Node's default is 5 s), so that the official client, which
  // keeps its sockets alive and is given no network retries here, never sends a request on a socket
  // the server is closing at that moment (it would be reset).
  server.keepAliveTimeout = 60_000
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  const port = (server.address() as Net.AddressInfo).port
  baseUrl = `http://127.0.0.1:${port}`

  const settled = async () => {
    while (pending.size > 0) await Promise.all([...pending])
  }

  const completeCheckout: FakeStripe["completeCheckout"] = async (checkoutUrl, card, completing = {}) => {
    const form = new URLSearchParams({ card_number: card, expiry: "12/34", cvc: "123" })
    let answer = await fetch(checkoutUrl, { method: "POST", body: form, redirect: "manual" })
    if (answer.status === 200) {
      const page = await answer.text()
      const attemptId = /name="attempt" value="([^"]+)"/.exec(page)?.[1]
      if (attemptId === undefined) return { _tag: "Refused", status: 200, page }
      answer = await fetch(`${checkoutUrl}/authenticate`, {
        method: "POST",
        body: new URLSearchParams({ attempt: attemptId, result: completing.authenticate === false ? "fail" : "complete" }),
        redirect: "manual"
      })
    }
    if (answer.status === 303) return { _tag: "Redirected", location: answer.headers.get("location") ?? "" }
    return { _tag: "Refused", status: answer.status, page: await answer.text() }
  }

  return {
    url: baseUrl,
    port,
    secretKey,
    clientOptions: { host: "127.0.0.1", port, protocol: "http", maxNetworkRetries: 0 },
    addWebhook: (url, secret = `whsec_${randomBytes(24).toString("base64url")}`) => {
      endpoints.push({ url, secret })
      return secret
    },
    removeWebhooks: () => {
      endpoints.length = 0
    },
    hold: () => {
      held ??= []
    },
    release: async () => {
      const queued = held ?? []
      held = undefined
      for (const event of queued) deliver(event)
      await settled()
    },
    settled,
    redeliver: async (eventId) => {
      const event = state.events.find((e) => e["id"] === eventId)
      if (event === undefined) throw new Error(`no event ${eventId}`)
      deliver(event)
      await settled()
    },
    deliveries,
    events: state.events,
    all: state.all,
    get: (id) => state.objects.get(id),
    dispute: state.dispute,
    completeCheckout,
    close: async () => {
      await settled()
      await new Promise<void>((closed) => server.close(() => closed()))
    }
  }
}
