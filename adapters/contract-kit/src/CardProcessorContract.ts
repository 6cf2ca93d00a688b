/**
 * The contract suite of the card processor port (core/src/payments/CardProcessor.ts): what every
 * processor does the same, whoever shows the card form. Each processor runs it with a driver that
 * knows how a person saves a card with it (the test processor: the platform's form; Stripe: its
 * hosted setup page, completed over HTTP on the fake, or a test payment method in Stripe's test
 * mode):
 *
 *   cardProcessorContract("test", testProcessorDriver)
 *
 * It checks checkout sessions (an address for a person, one per call), saved cards and their
 * descriptions, and off-session charges: approved, declined, `authentication_required`, each
 * answer the same for a repeated idempotency key, and one charge for a key however many calls
 * race with it.
 */
import { generateId, Time } from "@model-platform/core/kernel"
import type { CardOutcome, CardProcessor, SaveCardOutcome } from "@model-platform/core/payments"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

export interface CardProcessorUnderTest {
  readonly processor: CardProcessor["Service"]
  /** A person saves the test card `number` for the account, the way this processor takes cards. */
  readonly saveCard: (accountId: string, number: string) => Promise<SaveCardOutcome>
  /** How many charges the processor has made so far, when the test can see it (the fake can). */
  readonly chargesMade?: (() => Promise<number>) | undefined
  readonly stop: () => Promise<void>
}

export interface CardProcessorDriver {
  readonly start: () => Promise<CardProcessorUnderTest>
  /** Skips the suite (Stripe's test mode without STRIPE_SECRET_KEY). */
  readonly skip?: boolean | undefined
  /** Where a processor-hosted checkout is not (the platform's own pages are under the base URL). */
  readonly pages: "platform" | "processor"
}

const run = <A>(effect: Effect.Effect<A>) => Effect.runPromise(effect)
const account = () => run(generateId("acct"))
const key = () => run(generateId("ord"))

export const cardProcessorContract = (name: string, driver: CardProcessorDriver) => {
  describe.skipIf(driver.skip === true)(`CardProcessor contract: ${name}`, () => {
    let under: CardProcessorUnderTest | undefined
    const processor = () => under!.processor

    beforeAll(async () => {
      under = await driver.start()
    }, 60_000)
    afterAll(async () => {
      await under?.stop()
    })

    const saved = async (accountId: string, number: string) => {
      const outcome = await under!.saveCard(accountId, number)
      if (outcome._tag !== "Saved") throw new Error(`saving ${number} was declined: ${outcome.message}`)
      return outcome
    }

    const charge = (accountId: string, reference: string, idempotencyKey: string, cents = 1_250n): Promise<CardOutcome> =>
      run(processor().chargeSaved({
        reference,
        account_id: accountId,
        amount_cents: cents,
        currency: "USD",
        description: "Contract charge",
        idempotency_key: idempotencyKey
      }))

    const charges = async () => (under!.chargesMade === undefined ? undefined : await under!.chargesMade())

    it("opens a checkout session: a page for a person, a new session for each order", async () => {
      const base = "http://127.0.0.1:9"
      const request = async () => ({
        order_id: await key(),
        account_id: await account(),
        title: "25,000 credits",
        amount_cents: 2_500n,
        currency: "USD",
        base_url: base,
        save_card: false,
        expires_at: Time.toTimestamp(Date.now() + 24 * 3600_000)
      })
      const [a, b] = await Promise.all([request().then((r) => run(processor().createSession(r))), request().then((r) => run(processor().createSession(r)))])
      expect(a!.session_id).not.toBe(b!.session_id)
      for (const session of [a!, b!]) {
        expect(session.checkout_url).toMatch(/^https?:\/\//)
        expect(session.checkout_url.startsWith(`${base}/checkout/`)).toBe(driver.pages === "platform")
      }
    })

    it("saves a card: its reference, and a description naming the last four digits, never the number", async () => {
      const card = await saved(await account(), "4242424242424242")
      expect(card.reference).not.toContain("4242424242424242")
      expect(card.description).toContain("4242")
      expect(card.description).not.toContain("4242424242424242")
    })

    it("a card its bank declines is not saved", async () => {
      const outcome = await under!.saveCard(await account(), "4000000000000002")
      expect(outcome._tag).toBe("Declined")
    })

    it("charges a saved card off-session once per idempotency key: the same key answers the same charge", async () => {
      const accountId = await account()
      const card = await saved(accountId, "4242424242424242")
      const before = await charges()
      const orderId = await key()
      const first = await charge(accountId, card.reference, orderId)
      expect(first._tag).toBe("Approved")
      const again = await charge(accountId, card.reference, orderId)
      expect(again).toEqual(first)
      if (before !== undefined) expect(await charges()).toBe(before + 1)
      const other = await charge(accountId, card.reference, await key())
      expect(other._tag).toBe("Approved")
      expect(other).not.toEqual(first)
      if (before !== undefined) expect(await charges()).toBe(before + 2)
    })

    it("racing calls with one key make one charge", async () => {
      const accountId = await account()
      const card = await saved(accountId, "4242424242424242")
      const before = await charges()
      const orderId = await key()
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => charge(accountId, card.reference, orderId)))
      expect(new Set(outcomes.map((o) => JSON.stringify(o))).size).toBe(1)
      expect(outcomes[0]!._tag).toBe("Approved")
      if (before !== undefined) expect(await charges()).toBe(before + 1)
    })

    it("a card that saves but whose charges fail is declined off-session, again for the same key, charging nothing", async () => {
      const accountId = await account()
      const card = await saved(accountId, "4000000000000341")
      const before = await charges()
      const orderId = await key()
      const first = await charge(accountId, card.reference, orderId)
      expect(first).toMatchObject({ _tag: "Declined", reason: "card_declined" })
      expect(await charge(accountId, card.reference, orderId)).toEqual(first)
      if (before !== undefined) expect(await charges()).toBe(before)
    })

    it("a card that always wants its holder is declined off-session with authentication_required", async () => {
      const accountId = await account()
      const card = await saved(accountId, "4000002760003184")
      const outcome = await charge(accountId, card.reference, await key())
      expect(outcome).toMatchObject({ _tag: "Declined", reason: "authentication_required" })
    })

    it("a card that wants its holder only on-session is charged off-session once saved", async () => {
      const accountId = await account()
      const card = await saved(accountId, "4000002500003155")
      expect((await charge(accountId, card.reference, await key()))._tag).toBe("Approved")
    })

    it("a reference the processor does not know is declined, charging nothing", async () => {
      const owner = await account()
      await saved(owner, "4242424242424242")
      const before = await charges()
      expect((await charge(owner, "pm_unknown", await key()))._tag).toBe("Declined")
      if (before !== undefined) expect(await charges()).toBe(before)
    })
  })
}
