/** The test card processor's hosted checkout page (http/pages/CheckoutPage.ts), as pure functions. */
import { describe, expect, it as vit } from "vitest"
import { checkoutPage, declinedPage, escapeHtml, notFoundPage, paidPage, parseCheckoutForm } from "../../src/http/pages/CheckoutPage.ts"

describe("checkout page (pure)", () => {
  const info = {
    session_id: "cs_test_a\"b",
    order_id: "ord_1",
    title: "<script>alert(1)</script> & \"credits\"",
    amount_text: "$25.00",
    status: "open" as const,
    paid_at: null
  }

  vit("escapes every value and offers the card form", () => {
    const html = checkoutPage(info)
    expect(html).not.toContain("<script>alert(1)</script>")
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;credits&quot;")
    expect(html).toContain("cs_test_a&quot;b")
    for (const field of ["card_number", "expiry", "cvc"]) expect(html).toContain(`name="${field}"`)
    expect(html).toContain("data-testid=\"pay\"")
    expect(escapeHtml("<a href='x'>&`=</a>")).toBe("&lt;a href&#61;&#39;x&#39;&gt;&amp;&#96;&#61;&lt;/a&gt;")
  })

  vit("an error above the form, the paid page, the declined page with its reason, expired, not found", () => {
    expect(checkoutPage(info, { error: "Enter <b>digits</b>" })).toContain("Enter &lt;b&gt;digits&lt;/b&gt;")
    const paid = paidPage({ ...info, status: "paid", paid_at: "2026-01-15T12:00:00.000Z" })
    expect(paid).toContain("data-testid=\"paid\"")
    expect(paid).not.toContain("<form")
    expect(checkoutPage({ ...info, status: "paid", paid_at: null })).toContain("data-testid=\"paid\"")
    const declined = declinedPage(info, { reason: "card_declined", message: "Your card was <declined>." })
    expect(declined).toContain("card_declined")
    expect(declined).toContain("Your card was &lt;declined&gt;.")
    expect(declined).toContain("<form")
    expect(checkoutPage({ ...info, status: "expired" })).toContain("data-testid=\"expired\"")
    expect(checkoutPage({ ...info, status: "expired" })).not.toContain("<form")
    expect(notFoundPage()).toContain("data-testid=\"not-found\"")
  })

  vit("parses the posted form", () => {
    expect(parseCheckoutForm({ card_number: "4242 4242 4242 4242", expiry: "12/34", cvc: "123" })).toEqual({
      _tag: "Card",
      card: { number: "4242424242424242", exp_month: 12, exp_year: 2034, cvc: "123" }
    })
    expect(parseCheckoutForm({ card_number: "4242-4242-4242-4242", expiry: " 1 / 2030 ", cvc: " 999 " })).toEqual({
      _tag: "Card",
      card: { number: "4242424242424242", exp_month: 1, exp_year: 2030, cvc: "999" }
    })
    expect(parseCheckoutForm({ card_number: "42x", expiry: "12/34", cvc: "123" })._tag).toBe("Invalid")
    expect(parseCheckoutForm({ card_number: "4242424242424242", expiry: "1234", cvc: "123" })._tag).toBe("Invalid")
    expect(parseCheckoutForm({ card_number: "4242424242424242", expiry: "12/34" })._tag).toBe("Invalid")
    expect(parseCheckoutForm({})._tag).toBe("Invalid")
  })
})
