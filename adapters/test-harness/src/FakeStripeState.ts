/**
 * The fake Stripe's objects and what its API does to them (FakeStripe.ts serves it over HTTP):
 * customers, Checkout Sessions (payment and setup mode) completed on the hosted page, setup
 * intents, payment methods, payment intents (an off-session charge of a saved card), charges,
 * refunds and disputes, each change reported as an event, as Stripe's API version
 * 2026-10-28.endive shows them (the subset the platform reads). A refusal is a `StripeFailure`:
 * the HTTP status and Stripe's error object.
 *
 * Time is the fake's `now` (the platform's clock in tests that move it), so a session's expiry
 * and an event's timestamp agree with the platform.
 */
import { randomBytes } from "node:crypto"
import { brandOf, type CardStep, cardStep, type Decline, offSessionStep } from "./FakeStripeCards.ts"
import { type FormObject, metadataOf, obj, str } from "./FakeStripeForm.ts"

export const FAKE_API_VERSION = "2026-10-28.endive"

// Stripe's objects are open-ended JSON; the fake keeps them as such.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type StripeObject = Record<string, any>

/** Stripe's error object. */
export interface StripeErrorObject {
  readonly type: "invalid_request_error" | "card_error" | "idempotency_error" | "api_error"
  readonly message: string
  readonly code?: string | undefined
  readonly decline_code?: string | undefined
  readonly param?: string | undefined
  readonly payment_intent?: StripeObject | undefined
}

/** A refused request: its HTTP status and Stripe's error object. */
export class StripeFailure {
  readonly status: number
  readonly error: StripeErrorObject
  constructor(status: number, error: StripeErrorObject) {
    this.status = status
    this.error = error
  }
}

const invalid = (message: string, param?: string, code = "parameter_invalid") =>
  new StripeFailure(400, { type: "invalid_request_error", message, param, code })

const missing = (id: string, param = "id") =>
  new StripeFailure(404, { type: "invalid_request_error", code: "resource_missing", message: `No such object: '${id}'`, param })

/** What submitting the hosted page did. */
export type PageOutcome =
  | { readonly _tag: "declined"; readonly decline: Decline }
  | { readonly _tag: "authenticate"; readonly attempt: string }
  | { readonly _tag: "complete"; readonly session: StripeObject }

interface TypedCard {
  readonly number: string
  readonly exp_month: number
  readonly exp_year: number
  readonly cvc: string
}

export const makeFakeStripeState = (now: () => number) => {
  const objects = new Map<string, StripeObject>()
  /** A payment method's full number, which only the fake knows (Stripe keeps it; the platform never sees it). */
  const numbers = new Map<string, string>()
  /** Per session: what the platform asked for beyond the session's public fields. */
  const sessionRequests = new Map<string, FormObject>()
  /** Hosted-page submissions waiting for the person to authenticate. */
  const attempts = new Map<string, { readonly session: string; readonly card: TypedCard }>()
  const events: Array<StripeObject> = []
  const listeners: Array<(event: StripeObject) => void> = []

  const seconds = () => Math.floor(now() / 1000)
  const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString("base64url").replace(/[-_]/g, "x")}`
  const put = (object: StripeObject) => {
    objects.set(object["id"], object)
    return object
  }
  const get = (id: string, prefix: string, param?: string) => {
    const found = objects.get(id)
    if (found === undefined || !id.startsWith(prefix)) throw missing(id, param)
    return found
  }

  const emit = (type: string, object: StripeObject) => {
    const event = {
      id: newId("evt"),
      object: "event",
      api_version: FAKE_API_VERSION,
      created: seconds(),
      data: { object: structuredClone(object) },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type
    }
    events.push(event)
    for (const listener of listeners) listener(event)
  }

  /** The object with the ids at `paths` ("payment_intent.latest_charge") replaced by the objects. */
  const expanded = (object: StripeObject, paths: ReadonlyArray<string>): StripeObject => {
    const copy = structuredClone(object)
    for (const path of paths) {
      let node: StripeObject | undefined = copy
      for (const field of path.split(".")) {
        if (node === undefined) break
        const value: unknown = node[field]
        if (typeof value === "string" && objects.has(value)) node[field] = structuredClone(objects.get(value)!)
        node = typeof node[field] === "object" && node[field] !== null ? node[field] : undefined
      }
    }
    return copy
  }

  // ---- customers ----

  const createCustomer = (form: FormObject) =>
    put({ id: newId("cus"), object: "customer", created: seconds(), email: str(form, "email") ?? null, metadata: metadataOf(form), livemode: false })

  // ---- payment methods, intents, charges ----

  const cardOf = (typed: TypedCard) => {
    const number = typed.number.replace(/[\s-]/g, "")
    return { brand: brandOf(number), last4: number.slice(-4), exp_month: typed.exp_month, exp_year: typed.exp_year, funding: "credit", country: "US" }
  }

  const createPaymentMethod = (typed: TypedCard, customer: string | null) => {
    const pm = put({ id: newId("pm"), object: "payment_method", type: "card", card: cardOf(typed), customer, created: seconds(), metadata: {}, livemode: false })
    numbers.set(pm["id"], typed.number.replace(/[\s-]/g, ""))
    return pm
  }

  const charge = (pi: StripeObject, pm: StripeObject) => {
    const ch = put({
      id: newId("ch"),
      object: "charge",
      amount: pi["amount"],
      amount_captured: pi["amount"],
      amount_refunded: 0,
      captured: true,
      currency: pi["currency"],
      customer: pi["customer"],
      description: pi["description"],
      disputed: false,
      metadata: { ...pi["metadata"] },
      paid: true,
      payment_intent: pi["id"],
      payment_method: pm["id"],
      payment_method_details: { type: "card", card: { ...pm["card"] } },
      refunded: false,
      status: "succeeded",
      created: seconds(),
      livemode: false
    })
    pi["latest_charge"] = ch["id"]
    pi["status"] = "succeeded"
    pi["amount_received"] = pi["amount"]
    emit("charge.succeeded", ch)
    emit("payment_intent.succeeded", pi)
    return ch
  }

  const newPaymentIntent = (fields: StripeObject) =>
    put({
      id: newId("pi"),
      object: "payment_intent",
      amount_received: 0,
      client_secret: null,
      created: seconds(),
      description: null,
      last_payment_error: null,
      latest_charge: null,
      livemode: false,
      metadata: {},
      setup_future_usage: null,
      status: "requires_payment_method",
      ...fields
    })

  const amountOf = (form: FormObject, param: string) => {
    const text = str(form, param)
    if (text === undefined || !/^\d+$/.test(text) || Number(text) < 50) throw invalid(`${param}: a positive integer of the smallest currency unit, at least 50.`, param)
    return Number(text)
  }

  const currencyOf = (form: FormObject, param = "currency") => {
    const currency = str(form, param)
    if (currency === undefined || !/^[a-z]{3}$/.test(currency)) throw invalid(`${param}: a three-letter ISO currency code in lower case.`, param)
    return currency
  }

  /** POST /v1/payment_intents: only as the platform uses it, confirmed at once with a saved card. */
  const createPaymentIntent = (form: FormObject) => {
    const amount = amountOf(form, "amount")
    const currency = currencyOf(form)
    if (str(form, "confirm") !== "true") throw invalid("The fake Stripe confirms payment intents at creation only (confirm=true).", "confirm")
    const pmId = str(form, "payment_method")
    if (pmId === undefined) throw invalid("payment_method is required to confirm.", "payment_method")
    const pm = get(pmId, "pm", "payment_method")
    const customer = str(form, "customer") ?? null
    if (customer !== null) get(customer, "cus", "customer")
    if (pm["customer"] === null || pm["customer"] !== customer) {
      throw invalid(
        `The provided PaymentMethod ${pmId} is not attached to the customer ${customer ?? "(none)"}; attach it before charging it off-session.`,
        "payment_method"
      )
    }
    const pi = newPaymentIntent({
      amount,
      currency,
      customer,
      payment_method: pmId,
      description: str(form, "description") ?? null,
      metadata: metadataOf(form),
      off_session: str(form, "off_session") === "true"
    })
    const step: CardStep = pi["off_session"] === true ? offSessionStep(numbers.get(pmId) ?? "") : { _tag: "ok" }
    if (step._tag === "ok") {
      charge(pi, pm)
      return pi
    }
    const decline: Decline = step._tag === "declined"
      ? step.decline
      : { code: "authentication_required", decline_code: "authentication_required", message: "This payment requires authentication." }
    pi["last_payment_error"] = { type: "card_error", ...decline, payment_method: structuredClone(pm) }
    pi["status"] = "requires_payment_method"
    emit("payment_intent.payment_failed", pi)
    throw new StripeFailure(402, { type: "card_error", ...decline, payment_intent: structuredClone(pi) })
  }

  // ---- checkout sessions ----

  const createSession = (form: FormObject, fakeUrl: string) => {
    const mode = str(form, "mode")
    if (mode !== "payment" && mode !== "setup") throw invalid("mode: payment or setup (the fake Stripe has no subscriptions).", "mode")
    const successUrl = str(form, "success_url")
    if (successUrl === undefined || !/^https?:\/\//.test(successUrl)) throw invalid("success_url: an absolute URL.", "success_url")
    const customer = str(form, "customer") ?? null
    if (customer !== null) get(customer, "cus", "customer")
    const created = seconds()
    const expiresAt = str(form, "expires_at") === undefined ? created + 24 * 3600 : Number(str(form, "expires_at"))
    if (!Number.isInteger(expiresAt) || expiresAt < created + 30 * 60 - 5 || expiresAt > created + 24 * 3600 + 5) {
      throw invalid("expires_at: between 30 minutes and 24 hours from now.", "expires_at")
    }
    let amount: number | null = null
    let currency: string
    if (mode === "payment") {
      const items = form["line_items"]
      const item = Array.isArray(items) && items.length === 1 ? (items[0] as FormObject) : undefined
      if (item === undefined) throw invalid("line_items: exactly one item (the fake Stripe's subset).", "line_items")
      const price = obj(item, "price_data")
      if (str(obj(price, "product_data"), "name") === undefined) throw invalid("line_items[0][price_data][product_data][name] is required.", "line_items")
      const quantity = Number(str(item, "quantity") ?? "1")
      amount = amountOf(price, "unit_amount") * quantity
      currency = currencyOf(price)
    } else {
      currency = currencyOf(form)
    }
    const id = newId("cs_test")
    sessionRequests.set(id, form)
    return put({
      id,
      object: "checkout.session",
      amount_subtotal: amount,
      amount_total: amount,
      cancel_url: str(form, "cancel_url") ?? null,
      client_reference_id: str(form, "client_reference_id") ?? null,
      created,
      currency,
      customer,
      expires_at: expiresAt,
      livemode: false,
      metadata: metadataOf(form),
      mode,
      payment_intent: null,
      payment_status: mode === "payment" ? "unpaid" : "no_payment_required",
      setup_intent: null,
      status: "open",
      success_url: successUrl,
      url: `${fakeUrl}/c/pay/${id}`
    })
  }

  /** The session as it is now: an open one past its expiry has expired (reported once). */
  const session = (id: string) => {
    const found = get(id, "cs_", "session")
    if (found["status"] === "open" && seconds() >= found["expires_at"]) {
      found["status"] = "expired"
      emit("checkout.session.expired", found)
    }
    return found
  }

  const expireSession = (id: string) => {
    const found = session(id)
    if (found["status"] !== "open") throw invalid(`Only an open Checkout Session can be expired; this one is ${found["status"]}.`, "session")
    found["status"] = "expired"
    emit("checkout.session.expired", found)
    return found
  }

  const complete = (found: StripeObject, card: TypedCard): StripeObject => {
    const request = sessionRequests.get(found["id"]) ?? {}
    const customer: string | null = found["customer"]
    if (found["mode"] === "setup") {
      const pm = createPaymentMethod(card, customer)
      const si = put({
        id: newId("seti"),
        object: "setup_intent",
        created: seconds(),
        customer,
        livemode: false,
        metadata: metadataOf(obj(request, "setup_intent_data")),
        payment_method: pm["id"],
        status: "succeeded",
        usage: "off_session"
      })
      found["setup_intent"] = si["id"]
      emit("setup_intent.succeeded", si)
    } else {
      const intentData = obj(request, "payment_intent_data")
      const keep = str(intentData, "setup_future_usage") ?? null
      const pm = createPaymentMethod(card, keep !== null ? customer : null)
      const pi = newPaymentIntent({
        amount: found["amount_total"],
        currency: found["currency"],
        customer,
        description: str(intentData, "description") ?? null,
        metadata: metadataOf(intentData),
        payment_method: pm["id"],
        setup_future_usage: keep
      })
      found["payment_intent"] = pi["id"]
      charge(pi, pm)
      found["payment_status"] = "paid"
    }
    found["status"] = "complete"
    emit("checkout.session.completed", found)
    return found
  }

  /** The hosted page submitted with a card. */
  const submitPage = (id: string, card: TypedCard): PageOutcome => {
    const found = session(id)
    if (found["status"] !== "open") throw invalid(`This Checkout Session is ${found["status"]}.`, "session")
    const step = cardStep(card, found["mode"] === "setup" ? "setup" : "onSession", now())
    if (step._tag === "declined") return { _tag: "declined", decline: step.decline }
    if (step._tag === "authenticate") {
      const attempt = newId("auth")
      attempts.set(attempt, { session: id, card })
      return { _tag: "authenticate", attempt }
    }
    return { _tag: "complete", session: complete(found, card) }
  }

  /** The person completed (or failed) the authentication the bank asked for. */
  const authenticate = (attemptId: string, passed: boolean): PageOutcome & { readonly session_id: string } => {
    const attempt = attempts.get(attemptId)
    if (attempt === undefined) throw missing(attemptId, "attempt")
    attempts.delete(attemptId)
    if (!passed) {
      return {
        _tag: "declined",
        session_id: attempt.session,
        decline: { code: "card_declined", decline_code: "authentication_failed", message: "We are unable to authenticate your payment method." }
      }
    }
    const found = session(attempt.session)
    if (found["status"] !== "open") throw invalid(`This Checkout Session is ${found["status"]}.`, "session")
    return { _tag: "complete", session_id: attempt.session, session: complete(found, attempt.card) }
  }

  // ---- refunds and disputes ----

  const chargeOf = (form: FormObject) => {
    const chargeId = str(form, "charge")
    if (chargeId !== undefined) return get(chargeId, "ch_", "charge")
    const piId = str(form, "payment_intent")
    if (piId === undefined) throw invalid("charge or payment_intent is required.", "charge")
    const pi = get(piId, "pi_", "payment_intent")
    if (pi["latest_charge"] === null) throw invalid(`PaymentIntent ${piId} has no successful charge to refund.`, "payment_intent")
    return get(pi["latest_charge"], "ch_", "payment_intent")
  }

  const createRefund = (form: FormObject) => {
    const ch = chargeOf(form)
    const left = ch["amount"] - ch["amount_refunded"]
    const amount = str(form, "amount") === undefined ? left : Number(str(form, "amount"))
    if (!Number.isInteger(amount) || amount <= 0 || amount > left) {
      throw invalid(`Refund amount (${str(form, "amount")}) is greater than the unrefunded amount on the charge (${left}).`, "amount", "amount_too_large")
    }
    const refund = put({
      id: newId("re"),
      object: "refund",
      amount,
      charge: ch["id"],
      created: seconds(),
      currency: ch["currency"],
      metadata: metadataOf(form),
      payment_intent: ch["payment_intent"],
      reason: str(form, "reason") ?? null,
      status: "succeeded"
    })
    ch["amount_refunded"] += amount
    ch["refunded"] = ch["amount_refunded"] === ch["amount"]
    emit("refund.created", refund)
    emit("charge.refunded", ch)
    return refund
  }

  const refundsOf = (chargeId: string) =>
    [...objects.values()].filter((o) => o["object"] === "refund" && o["charge"] === chargeId).sort((a, b) => b["created"] - a["created"])

  /** The card holder disputes a charge with their bank (a test's doing: no API call makes one). */
  const dispute = (chargeId: string, amount?: number) => {
    const ch = get(chargeId, "ch_", "charge")
    ch["disputed"] = true
    const dp = put({
      id: newId("dp"),
      object: "dispute",
      amount: amount ?? ch["amount"],
      charge: ch["id"],
      created: seconds(),
      currency: ch["currency"],
      payment_intent: ch["payment_intent"],
      reason: "fraudulent",
      status: "needs_response"
    })
    emit("charge.dispute.created", dp)
    return dp
  }

  const detach = (pmId: string) => {
    const pm = get(pmId, "pm_", "payment_method")
    if (pm["customer"] === null) throw invalid(`The payment method ${pmId} is not attached to a customer.`, "payment_method")
    pm["customer"] = null
    return pm
  }

  return {
    objects,
    events,
    listeners,
    get,
    expanded,
    createCustomer,
    createSession,
    session,
    expireSession,
    submitPage,
    authenticate,
    createPaymentIntent,
    createRefund,
    refundsOf,
    dispute,
    detach,
    /** Every object of one kind ("payment_intent", "charge"…), oldest first. */
    all: (kind: string) => [...objects.values()].filter((o) => o["object"] === kind)
  }
}

export type FakeStripeState = ReturnType<typeof makeFakeStripeState>
