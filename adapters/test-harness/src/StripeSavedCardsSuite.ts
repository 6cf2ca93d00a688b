/**
 * Saved cards and off-session charges through Stripe, on any shell (docs/payments.md "Saved cards
 * and off-session charges"): the shell runs the Stripe processor (the official client) against
 * the fake Stripe, on a clock the suite moves, with priced calls to a reference machine and mail
 * through a real SMTP server (as BillingAlertsSuite).
 *
 * - a card saved on Stripe's setup page becomes the account's top-up card once, whichever of the
 *   person's return and the webhook comes first; a later setup replaces it, a late report of an
 *   earlier one does not, a removal is not undone by a late report;
 * - automatic top-ups charge it off-session, once per crossing;
 * - a card whose bank wants its holder (4000 0027 6000 3184) or that is declined (0341) fails the
 *   top-up or the renewal: last_error / renewal_error, an alert, and one mailed link with which the
 *   person pays that order on-session (authenticating on Stripe's page); nothing is retried;
 * - refunds and disputes take the credits back through the ledger, once each: spent credits leave
 *   the balance negative and priced calls answer 402 until credits are bought again.
 */
import { eventually } from "./Eventually.ts"
import type { SetupResult } from "@model-platform/core/billing"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import type { CardProcessor, CheckoutSession } from "@model-platform/core/payments"
import type { DocumentStores } from "@model-platform/core/kernel"
import { type ReferenceMachine, startReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import type { Clock, Layer } from "effect"
import { randomBytes } from "node:crypto"
import Stripe from "stripe"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ALERTS_MODEL, alertsCatalogue } from "./BillingAlertsSuite.ts"
import { type TestPlan, withPlan } from "./CataloguePlans.ts"
import { type FakeStripe, startFakeStripe } from "./FakeStripe.ts"
import { type Forwarder, startForwarder } from "./HttpForwarder.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"
import { type Mailbox, recipients, startSmtp } from "./LocalSmtp.ts"
import { type MovableClock, movableClock } from "./MovableClock.ts"
import type { StripeProcessorFor } from "./StripeCheckoutSuite.ts"

export interface StripeCardsShell extends ShellUnderTest {
  /** The billing page's "save a card" with Stripe (CardSetups.open), as the shell's services run it. */
  readonly openCardSetup: (accountId: string, returnUrl: string) => Promise<CheckoutSession>
  /** Back on the billing page from Stripe's setup page (CardSetups.complete). */
  readonly completeCardSetup: (accountId: string, sessionId: string) => Promise<SetupResult>
  /** Forget the card (CardSetups.remove). */
  readonly removeCard: (accountId: string) => Promise<void>
}

export interface StripeCardsSetup {
  readonly catalogue: CatalogueConfig
  readonly cardProcessor: Layer.Layer<CardProcessor, never, DocumentStores>
  /** Where the shell sends mail (the alert mail sender: SMTP, no TLS, no authentication). */
  readonly smtpUrl: string
  /** PUBLIC_URL: the base of the mailed links. */
  readonly publicUrl: string
  /** The platform's clock (PlatformOptions.clock); the fake Stripe shares it. */
  readonly clock: Clock.Clock
  /** PlatformOptions.renewPlans */
  readonly renewPlans: { readonly intervalMs: number }
}

const PLAN: TestPlan = { id: "basic", name: "Basic", usd_per_period: 9.99, models: [ALERTS_MODEL], payment_methods: ["card", "stablecoin"] }

/** alertsCatalogue (one credit a call) with Stripe for cards and a card plan on its machine. */
export const stripeCardsCatalogue = (machineUrl: string): CatalogueConfig => {
  const base = withPlan(alertsCatalogue(machineUrl), PLAN)
  return { ...base, payments: { ...base.payments, card: { processor: "stripe" } } }
}

export const stripeSavedCardsSuite = (shell: string, processorFor: StripeProcessorFor, start: (setup: StripeCardsSetup) => Promise<StripeCardsShell>) =>
  describe(`saved cards, automatic top-ups and renewals through Stripe on ${shell}`, () => {
    let machine: ReferenceMachine
    let mailbox: Mailbox
    let clock: MovableClock
    let fake: FakeStripe
    let forwarder: Forwarder
    let platform: StripeCardsShell
    let stripe: Stripe

    beforeAll(async () => {
      machine = await startReferenceMachine({ port: 0, models: [{ id: ALERTS_MODEL, kind: "forecasts" }] })
      mailbox = await startSmtp()
      clock = movableClock()
      fake = await startFakeStripe({ now: clock.now })
      const webhookSecret = `whsec_${randomBytes(24).toString("hex")}`
      platform = await start({
        catalogue: stripeCardsCatalogue(machine.url),
        cardProcessor: processorFor({ secretKey: fake.secretKey, webhookSecret, client: fake.clientOptions }),
        smtpUrl: mailbox.url,
        publicUrl: "https://platform.test",
        clock: clock.clock,
        renewPlans: { intervalMs: 250 }
      })
      forwarder = await startForwarder(platform.fetch)
      fake.addWebhook(`${forwarder.url}/webhooks/stripe`, webhookSecret)
      stripe = new Stripe(fake.secretKey, { apiVersion: "2026-10-28.endive", ...fake.clientOptions })
    }, 120_000)

    afterAll(async () => {
      await fake?.close()
      await forwarder?.close()
      await platform?.close()
      await mailbox?.close()
      await machine?.close()
    })

    const call = async (method: string, path: string, key: string, body?: unknown) => {
      const response = await platform.fetch(path, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      const text = await response.text()
      return { status: response.status, json: JSON.parse(text) as any, text }
    }
    const ok = async (method: string, path: string, key: string, body?: unknown) => {
      const answer = await call(method, path, key, body)
      expect(answer.status, `${method} ${path}: ${answer.text}`).toBe(200)
      return answer.json
    }

    /** The person pays on Stripe's page (authenticating when the bank asks) and comes back. */
    const payOnStripe = async (payUrl: string, card = "4242424242424242") => {
      const page = await fake.completeCheckout(payUrl, card)
      if (page._tag !== "Redirected") throw new Error(`Stripe's page refused ${card}: ${page.status}`)
      const back = await platform.fetch(new URL(page.location).pathname)
      expect(back.status, await back.clone().text()).toBe(200)
    }

    /** A new account with `usd` of credits bought through Stripe: its key, id and email. */
    const account = async (usd = 5) => {
      if (platform.newAccount === undefined) throw new Error(`${shell}: the suite needs new accounts`)
      const key = await platform.newAccount()
      const order = await ok("POST", "/orders", key, { type: "credits", amount_usd: usd })
      await payOnStripe((await ok("POST", `/orders/${order.id}/pay`, key, { method: "card" })).pay_url)
      const me = await ok("GET", "/me", key) as { id: string; email: string }
      const intent = fake.all("payment_intent").find((pi) => pi["metadata"]["order_id"] === order.id)!
      return { key, id: me.id, email: me.email, orderId: order.id as string, intent: intent["id"] as string, charge: intent["latest_charge"] as string }
    }

    /** A person saves `card` on Stripe's setup page and comes back to the billing page. */
    const saveCard = async (accountId: string, card: string) => {
      const session = await platform.openCardSetup(accountId, "https://platform.test/accounts/billing/card")
      const page = await fake.completeCheckout(session.checkout_url, card)
      if (page._tag !== "Redirected") throw new Error(`Stripe's setup page refused ${card}`)
      expect(page.location).toBe(`https://platform.test/accounts/billing/card?session_id=${session.session_id}`)
      return { session, result: await platform.completeCardSetup(accountId, session.session_id) }
    }

    const forecast = (key: string) => call("POST", "/v1/forecasts", key, { model: ALERTS_MODEL, history: [1, 2, 3, 4, 5], horizon: 2 })
    const balance = async (key: string) => (await ok("GET", "/credits", key)).total_credits as number
    const autoReload = async (key: string) => ok("GET", "/billing/auto-reload", key)
    const alertsOf = async (key: string, kind: string) => ((await ok("GET", "/billing/alerts", key)).data as Array<any>).filter((a) => a.kind === kind)
    const mailsTo = (address: string) => mailbox.received.filter((m) => recipients(m).includes(address))
    const offSessionIntents = () => fake.all("payment_intent").filter((pi) => pi["metadata"]["off_session"] === "true")
    const setupEvent = (sessionId: string) =>
      fake.deliveries.filter((d) => d.type === "checkout.session.completed" && fake.events.some((e) => e["id"] === d.event_id && e["data"]["object"]["id"] === sessionId))

    /** Calls until the top-up's outcome shows (a settlement checks the threshold). */
    const callUntil = async (key: string, probe: () => Promise<boolean>) =>
      eventually(async () => {
        const answer = await forecast(key)
        expect([200, 402]).toContain(answer.status)
        expect(await probe()).toBe(true)
      })

    /** The one pay link mailed to `email` after `before` mails; answers it. */
    const mailedLink = async (email: string, before: number) =>
      eventually(async () => {
        const mails = mailsTo(email).slice(before).filter((m) => m.subject?.includes("please pay"))
        expect(mails).toHaveLength(1)
        const link = /https?:\/\/\S+\/c\/pay\/cs_\S+/.exec(mails[0]!.text ?? "")?.[0]
        expect(link).toBeDefined()
        return link!
      })

    it("a card saved on Stripe's page is the top-up card once: return and webhook, later setups, late reports and a removal", async () => {
      const { id, key } = await account()
      // Back before the webhook: saved; the webhook finds it applied.
      fake.hold()
      const first = await saveCard(id, "4242424242424242")
      expect(first.result).toMatchObject({ _tag: "Saved", auto_reload: { card: expect.stringMatching(/^Visa •••• 4242, expires 12\/2034$/) } })
      await fake.release()
      expect(setupEvent(first.session.session_id).map((d) => [d.status, JSON.parse(d.body).outcome])).toEqual([[200, "already_applied"]])
      // Two setups opened, the later one completed first: a late report of the earlier does not replace it.
      fake.hold()
      const earlier = await platform.openCardSetup(id, "https://platform.test/accounts/billing/card")
      clock.advance(1_000)
      const later = await platform.openCardSetup(id, "https://platform.test/accounts/billing/card")
      await fake.completeCheckout(later.checkout_url, "5555555555554444")
      await fake.completeCheckout(earlier.checkout_url, "4000000000000341")
      expect(await platform.completeCardSetup(id, later.session_id)).toMatchObject({ _tag: "Saved" })
      await fake.release()
      expect(setupEvent(earlier.session_id).map((d) => JSON.parse(d.body).outcome)).toEqual(["older_than_the_saved_card"])
      expect((await autoReload(key)).card).toContain("Mastercard •••• 4444")
      // Removed while a report is on its way: it stays removed.
      fake.hold()
      const again = await saveCard(id, "4242424242424242")
      expect(again.result._tag).toBe("Saved")
      await platform.removeCard(id)
      await fake.release()
      expect((await autoReload(key)).card).toBeNull()
      // Another account's setup is not this account's card.
      const other = await account()
      const theirs = await platform.openCardSetup(other.id, "https://platform.test/accounts/billing/card")
      await fake.completeCheckout(theirs.checkout_url, "4242424242424242")
      expect(await platform.completeCardSetup(id, theirs.session_id)).toMatchObject({ _tag: "NotSaved" })
      expect((await autoReload(key)).card).toBeNull()
    })

    it("automatic top-ups charge the saved card off-session, once per crossing: its receipt and alert", async () => {
      const { id, key } = await account(5)
      expect((await saveCard(id, "4242424242424242")).result._tag).toBe("Saved")
      await ok("POST", "/billing/auto-reload", key, { enabled: true, threshold_credits: 4_998, amount_usd: 5 })
      const intentsBefore = offSessionIntents().length
      await callUntil(key, async () => (await alertsOf(key, "auto_reload_paid")).length === 1)
      const receipts = ((await ok("GET", "/billing/receipts", key)).data as Array<any>).filter((r) => r.auto_reload)
      expect(receipts).toHaveLength(1)
      expect(receipts[0]).toMatchObject({ amount: { text: "$5.00" }, paid_with: "card" })
      const intents = offSessionIntents().slice(intentsBefore)
      expect(intents).toHaveLength(1)
      expect(intents[0]).toMatchObject({ status: "succeeded", amount: 500, currency: "usd", off_session: true, metadata: { account_id: id } })
      expect(await balance(key)).toBeGreaterThan(9_990)
      // Above the threshold again: more calls charge nothing more.
      for (let i = 0; i < 3; i++) await forecast(key)
      expect(offSessionIntents().length).toBe(intentsBefore + 1)
    })

    for (const [card, reason, label] of [
      ["4000002760003184", "authentication_required", "whose bank wants its holder"],
      ["4000000000000341", "card_declined", "that is declined"]
    ] as const) {
      it(`a top-up card ${label}: last_error, an alert, and one mailed link that pays the top-up on-session; nothing retried`, async () => {
        const { id, key, email } = await account(5)
        expect((await saveCard(id, card)).result._tag).toBe("Saved")
        await ok("POST", "/billing/auto-reload", key, { enabled: true, threshold_credits: 4_998, amount_usd: 7 })
        const mailsBefore = mailsTo(email).length
        await callUntil(key, async () => (await autoReload(key)).last_error !== null)
        expect((await autoReload(key)).last_error).toContain(`(${reason})`)
        const failed = await eventually(async () => {
          const [found] = await alertsOf(key, "auto_reload_failed")
          expect(found).toBeDefined()
          return found
        })
        expect(failed.message).toContain("A link to pay it yourself was mailed")
        const link = await mailedLink(email, mailsBefore)
        expect(link.startsWith(`${fake.url}/c/pay/`)).toBe(true)
        const intents = offSessionIntents().length
        // More crossings: no retry, no second mail.
        for (let i = 0; i < 3; i++) await forecast(key)
        expect(offSessionIntents().length).toBe(intents)
        const before = await balance(key)
        // The person pays it with the link (Stripe asks 3184's holder to authenticate on its page).
        await payOnStripe(link, card === "4000000000000341" ? "4242424242424242" : card)
        expect(await balance(key)).toBeGreaterThan(before + 6_990)
        const topUps = ((await ok("GET", "/billing/receipts", key)).data as Array<any>).filter((r) => r.auto_reload)
        expect(topUps).toHaveLength(1)
        expect(mailsTo(email).slice(mailsBefore).filter((m) => m.subject?.includes("please pay"))).toHaveLength(1)
      })
    }

    it("a card plan bought through Stripe renews off-session; one whose bank wants its holder ends with a mailed link that renews it", async () => {
      const { key, email } = await account(5)
      const buyPlan = async (card: string) => {
        const order = await ok("POST", "/orders", key, { type: "subscription", machine_id: "m-alerts", plan_id: "basic" })
        const paying = await ok("POST", `/orders/${order.id}/pay`, key, { method: "card" })
        const sessionId = new URL(paying.pay_url).pathname.split("/").pop()!
        await payOnStripe(paying.pay_url, card)
        // The plan's checkout kept the card for its renewals.
        expect(fake.get(fake.get(sessionId)!["payment_intent"])!["setup_future_usage"]).toBe("off_session")
        const plans = (await ok("GET", "/subscriptions", key)).data as Array<any>
        return plans.find((p) => !seen.has(p.id) && seen.add(p.id))
      }
      const seen = new Set<string>()
      const good = await buyPlan("4242424242424242")
      const needy = await buyPlan("4000002760003184")
      expect([good.status, needy.status]).toEqual(["active", "active"])
      const mailsBefore = mailsTo(email).length
      clock.advance(30 * 86_400_000 + 60_000)
      const renewed = await eventually(async () => {
        const plans = (await ok("GET", "/subscriptions", key)).data as Array<any>
        const g = plans.find((p) => p.id === good.id)
        const n = plans.find((p) => p.id === needy.id)
        expect(g.current_period_end > good.current_period_end).toBe(true)
        expect(n.auto_renews).toBe(false)
        return { g, n }
      })
      expect(renewed.g.status).toBe("active")
      expect(renewed.n.status).toBe("ended")
      const failed = await eventually(async () => {
        const [found] = await alertsOf(key, "plan_renewal_failed")
        expect(found).toBeDefined()
        return found
      })
      expect(failed.message).toContain("authentication_required")
      expect(failed.message).toContain("A link to pay its renewal yourself was mailed")
      const link = await mailedLink(email, mailsBefore)
      await payOnStripe(link, "4000002760003184")
      const after = ((await ok("GET", "/subscriptions", key)).data as Array<any>).find((p) => p.id === needy.id)
      expect(after.status).toBe("active")
      expect(after.current_period_end > needy.current_period_end).toBe(true)
    })

    /** The answers to the deliveries of `type` events about `objectId`. */
    const outcomes = (type: string, objectId: string) => {
      const ids = new Set(fake.events.filter((e) => e["type"] === type && (e["data"]["object"]["id"] === objectId || e["data"]["object"]["charge"] === objectId)).map((e) => e["id"]))
      return fake.deliveries.filter((d) => ids.has(d.event_id)).map((d) => [d.status, JSON.parse(d.body).outcome])
    }

    it("refunds take the purchased credits back once each: in part, in whole, replayed; the receipt stays, the tier falls", async () => {
      const { key, intent, charge } = await account(10)
      expect(await balance(key)).toBe(10_000)
      await stripe.refunds.create({ payment_intent: intent, amount: 250 })
      await fake.settled()
      expect(await balance(key)).toBe(7_500)
      const activity = (await ok("GET", "/credits/activity", key)).data as Array<any>
      expect(activity[0]).toMatchObject({ type: "credit_reversed", credits: -2_500, machine_id: null })
      await stripe.refunds.create({ payment_intent: intent })
      await fake.settled()
      expect(await balance(key)).toBe(0)
      const refunded = fake.events.filter((e) => e["type"] === "charge.refunded" && e["data"]["object"]["id"] === charge)
      await fake.redeliver(refunded[0]!["id"])
      await fake.redeliver(refunded[1]!["id"])
      expect(outcomes("charge.refunded", charge)).toEqual([[200, "reversed"], [200, "reversed"], [200, "duplicate"], [200, "duplicate"]])
      expect(await balance(key)).toBe(0)
      expect(((await ok("GET", "/billing/receipts", key)).data as Array<any>)).toHaveLength(1)
      expect((await ok("GET", "/billing", key)).usage_tier.purchased_credits).toBe(0)
    })

    it("a refund after the credits were spent leaves the balance negative: priced calls answer 402 until credits are bought again", async () => {
      const { key, intent } = await account(5)
      for (let i = 0; i < 3; i++) expect((await forecast(key)).status).toBe(200)
      await eventually(async () => expect(await balance(key)).toBe(4_997))
      await stripe.refunds.create({ payment_intent: intent })
      await fake.settled()
      expect(await balance(key)).toBe(-3)
      const refused = await forecast(key)
      expect(refused.status, refused.text).toBe(402)
      expect(refused.json.error.code).toBe("insufficient_credit")
      const order = await ok("POST", "/orders", key, { type: "credits", amount_usd: 5 })
      await payOnStripe((await ok("POST", `/orders/${order.id}/pay`, key, { method: "card" })).pay_url)
      expect(await balance(key)).toBe(4_997)
      expect((await forecast(key)).status).toBe(200)
    })

    it("a dispute takes the credits back once; a refund of a payment the platform did not make changes nothing", async () => {
      const { key, charge } = await account(5)
      const dispute = fake.dispute(charge)
      await fake.settled()
      expect(await balance(key)).toBe(0)
      const created = fake.events.find((e) => e["type"] === "charge.dispute.created" && e["data"]["object"]["id"] === dispute["id"])!
      await fake.redeliver(created["id"])
      expect(outcomes("charge.dispute.created", dispute["id"])).toEqual([[200, "reversed"], [200, "duplicate"]])
      expect(await balance(key)).toBe(0)
      // A charge made outside the platform (no order in its metadata): answered, nothing taken.
      const customer = await stripe.customers.create({})
      const session = await stripe.checkout.sessions.create({
        mode: "setup", currency: "usd", customer: customer.id, success_url: "http://127.0.0.1:9/x?session_id={CHECKOUT_SESSION_ID}"
      })
      await fake.completeCheckout(session.url!, "4242424242424242")
      const method = ((await stripe.checkout.sessions.retrieve(session.id, { expand: ["setup_intent"] })).setup_intent as Stripe.SetupIntent).payment_method as string
      const foreign = await stripe.paymentIntents.create({ amount: 900, currency: "usd", customer: customer.id, payment_method: method, off_session: true, confirm: true })
      await stripe.refunds.create({ payment_intent: foreign.id })
      await fake.settled()
      expect(outcomes("charge.refunded", foreign.latest_charge as string)).toEqual([[200, "unknown_order"]])
    })
  })
