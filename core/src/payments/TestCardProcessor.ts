/**
 * The built-in TEST card processor (catalogue `payments.card.processor: "test"`): a hosted
 * checkout served by the platform itself (core/src/http/pages/CheckoutPage.ts), with Stripe's test card
 * numbers. Pure logic, no I/O, no money: it decides from the card details alone.
 *
 * Checks, in order (the first failing one declines):
 * 1. the number is 12 to 19 digits and passes the Luhn check, else `incorrect_number`;
 * 2. the expiry is a real month (1-12) of a four-digit year, else `invalid_expiry`; a month that
 *    has ended (before the current UTC month) is `expired_card`;
 * 3. the CVC is exactly 3 digits, else `incorrect_cvc`;
 * 4. the number is one of the test cards below: its outcome. Any other number, even a valid one,
 *    is declined (`card_declined`): like Stripe's test mode, the test processor refuses real cards.
 *
 * Saved cards (automatic top-ups): a card saves when it passes the checks above, and so does
 * `4000 0000 0000 0341` (`savesOnly`), which then declines every charge, as Stripe's does.
 * `4000 0027 6000 3184` is approved on the page (the person is there) but wants authentication
 * for every off-session charge (`authentication_required`), as Stripe's does; `4000 0025 0000
 * 3155` wants it only on-session, which a page without 3-D Secure approves. The
 * reference names the test card by its last four digits and its expiry (never the number); an
 * off-session charge decides from them, and answers a repeated idempotency key with its first
 * outcome.
 *
 * A checkout charge answers a key already approved with that approval (same charge id, nothing
 * charged again), whatever the card; a declined key stays open for another card, as a Stripe
 * PaymentIntent returns to requires_payment_method. Keys are kept in this process only (a test
 * tool that moves no money): Stripe keeps them for every process.
 */
import { Clock, Effect, Layer } from "effect"
import { type AccountId, generateId } from "../kernel/Ids.ts"
import {
  type CardDetails,
  type CardOutcome,
  CardProcessor,
  type CheckoutRequest,
  type DeclineReason,
  type OffSessionCharge,
  type SaveCardOutcome
} from "./CardProcessor.ts"

/** The test cards and what they do (Stripe's numbers). */
export const TEST_CARDS: ReadonlyArray<{
  readonly number: string
  readonly brand: string
  readonly outcome: "approved" | DeclineReason
  /** Saves for off-session use although every charge of it is declined (Stripe's 0341). */
  readonly savesOnly?: boolean
  /** Off-session charges of it want the person present (Stripe's 3184). */
  readonly offSession?: "authentication_required"
}> = [
  { number: "4242424242424242", brand: "Visa", outcome: "approved" },
  { number: "4000056655665556", brand: "Visa (debit)", outcome: "approved" },
  { number: "5555555555554444", brand: "Mastercard", outcome: "approved" },
  { number: "4000000000000002", brand: "Visa", outcome: "card_declined" },
  { number: "4000000000009995", brand: "Visa", outcome: "insufficient_funds" },
  { number: "4000000000009987", brand: "Visa", outcome: "lost_card" },
  { number: "4000000000000069", brand: "Visa", outcome: "expired_card" },
  { number: "4000000000000127", brand: "Visa", outcome: "incorrect_cvc" },
  { number: "4000000000000119", brand: "Visa", outcome: "processing_error" },
  { number: "4000000000000341", brand: "Visa", outcome: "card_declined", savesOnly: true },
  { number: "4000002500003155", brand: "Visa", outcome: "approved" },
  { number: "4000002760003184", brand: "Visa", outcome: "approved", offSession: "authentication_required" }
]

const MESSAGES: Record<DeclineReason, string> = {
  card_declined: "Your card was declined.",
  insufficient_funds: "Your card has insufficient funds.",
  lost_card: "Your card was declined.",
  expired_card: "Your card has expired.",
  incorrect_cvc: "Your card's security code is incorrect.",
  incorrect_number: "Your card number is incorrect.",
  invalid_expiry: "Your card's expiration date is invalid.",
  processing_error: "An error occurred while processing your card. Try again.",
  authentication_required: "Your bank asks you to confirm this payment yourself."
}

const declined = (reason: DeclineReason, message: string = MESSAGES[reason]): Exclude<CardOutcome, { _tag: "Approved" }> => ({
  _tag: "Declined",
  reason,
  message
})

/** The Luhn checksum (ISO/IEC 7812) of a string of digits. */
export const luhnValid = (digits: string): boolean => {
  if (!/^\d+$/.test(digits)) return false
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

/** Keeps the digits of a typed card number ("4242 4242-4242 4242" -> "4242424242424242"). */
export const normalizeCardNumber = (typed: string): string => typed.replace(/[\s-]/g, "")

/**
 * What the test processor answers for a card at `nowMillis` (UTC): approved, or declined with a
 * reason. `approved` carries no charge id: the processor adds one.
 */
export const evaluateTestCard = (
  card: CardDetails,
  nowMillis: number
): { readonly _tag: "Approved" } | Exclude<CardOutcome, { _tag: "Approved" }> => {
  const number = normalizeCardNumber(card.number)
  if (!/^\d{12,19}$/.test(number) || !luhnValid(number)) return declined("incorrect_number")
  if (
    !Number.isInteger(card.exp_month) || card.exp_month < 1 || card.exp_month > 12 ||
    !Number.isInteger(card.exp_year) || card.exp_year < 1000 || card.exp_year > 9999
  ) {
    return declined("invalid_expiry")
  }
  const now = new Date(nowMillis)
  const thisMonth = now.getUTCFullYear() * 12 + now.getUTCMonth()
  if (card.exp_year * 12 + (card.exp_month - 1) < thisMonth) return declined("expired_card")
  if (!/^\d{3}$/.test(card.cvc)) return declined("incorrect_cvc")
  const test = TEST_CARDS.find((c) => c.number === number)
  if (test === undefined) {
    return declined("card_declined", "Your card was declined: the test processor accepts only test cards.")
  }
  return test.outcome === "approved" ? { _tag: "Approved" } : declined(test.outcome)
}

export interface TestCardProcessorOptions {
  /** The platform's base URL when a request names none (CheckoutRequest.base_url); pages are `<base>/checkout/<session_id>`. */
  readonly baseUrl: string
}

/** The processor's own pages' operations: the test processor's pages are the platform's. */
const notItsPages = (operation: string) => () =>
  Effect.die(new Error(`the test card processor takes cards on the platform's pages; ${operation} is for a processor with its own`))

/** The checkout page of a session, under the platform's base URL. */
export const checkoutUrl = (baseUrl: string, sessionId: string): string =>
  `${baseUrl.replace(/\/+$/, "")}/checkout/${encodeURIComponent(sessionId)}`

/** A saved test card's reference: pm_test_<last four>_<MMYYYY>_<random>. */
const REFERENCE = /^pm_test_(\d{4})_(\d{2})(\d{4})_/

/** Saves a card (checks 1-3 and a test card that is approved or saves only), or why not. */
export const saveTestCard = (
  card: CardDetails,
  nowMillis: number
): { readonly _tag: "Saved"; readonly last4: string; readonly brand: string } | Exclude<CardOutcome, { _tag: "Approved" }> => {
  const outcome = evaluateTestCard(card, nowMillis)
  const number = normalizeCardNumber(card.number)
  const test = TEST_CARDS.find((c) => c.number === number)
  if (outcome._tag === "Declined" && !(test?.savesOnly === true && outcome.reason === test.outcome)) return outcome
  return { _tag: "Saved", last4: number.slice(-4), brand: test?.brand ?? "Card" }
}

/** What an off-session charge of a saved test card answers at `nowMillis` (before its charge id). */
export const chargeSavedTestCard = (
  reference: string,
  nowMillis: number
): { readonly _tag: "Approved" } | Exclude<CardOutcome, { _tag: "Approved" }> => {
  const match = REFERENCE.exec(reference)
  const test = match === null ? undefined : TEST_CARDS.find((c) => c.number.endsWith(match[1]!))
  if (match === null || test === undefined) return declined("card_declined", "No such saved card.")
  const now = new Date(nowMillis)
  if (Number(match[3]) * 12 + Number(match[2]) - 1 < now.getUTCFullYear() * 12 + now.getUTCMonth()) {
    return declined("expired_card")
  }
  if (test.offSession !== undefined) return declined(test.offSession)
  if (test.outcome === "approved") return test.savesOnly === true ? declined("card_declined") : { _tag: "Approved" }
  return declined(test.outcome)
}

/** At most this many idempotency keys are remembered (then forgotten all at once). */
const MAX_REMEMBERED_CHARGES = 10_000

export const make = (options: TestCardProcessorOptions): CardProcessor["Service"] => {
  const charges = new Map<string, CardOutcome>()
  const remember = (key: string, outcome: CardOutcome): CardOutcome => {
    if (charges.size >= MAX_REMEMBERED_CHARGES) charges.clear()
    charges.set(key, outcome)
    return outcome
  }
  return {
    processor: "test",
    pages: "platform",
    createSession: (request: CheckoutRequest) =>
      Effect.map(generateId("cs_test"), (sessionId) => ({
        session_id: sessionId,
        checkout_url: checkoutUrl(request.base_url === "" ? options.baseUrl : request.base_url, sessionId)
      })),
    charge: (_sessionId: string, _request: CheckoutRequest, card: CardDetails, idempotencyKey: string) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const chargeId = yield* generateId("ch_test")
        // From here on nothing yields: two submissions with one key cannot both charge.
        const before = charges.get(idempotencyKey)
        if (before?._tag === "Approved") return before
        const decided = evaluateTestCard(card, now)
        if (decided._tag === "Declined") return decided
        return remember(idempotencyKey, { _tag: "Approved", charge_id: chargeId })
      }),
    saveCard: (_accountId: AccountId, card: CardDetails) =>
      Effect.gen(function*() {
        const saved = saveTestCard(card, yield* Clock.currentTimeMillis)
        if (saved._tag === "Declined") return saved
        const month = String(card.exp_month).padStart(2, "0")
        return {
          _tag: "Saved",
          reference: `pm_test_${saved.last4}_${month}${card.exp_year}_${(yield* generateId("x")).slice(2, 14)}`,
          description: `${saved.brand} •••• ${saved.last4}, expires ${month}/${card.exp_year}`
        } satisfies SaveCardOutcome
      }),
    chargeSaved: (charge: OffSessionCharge) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const chargeId = yield* generateId("ch_test")
        // From here on nothing yields: two calls with one key cannot both charge.
        const before = charges.get(charge.idempotency_key)
        if (before !== undefined) return before
        const decided = chargeSavedTestCard(charge.reference, now)
        return remember(charge.idempotency_key, decided._tag === "Declined" ? decided : { _tag: "Approved", charge_id: chargeId })
      }),
    openCardSetup: notItsPages("openCardSetup"),
    checkoutResult: notItsPages("checkoutResult"),
    verifyEvent: notItsPages("verifyEvent")
  }
}

/** The test processor as the CardProcessor port. */
export const layer = (options: TestCardProcessorOptions): Layer.Layer<CardProcessor> =>
  Layer.succeed(CardProcessor, make(options))

export const TestCardProcessor = {
  layer,
  make,
  evaluateTestCard,
  saveTestCard,
  chargeSavedTestCard,
  luhnValid,
  TEST_CARDS,
  checkoutUrl
} as const
