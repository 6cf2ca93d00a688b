/**
 * Stripe's documented test cards as the fake Stripe (FakeStripe.ts) treats them, in the three
 * places a card meets Stripe: a person paying on the hosted page (on-session), a person saving it
 * on the hosted page (setup), and the platform charging it later with nobody there (off-session).
 *
 *   4242 4242 4242 4242   succeeds everywhere (Visa); 5555 5555 5555 4444 likewise (Mastercard)
 *   4000 0025 0000 3155   asks the person to authenticate on-session (and at setup); once set up,
 *                         off-session charges succeed
 *   4000 0027 6000 3184   asks for authentication on-session, and every off-session charge fails
 *                         with authentication_required
 *   4000 0000 0000 0002   declined everywhere (card_declined, generic_decline)
 *   4000 0000 0000 9995   declined everywhere (card_declined, insufficient_funds)
 *   4000 0000 0000 0341   saves (setup succeeds) but every charge of it is declined
 *
 * A number failing the Luhn check is incorrect_number, a month that has ended expired_card, a CVC
 * that is not 3 digits incorrect_cvc; any other valid number is declined, as Stripe's test mode
 * refuses real cards.
 */

export type Decline = {
  readonly code: "card_declined" | "expired_card" | "incorrect_cvc" | "incorrect_number" | "authentication_required"
  readonly decline_code?: string
  readonly message: string
}

/** What a card does at one place: succeeds, asks the person to authenticate (on the page), or fails. */
export type CardStep = { readonly _tag: "ok" } | { readonly _tag: "authenticate" } | { readonly _tag: "declined"; readonly decline: Decline }

interface TestCard {
  readonly brand: "visa" | "mastercard"
  readonly onSession: CardStep
  readonly setup: CardStep
  readonly offSession: CardStep
}

const ok: CardStep = { _tag: "ok" }
const authenticate: CardStep = { _tag: "authenticate" }
const declined = (decline_code: string, message = "Your card was declined."): CardStep => ({
  _tag: "declined",
  decline: { code: "card_declined", decline_code, message }
})

export const FAKE_TEST_CARDS: Readonly<Record<string, TestCard>> = {
  "4242424242424242": { brand: "visa", onSession: ok, setup: ok, offSession: ok },
  "5555555555554444": { brand: "mastercard", onSession: ok, setup: ok, offSession: ok },
  "4000002500003155": { brand: "visa", onSession: authenticate, setup: authenticate, offSession: ok },
  "4000002760003184": {
    brand: "visa",
    onSession: authenticate,
    setup: authenticate,
    offSession: {
      _tag: "declined",
      decline: {
        code: "authentication_required",
        decline_code: "authentication_required",
        message: "Your card was declined. This transaction requires authentication."
      }
    }
  },
  "4000000000000002": { brand: "visa", onSession: declined("generic_decline"), setup: declined("generic_decline"), offSession: declined("generic_decline") },
  "4000000000009995": {
    brand: "visa",
    onSession: declined("insufficient_funds", "Your card has insufficient funds."),
    setup: declined("insufficient_funds", "Your card has insufficient funds."),
    offSession: declined("insufficient_funds", "Your card has insufficient funds.")
  },
  "4000000000000341": { brand: "visa", onSession: declined("generic_decline"), setup: ok, offSession: declined("generic_decline") }
}

const luhn = (digits: string): boolean => {
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

/** A card as typed on the hosted page: its checks, then what it does at `place`. */
export const cardStep = (
  typed: { readonly number: string; readonly exp_month: number; readonly exp_year: number; readonly cvc: string },
  place: "onSession" | "setup",
  nowMillis: number
): CardStep => {
  const number = typed.number.replace(/[\s-]/g, "")
  if (!/^\d{12,19}$/.test(number) || !luhn(number)) {
    return { _tag: "declined", decline: { code: "incorrect_number", message: "Your card number is incorrect." } }
  }
  const now = new Date(nowMillis)
  if (
    !(typed.exp_month >= 1 && typed.exp_month <= 12) ||
    typed.exp_year * 12 + typed.exp_month - 1 < now.getUTCFullYear() * 12 + now.getUTCMonth()
  ) {
    return { _tag: "declined", decline: { code: "expired_card", message: "Your card has expired." } }
  }
  if (!/^\d{3}$/.test(typed.cvc)) return { _tag: "declined", decline: { code: "incorrect_cvc", message: "Your card's security code is incorrect." } }
  const card = FAKE_TEST_CARDS[number]
  if (card === undefined) return declined("test_mode_live_card", "Your card was declined. Your request was in test mode, but used a non test card.")
  return card[place]
}

/** What an off-session charge of a saved card (its full number, kept by the fake only) does. */
export const offSessionStep = (number: string): CardStep => FAKE_TEST_CARDS[number]?.offSession ?? declined("generic_decline")

export const brandOf = (number: string): "visa" | "mastercard" => FAKE_TEST_CARDS[number]?.brand ?? "visa"
