/**
 * Gift ticket codes need `manage` to be read in full (docs/api-decisions.md "Gift ticket codes
 * need manage"), a suite every shell runs unchanged. A code is a bearer value any account can redeem, so a key
 * that may only read (`read`, as an agent's keys) sees it masked on every surface that shows it
 * (`GET /tickets`, `GET /orders/{id}`; `GET /orders` shows no ticket), and what it sees redeems
 * nothing in another account; so does a manage key scoped to one machine. A key with `manage` and
 * no scope sees the code whole, and that code redeems.
 * The shell must make new accounts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ShellUnderTest } from "./HttpSuite.ts"
import { type Client, clientOf, payWithApprovedCard } from "./IsolationWorld.ts"

const CODE = /^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$/
const MASKED = /^\*{5}-\*{5}-\*{5}-\*[0-9A-HJKMNP-TV-Z]{4}$/

export const giftCodesSuite = (shell: string, start: () => Promise<ShellUnderTest>) =>
  describe(`gift ticket codes by permission on ${shell}`, () => {
    let platform: ShellUnderTest
    let client: Client
    /** The buyer's key with every permission, a read-only key of it, and another account's key. */
    let buyer: string
    let reader: string
    let other: string
    let orderId: string
    beforeAll(async () => {
      platform = await start()
      client = clientOf(platform)
      if (platform.newAccount === undefined) throw new Error("the gift codes suite needs a shell that makes accounts")
      buyer = await platform.newAccount()
      other = await platform.newAccount()
      reader = (await client.ok("POST", "/keys", { key: buyer, body: { name: "gift-reader", permissions: ["read"] } })).json.secret
      const order = (await client.ok("POST", "/orders", { key: buyer, body: { type: "credits", amount_usd: 5, gift: true } })).json
      orderId = order.id
      const paying = (await client.ok("POST", `/orders/${orderId}/pay`, { key: buyer, body: { method: "card" } })).json
      await payWithApprovedCard(client, paying.pay_url)
    }, 120_000)
    afterAll(async () => {
      await platform?.close()
    })

    const ticketOf = async (key: string) => (await client.ok("GET", `/orders/${orderId}`, { key })).json.ticket
    const listed = async (key: string) => (await client.ok("GET", "/tickets", { key })).json.data as Array<{ code: string }>
    const balance = async (key: string) => (await client.ok("GET", "/credits", { key })).json.total_credits as number

    it("a manage key reads the code whole, on the order and in /tickets", async () => {
      const ticket = await ticketOf(buyer)
      expect(ticket).toEqual({ code: expect.stringMatching(CODE), credits: 5000, machine_id: null, redeemed: false, redeemed_by_you: false })
      expect((await listed(buyer)).map((t) => t.code)).toEqual([ticket.code])
    })

    it("a read key sees it masked, its last 4 characters only, and nowhere whole", async () => {
      const { code } = await ticketOf(buyer)
      const masked = await ticketOf(reader)
      expect(masked).toEqual({ code: expect.stringMatching(MASKED), credits: 5000, machine_id: null, redeemed: false, redeemed_by_you: false })
      expect(masked.code.slice(-4)).toBe(code.slice(-4))
      expect((await listed(reader)).map((t) => t.code)).toEqual([masked.code])
      for (const path of [`/orders/${orderId}`, "/tickets", "/orders", "/credits/activity", "/billing/receipts"]) {
        const answer = await client.ok("GET", path, { key: reader })
        expect(answer.text, path).not.toContain(code)
        expect(answer.text, path).not.toContain(code.replaceAll("-", ""))
      }
    })

    it("a manage key scoped to one machine sees it masked too: the gift is the whole account's money", async () => {
      const scoped = (await client.ok("POST", "/keys", {
        key: buyer,
        body: { name: "gift-machine-manager", permissions: ["read", "manage"], machine_id: "m-eu-a" }
      })).json.secret
      const { code } = await ticketOf(buyer)
      expect((await ticketOf(scoped)).code).toBe(`*****-*****-*****-*${code.slice(-4)}`)
      expect((await listed(scoped)).map((t) => t.code)).toEqual([`*****-*****-*****-*${code.slice(-4)}`])
    })

    it("what a read key sees redeems nothing in another account; the whole code does, once", async () => {
      const masked = (await ticketOf(reader)).code
      const before = await balance(other)
      const refused = await client.call("POST", "/credits/redeem", { key: other, body: { code: masked } })
      expect(refused.status, refused.text).toBe(404)
      expect(refused.json.error.code).toBe("ticket_not_found")
      // Nor can the read key redeem it itself.
      const ownRedeem = await client.call("POST", "/credits/redeem", { key: reader, body: { code: masked } })
      expect(ownRedeem.status).toBe(403)
      expect(await balance(other)).toBe(before)
      expect((await ticketOf(buyer)).redeemed).toBe(false)

      const { code } = await ticketOf(buyer)
      const redeemed = await client.call("POST", "/credits/redeem", { key: other, body: { code } })
      expect(redeemed.status, redeemed.text).toBe(200)
      expect(await balance(other)).toBe(before + 5000)
      expect(await ticketOf(reader)).toMatchObject({ code: masked, redeemed: true, redeemed_by_you: false })
    })
  })
