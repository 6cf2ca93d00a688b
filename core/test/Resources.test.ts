/**
 * The resource schemas of the spec's "Resources and their fields" (and the bodies of the
 * endpoints that use them): representative JSON decodes, bad values are refused with a message
 * that names the field.
 */
import { Result, Schema } from "effect"
import { describe, expect, it } from "vitest"
import * as Agents from "../src/agents/Schemas.ts"
import * as Billing from "../src/billing/Schemas.ts"
import * as Credits from "../src/ledger/Credits.ts"
import * as Datasets from "../src/datasets/Schemas.ts"
import * as Fieldwork from "../src/fieldwork/Schemas.ts"
import * as Identity from "../src/accounts/Identity.ts"
import * as Inference from "../src/gateway/Inference.ts"
import * as Orders from "../src/payments/Orders.ts"
import * as Plans from "../src/plans/Schemas.ts"

type Decodable = Schema.ConstraintDecoder<unknown>

/** Decodes and checks the value comes back as it went in (nothing dropped, nothing added). */
const accepts = (schema: Decodable, input: unknown) => {
  const result = Schema.decodeUnknownResult(schema)(input)
  if (Result.isFailure(result)) throw new Error(`refused: ${result.failure.message}`)
  expect(result.success).toEqual(input)
}

/** The failure message for input, which must be refused. */
const failure = (schema: Decodable, input: unknown): string => {
  const result = Schema.decodeUnknownResult(schema)(input)
  if (Result.isSuccess(result)) throw new Error(`accepted: ${JSON.stringify(input)}`)
  return result.failure.message
}

/** Refused, with the message pointing at the field (a path such as ["amount_usd"]). */
const refusesAt = (schema: Decodable, input: unknown, ...path: ReadonlyArray<string | number>) => {
  const message = failure(schema, input)
  expect(message).toContain(path.map((p) => `[${JSON.stringify(p)}]`).join(""))
  return message
}

const T = "2026-03-01T12:00:00.000Z"

// ---- Orders -------------------------------------------------------------------------------

describe("Orders", () => {
  const pending = {
    id: "ord_1",
    type: "credits",
    title: "100 credits",
    amount_usd: 10,
    currency: "usd",
    status: "pending",
    machine_id: null,
    payment: { method: null },
    pay_url: "https://checkout.example/ord_1",
    created_at: T,
    paid_at: null
  }
  const paid = {
    ...pending,
    status: "paid",
    payment: {
      method: "stablecoin",
      deposit: { chain: "base", token: "USDC", amount: "10.000000", address: "0xabc", memo: null }
    },
    paid_at: T,
    ticket: { code: "GIFT-1234", credits: 10000, machine_id: null, redeemed: false, redeemed_by_you: false }
  }

  it("decodes orders before and after payment, with or without a ticket", () => {
    accepts(Orders.Order, pending)
    accepts(Orders.Order, paid)
    accepts(Orders.Order, { ...pending, payment: { method: "card" }, ticket: null })
    accepts(Orders.Order, { ...pending, status: "expired" })
    accepts(Orders.Order, { ...pending, status: "cancelled" })
    accepts(Orders.OrderList, { data: [pending, paid] })
  })

  it("refuses unknown statuses, a stablecoin payment without deposit, a bad timestamp", () => {
    refusesAt(Orders.Order, { ...pending, status: "refunded" }, "status")
    refusesAt(Orders.Order, { ...pending, payment: { method: "stablecoin" } }, "payment")
    refusesAt(Orders.Order, { ...pending, created_at: "2026-03-01T12:00:00Z" }, "created_at")
    refusesAt(Orders.Order, { ...pending, type: "gift" }, "type")
  })

  it("decodes every kind of order body", () => {
    accepts(Orders.CreateOrder, { type: "credits", amount_usd: 5 })
    accepts(Orders.CreateOrder, { type: "credits", amount_usd: 5000, machine_id: "m1", gift: true })
    accepts(Orders.CreateOrder, { type: "credits", amount_usd: 20, machine_id: null })
    accepts(Orders.CreateOrder, { type: "package", package_id: "starter", gift: false })
    accepts(Orders.CreateOrder, { type: "package", package_id: "starter" })
    accepts(Orders.CreateOrder, { type: "rental", machine_id: "m1", cpu_cores: 4, memory_gb: 16, hours: 24, gpu: 0, storage_gb: 0 })
    accepts(Orders.CreateOrder, { type: "rental", machine_id: "m1", cpu_cores: 1, memory_gb: 1, hours: 1 })
    accepts(Orders.CreateOrder, { type: "subscription", machine_id: "m1", plan_id: "builder" })
    accepts(Orders.CreateOrder, { type: "subscription", machine_id: "m1", plan_id: "builder", renew_subscription_id: "sub_1" })
  })

  it("refuses credit amounts outside whole dollars 5 to 5000", () => {
    expect(refusesAt(Orders.CreateOrder, { type: "credits", amount_usd: 4 }, "amount_usd")).toMatch(/5 to 5000/)
    expect(refusesAt(Orders.CreateOrder, { type: "credits", amount_usd: 5001 }, "amount_usd")).toMatch(/5 to 5000/)
    expect(refusesAt(Orders.CreateOrder, { type: "credits", amount_usd: 5.5 }, "amount_usd")).toMatch(/integer/)
    refusesAt(Orders.CreateOrder, { type: "credits", amount_usd: "10" }, "amount_usd")
    refusesAt(Orders.CreateOrder, { type: "credits" }, "amount_usd")
  })

  it("refuses bodies that break the field rules of their type", () => {
    refusesAt(Orders.CreateOrder, { type: "package" }, "package_id")
    refusesAt(Orders.CreateOrder, { type: "package", package_id: "" }, "package_id")
    refusesAt(Orders.CreateOrder, { type: "rental", machine_id: "m1", cpu_cores: 0, memory_gb: 1, hours: 1 }, "cpu_cores")
    refusesAt(Orders.CreateOrder, { type: "rental", machine_id: "m1", cpu_cores: 1, memory_gb: 0, hours: 1 }, "memory_gb")
    refusesAt(Orders.CreateOrder, { type: "rental", machine_id: "m1", cpu_cores: 1, memory_gb: 1, hours: 0 }, "hours")
    refusesAt(Orders.CreateOrder, { type: "rental", machine_id: "m1", cpu_cores: 1, memory_gb: 1, hours: 1, gpu: -1 }, "gpu")
    refusesAt(Orders.CreateOrder, { type: "rental", machine_id: "m1", cpu_cores: 1, memory_gb: 1, hours: 1, storage_gb: 1.5 }, "storage_gb")
    refusesAt(Orders.CreateOrder, { type: "rental", cpu_cores: 1, memory_gb: 1, hours: 1 }, "machine_id")
    refusesAt(Orders.CreateOrder, { type: "subscription", machine_id: "m1" }, "plan_id")
    expect(failure(Orders.CreateOrder, { type: "voucher" })).toMatch(/type is credits, package, rental or subscription/)
  })

  it("decodes quotes of each type", () => {
    accepts(Orders.Quote, {
      type: "credits", amount_usd: 10, currency: "usd", details: { credits: 10000, machine_id: null, gift: false }
    })
    accepts(Orders.Quote, {
      type: "rental", amount_usd: 12.5, currency: "usd",
      details: { credits: 0, machine_id: "m1", cpu_cores: 2, memory_gb: 8, gpu: 1, storage_gb: 100, hours: 5 }
    })
    accepts(Orders.Quote, {
      type: "subscription", amount_usd: 49, currency: "usd",
      details: { credits: 50000, machine_id: "m1", plan_id: "builder", period_days: 30, renew_subscription_id: null }
    })
    refusesAt(Orders.Quote, { type: "credits", amount_usd: 10, currency: "usd", details: { credits: 1 } }, "details", "machine_id")
  })

  it("decodes pay bodies and keeps chain and token to stablecoin", () => {
    accepts(Orders.PayOrder, { method: "card" })
    accepts(Orders.PayOrder, { method: "stablecoin" })
    accepts(Orders.PayOrder, { method: "stablecoin", chain: "base", token: "USDC" })
    refusesAt(Orders.PayOrder, { method: "paypal" }, "method")
    refusesAt(Orders.PayOrder, {}, "method")
    expect(refusesAt(Orders.PayOrder, { method: "card", chain: "base" }, "chain")).toMatch(/stablecoin payments only/)
    refusesAt(Orders.PayOrder, { method: "card", token: "USDC" }, "token")
  })
})

// ---- Credits ------------------------------------------------------------------------------

describe("Credits", () => {
  it("decodes the balance, activity, tickets and redemption", () => {
    accepts(Credits.CreditBalance, {
      total_credits: 1500.25,
      by_scope: [{ machine_id: null, credits: 1000 }, { machine_id: "m1", credits: 500.25 }]
    })
    accepts(Credits.ActivityList, {
      data: [
        { id: "act_2", type: "usage", credits: -0.000123, machine_id: "m1", at: T },
        { id: "act_1", type: "credit_added", credits: 1000, machine_id: null, at: T },
        { id: "act_0", type: "plan_credit_granted", credits: 50, machine_id: "m1", at: T }
      ]
    })
    accepts(Credits.TicketList, {
      data: [{ code: "GIFT-1", credits: 100, machine_id: null, redeemed: true, redeemed_by_you: false }]
    })
    accepts(Credits.RedeemTicket, { code: "GIFT-1" })
    accepts(Credits.RedeemResponse, { redeemed: true, credits: 100, machine_id: null })
  })

  it("refuses bad values", () => {
    refusesAt(Credits.ActivityEntry, { id: "a", type: "refund", credits: 1, machine_id: null, at: T }, "type")
    refusesAt(Credits.CreditBalance, { total_credits: 0.0000001, by_scope: [] }, "total_credits")
    refusesAt(Credits.CreditBalance, { total_credits: 1, by_scope: [{ machine_id: 3, credits: 1 }] }, "by_scope", 0, "machine_id")
    refusesAt(Credits.RedeemTicket, { code: "" }, "code")
    refusesAt(Credits.RedeemTicket, {}, "code")
    refusesAt(Credits.Ticket, { code: "x", credits: 1, machine_id: null, redeemed: "no", redeemed_by_you: false }, "redeemed")
  })
})

// ---- Billing ------------------------------------------------------------------------------

describe("Billing", () => {
  const month = { spent_credits: 120.5, limit_credits: 10000, own_limit_credits: null, alert_points: [50, 80, 100] }
  const usageTier = {
    tier: 1, name: "Tier 1", rpm: 60, monthly_limit_credits: 10000, purchased_credits: 0,
    next: { tier: 2, name: "Tier 2", purchased_credits: 50000, rpm: 300, monthly_limit_credits: 100000 }
  }
  const autoReload = { enabled: false, threshold_credits: 0, amount_usd: 0, card: null, last_error: null }

  it("decodes the billing summary", () => {
    accepts(Billing.BillingSummary, {
      balance: { credits: 1000, token: 1, usd: 10 },
      usage_tier: usageTier,
      month,
      auto_reload: autoReload,
      invoicing: null,
      charging: { open: false, reason: "no payment rail is configured", starts_at: null },
      credits_per_usd: 100
    })
    accepts(Billing.UsageTier, { ...usageTier, next: null })
    refusesAt(Billing.BillingSummary, {
      balance: { credits: 1, token: 1, usd: 1 }, usage_tier: usageTier, month, auto_reload: autoReload,
      invoicing: "approved", charging: { open: true, reason: null, starts_at: T }, credits_per_usd: 100
    }, "invoicing")
  })

  it("decodes usage and refuses unknown groupings and impossible dates", () => {
    const usage = {
      from: "2026-03-01", to: "2026-03-31", group_by: "model",
      data: [{ key: "llama-3-8b", label: "Llama 3 8B", calls: 12, list_credits: 3.5, credits: 0 }]
    }
    accepts(Billing.Usage, usage)
    for (const g of Billing.UsageGroupByValues) accepts(Billing.Usage, { ...usage, group_by: g })
    refusesAt(Billing.Usage, { ...usage, group_by: "week" }, "group_by")
    refusesAt(Billing.Usage, { ...usage, from: "2026-02-30" }, "from")
    refusesAt(Billing.Usage, { ...usage, to: "2026/03/31" }, "to")
    refusesAt(Billing.Usage, { ...usage, data: [{ ...usage.data[0], calls: 1.5 }] }, "data", 0, "calls")
  })

  it("names the usage CSV columns in the spec's order", () => {
    expect(Billing.USAGE_CSV_COLUMNS).toEqual([
      "time_utc", "service", "model", "unit", "quantity", "key_id", "agent_id",
      "from_allowance", "from_trial", "list_credits", "credits", "ref"
    ])
  })

  it("decodes the limits view and the limit bodies", () => {
    accepts(Billing.LimitsView, {
      month: { period: "2026-03", ...month, alert_email: true }, usage_tier: usageTier,
      keys: [
        { key_id: "key_1", name: "prod", monthly_limit_credits: 500, spent_credits: 120.5 },
        { key_id: "key_2", name: "dev", monthly_limit_credits: null, spent_credits: 0 }
      ]
    })
    refusesAt(Billing.LimitsView, { month: { period: "2026-3", ...month, alert_email: true }, usage_tier: usageTier, keys: [] }, "month", "period")
    accepts(Billing.SetLimits, { monthly_limit_credits: 5000, alert_points: [1, 50, 100], alert_email: true })
    accepts(Billing.SetLimits, { monthly_limit_credits: null })
    accepts(Billing.SetLimits, {})
    accepts(Billing.KeyLimit, { monthly_limit_credits: 250 })
    accepts(Billing.KeyLimit, { monthly_limit_credits: null })
  })

  it("refuses bad limits", () => {
    expect(refusesAt(Billing.SetLimits, { alert_points: [0] }, "alert_points", 0)).toMatch(/1 to 100/)
    refusesAt(Billing.SetLimits, { alert_points: [50, 101] }, "alert_points", 1)
    refusesAt(Billing.SetLimits, { alert_points: [50.5] }, "alert_points", 0)
    refusesAt(Billing.SetLimits, { monthly_limit_credits: -1 }, "monthly_limit_credits")
    refusesAt(Billing.SetLimits, { alert_email: "yes" }, "alert_email")
    refusesAt(Billing.KeyLimit, {}, "monthly_limit_credits")
    refusesAt(Billing.KeyLimit, { monthly_limit_credits: "100" }, "monthly_limit_credits")
    refusesAt(Billing.SetLimits, { monthly_limit_credits: 1.0000001 }, "monthly_limit_credits")
    refusesAt(Billing.SetLimits, { alert_points: Array.from({ length: 101 }, () => 50) }, "alert_points")
  })

  it("decodes automatic top-ups and refuses amounts a credit order would refuse", () => {
    accepts(Billing.AutoReloadView, { enabled: true, threshold_credits: 500, amount_usd: 20, card: "Visa ending 4242", last_error: null })
    accepts(Billing.SetAutoReload, { enabled: true, threshold_credits: 500, amount_usd: 20 })
    refusesAt(Billing.SetAutoReload, { enabled: true, threshold_credits: 500, amount_usd: 4 }, "amount_usd")
    refusesAt(Billing.SetAutoReload, { enabled: true, threshold_credits: 500, amount_usd: 20.5 }, "amount_usd")
    refusesAt(Billing.SetAutoReload, { enabled: true, threshold_credits: -5, amount_usd: 20 }, "threshold_credits")
    refusesAt(Billing.SetAutoReload, { threshold_credits: 5, amount_usd: 20 }, "enabled")
  })

  it("decodes alerts, receipts and statements", () => {
    const alert = {
      id: "al_1", kind: "org_spend", target: "acct_1", period: "2026-03", point: 80,
      message: "You have used 80% of this month's limit.", seen: false, created_at: T
    }
    accepts(Billing.AlertList, { data: [alert, { ...alert, id: "al_2", kind: "low_balance", point: 0 }] })
    refusesAt(Billing.Alert, { ...alert, period: "2026-3" }, "period")
    refusesAt(Billing.Alert, { ...alert, kind: "weather" }, "kind")

    const receipt = {
      id: "rcpt_1", kind: "credits", title: "1000 credits", status: "paid", paid_at: T,
      amount: { value: 10, currency: "usd", text: "$10.00" }, credits: 1000, paid_with: "card", auto_reload: true
    }
    accepts(Orders.ReceiptList, { data: [receipt] })
    refusesAt(Orders.Receipt, { ...receipt, paid_with: "cash" }, "paid_with")

    accepts(Billing.StatementMonthList, { data: [{ month: "2026-02" }, { month: "2026-03" }] })
    refusesAt(Billing.StatementMonthList, { data: [{ month: "2026-13" }] }, "data", 0, "month")
    accepts(Billing.Statement, {
      month: "2026-02",
      opening_credits: 100,
      added: { purchased_credits: 1000, plan_credits: 50 },
      used_credits: 200,
      usage_by_service: [{ service: "chat", name: "Chat", calls: 40, list_credits: 180, credits: 150 }],
      other_usage_credits: 50,
      closing_credits: 950,
      payments: [receipt],
      payments_total_usd: 10
    })
  })

  it("decodes the invoicing request and answer", () => {
    accepts(Billing.InvoicingRequest, { note: "Monthly invoice to ACME GmbH, PO 1234" })
    accepts(Billing.InvoicingResponse, { invoicing: "requested" })
    refusesAt(Billing.InvoicingRequest, {}, "note")
    refusesAt(Billing.InvoicingRequest, { note: "x".repeat(2001) }, "note")
    refusesAt(Billing.InvoicingRequest, { note: "a\u0000b" }, "note")
  })
})

// ---- Plans and rentals --------------------------------------------------------------------

describe("Plans", () => {
  it("decodes plans, rentals and plan changes", () => {
    accepts(Plans.SubscriptionList, {
      data: [{
        id: "sub_1", machine_id: "m1", plan_id: "builder", status: "active", auto_renews: true,
        cancel_at_period_end: false, current_period_start: T, current_period_end: "2026-03-31T12:00:00.000Z", paid_with: "card",
        renewal_error: null
      }]
    })
    accepts(Plans.SubscriptionList, { data: [] })
    accepts(Plans.PlanChange, { id: "sub_1", status: "active", auto_renews: false, cancel_at_period_end: true })
    accepts(Plans.RentalList, {
      data: [{
        id: "rent_1", machine_id: "m1", status: "scheduled", cpu_cores: 4, memory_gb: 16, gpu: 1,
        storage_gb: 100, hours: 24, starts_at: T, ends_at: "2026-03-02T12:00:00.000Z"
      }]
    })
    refusesAt(Plans.PlanChange, { id: "sub_1", status: "paused", auto_renews: false, cancel_at_period_end: true }, "status")
    refusesAt(Plans.PlanChange, { id: "sub_1", status: "active", auto_renews: false }, "cancel_at_period_end")
  })
})

// ---- Identity -----------------------------------------------------------------------------

describe("Identity", () => {
  const identity = {
    state: "ready", did: "did:svc:human:u_123", wallet_address: "0xabc", error: null,
    passkeys: 1, can_send: true, manage_url: "https://accounts.example/manage"
  }
  it("decodes an identity and refuses a DID of the wrong form", () => {
    accepts(Identity.Identity, identity)
    accepts(Identity.Identity, { ...identity, state: "provisioning", did: null, wallet_address: null, passkeys: 0, can_send: false })
    refusesAt(Identity.Identity, { ...identity, did: "did:svc:machine:u_123:a_1" }, "did")
    refusesAt(Identity.Identity, { ...identity, passkeys: -1 }, "passkeys")
    refusesAt(Identity.Identity, { ...identity, state: "unknown" }, "state")
  })
})

// ---- Agents -------------------------------------------------------------------------------

describe("Agents", () => {
  const awaiting = {
    id: "agt_1",
    name: "build-bot",
    status: "awaiting_approval",
    approval: { kind: "create", state: "pending", approve_url: "https://accounts.example/approve/ap_1" },
    capabilities: ["inference"],
    limits: null,
    proposed: {
      agent_name: "build-bot", capabilities: ["inference"], max_transaction_token: "", max_daily_token: "",
      daily_limit_credits: 100, total_limit_credits: null, expires_in_days: 30
    },
    did: null,
    wallet_address: null,
    serving: { nodes: 2, operators: 1 },
    error: null,
    created_at: T,
    approved_at: null,
    activated_at: null,
    expires_at: null,
    revoked_at: null
  }
  const active = {
    ...awaiting,
    status: "active",
    approval: null,
    capabilities: ["inference", "payments"],
    limits: {
      max_transaction_token: "0.5", max_daily_token: "2", daily_limit_credits: 100, total_limit_credits: null,
      expires_in_days: 30
    },
    proposed: null,
    did: "did:svc:machine:u_123:agt_1",
    wallet_address: "0xdef",
    approved_at: T,
    activated_at: T,
    expires_at: "2026-03-31T12:00:00.000Z",
    spend: { today_credits: 1.25, total_credits: 40 },
    network_key_held: true
  }

  it("decodes agents awaiting approval and active, and the proposal answer", () => {
    accepts(Agents.Agent, awaiting)
    accepts(Agents.Agent, active)
    accepts(Agents.AgentList, { data: [awaiting] })
    accepts(Agents.AgentProposalResponse, { approve_url: "https://accounts.example/approve/ap_1", agent: awaiting })
    refusesAt(Agents.Agent, { ...active, did: "did:svc:human:u_123" }, "did")
    refusesAt(Agents.Agent, { ...awaiting, status: "paused" }, "status")
    refusesAt(Agents.Agent, { ...awaiting, approval: { kind: "delete", state: "pending", approve_url: "x" } }, "approval", "kind")
  })

  it("lists the approval states", () => {
    for (const s of ["pending", "approved", "collected", "expired", "failed"]) accepts(Agents.ApprovalState, s)
    expect(failure(Agents.ApprovalState, "rejected")).toMatch(/pending/)
  })

  it("decodes a proposal body", () => {
    accepts(Agents.CreateAgent, { name: "build-bot" })
    accepts(Agents.CreateAgent, {
      name: "a.b_c-9", capabilities: ["inference", "payments"], max_transaction_token: "0.5", max_daily_token: "2",
      daily_limit_credits: 100, total_limit_credits: 1000, expires_in_days: 3650
    })
    accepts(Agents.CreateAgent, { name: "x".repeat(64), expires_in_days: 1 })
  })

  it("refuses names outside 1 to 64 lowercase letters, digits, dots, dashes, underscores", () => {
    expect(refusesAt(Agents.CreateAgent, { name: "BuildBot" }, "name")).toMatch(/lowercase/)
    refusesAt(Agents.CreateAgent, { name: "build bot" }, "name")
    refusesAt(Agents.CreateAgent, { name: "" }, "name")
    expect(refusesAt(Agents.CreateAgent, { name: "x".repeat(65) }, "name")).toMatch(/1 to 64/)
    refusesAt(Agents.CreateAgent, {}, "name")
    expect(failure(Agents.AgentName, "Ä")).toMatch(/lowercase/)
  })

  it("refuses expires_in_days outside 1 to 3650 and other bad settings", () => {
    expect(refusesAt(Agents.CreateAgent, { name: "a", expires_in_days: 0 }, "expires_in_days")).toMatch(/1 to 3650/)
    expect(refusesAt(Agents.CreateAgent, { name: "a", expires_in_days: 3651 }, "expires_in_days")).toMatch(/1 to 3650/)
    refusesAt(Agents.CreateAgent, { name: "a", expires_in_days: 1.5 }, "expires_in_days")
    refusesAt(Agents.CreateAgent, { name: "a", capabilities: ["admin"] }, "capabilities", 0)
    refusesAt(Agents.CreateAgent, { name: "a", capabilities: [] }, "capabilities")
    refusesAt(Agents.CreateAgent, { name: "a", capabilities: ["inference", "inference"] }, "capabilities")
    refusesAt(Agents.CreateAgent, { name: "a", max_transaction_token: "lots" }, "max_transaction_token")
    refusesAt(Agents.CreateAgent, { name: "a", max_daily_token: 2 }, "max_daily_token")
    refusesAt(Agents.CreateAgent, { name: "a", daily_limit_credits: -1 }, "daily_limit_credits")
  })

  it("decodes settings changes, which need at least one field and cannot rename", () => {
    accepts(Agents.AgentSettings, { expires_in_days: 90 })
    accepts(Agents.AgentSettings, { daily_limit_credits: null, max_transaction_token: "" })
    expect(failure(Agents.AgentSettings, {})).toMatch(/at least one setting/)
    refusesAt(Agents.AgentSettings, { expires_in_days: 0 }, "expires_in_days")
    expect(refusesAt(Agents.AgentSettings, { name: "other", expires_in_days: 30 }, "name")).toMatch(/name cannot change/)
  })

  it("decodes agent key bodies and refuses manage", () => {
    accepts(Agents.CreateAgentKey, { name: "ci" })
    accepts(Agents.CreateAgentKey, { name: "ci", machine_id: "m1", permissions: ["inference", "read", "datasets:read"] })
    expect(Agents.AgentKeyPermissionValues).not.toContain("manage")
    expect(refusesAt(Agents.CreateAgentKey, { name: "ci", permissions: ["inference", "manage"] }, "permissions", 1))
      .toMatch(/any but manage/)
    refusesAt(Agents.CreateAgentKey, { name: "" }, "name")
    refusesAt(Agents.CreateAgentKey, { permissions: ["inference"] }, "name")
  })
})

// ---- Inference ----------------------------------------------------------------------------

describe("Inference", () => {
  it("decodes a chat body with the OpenAI fields it takes", () => {
    accepts(Inference.ChatRequest, { model: "llama-3-8b", messages: [{ role: "user", content: "Hi" }] })
    accepts(Inference.ChatRequest, {
      model: "qwen-3",
      machine: "m1",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "Weather in Oslo?" }], name: "ann" },
        {
          role: "assistant", content: null,
          tool_calls: [{ id: "call_1", type: "function", function: { name: "weather", arguments: "{\"city\":\"Oslo\"}" } }]
        },
        { role: "tool", tool_call_id: "call_1", content: "4°C" }
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 256,
      temperature: 0.2,
      top_p: 1,
      stop: ["\n\n"],
      seed: 7,
      tools: [{ type: "function", function: { name: "weather", parameters: { type: "object", properties: {} } } }],
      tool_choice: "auto",
      enable_thinking: false,
      frequency_penalty: 0.5,
      response_format: { type: "json_object" },
      user: "u-1"
    })
    accepts(Inference.ChatRequest, {
      model: "m", messages: [{ role: "user", content: "x" }], temperature: null, stop: "END", max_tokens: null,
      tool_choice: { type: "function", function: { name: "weather" } }
    })
  })

  it("refuses malformed chat bodies", () => {
    refusesAt(Inference.ChatRequest, { messages: [{ role: "user", content: "x" }] }, "model")
    refusesAt(Inference.ChatRequest, { model: "m", messages: [] }, "messages")
    refusesAt(Inference.ChatRequest, { model: "m", messages: [{ role: "robot", content: "x" }] }, "messages", 0, "role")
    refusesAt(Inference.ChatRequest, { model: "m", messages: [{ role: "user", content: "x" }], temperature: 3 }, "temperature")
    refusesAt(Inference.ChatRequest, { model: "m", messages: [{ role: "user", content: "x" }], top_p: 1.5 }, "top_p")
    refusesAt(Inference.ChatRequest, { model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 0 }, "max_tokens")
    refusesAt(Inference.ChatRequest, { model: "m", messages: [{ role: "user", content: "x" }], stop: ["a", "b", "c", "d", "e"] }, "stop")
    refusesAt(Inference.ChatRequest, { model: "m", messages: [{ role: "user", content: "x" }], enable_thinking: "yes" }, "enable_thinking")
  })

  it("decodes embeddings bodies and answers", () => {
    accepts(Inference.EmbeddingRequest, { model: "bge-m3", input: "hello" })
    accepts(Inference.EmbeddingRequest, {
      model: "bge-m3", input: ["a", "b"], dimensions: 256, input_type: "query", encoding_format: "base64", machine: "m1"
    })
    accepts(Inference.EmbeddingRequest, { model: "bge-m3", input: Array.from({ length: 256 }, () => "t") })
    refusesAt(Inference.EmbeddingRequest, { model: "bge-m3", input: Array.from({ length: 257 }, () => "t") }, "input")
    refusesAt(Inference.EmbeddingRequest, { model: "bge-m3", input: [] }, "input")
    refusesAt(Inference.EmbeddingRequest, { model: "bge-m3", input: "x", input_type: "passage" }, "input_type")
    refusesAt(Inference.EmbeddingRequest, { model: "bge-m3", input: "x", dimensions: 0 }, "dimensions")
    refusesAt(Inference.EmbeddingRequest, { input: "x" }, "model")
    accepts(Inference.EmbeddingResponse, {
      object: "list", model: "bge-m3",
      data: [{ object: "embedding", index: 0, embedding: [0.6, 0.8] }],
      usage: { prompt_tokens: 2, total_tokens: 2 }
    })
  })

  it("decodes forecast bodies and answers", () => {
    accepts(Inference.ForecastRequest, { model: "chronos", history: [1, 2.5], horizon: 1 })
    accepts(Inference.ForecastRequest, {
      model: "chronos", history: [1, 2, 3, 4], horizon: 3, quantiles: [0.1, 0.5, 0.9], frequency_seconds: 3600, machine: "m1"
    })
    refusesAt(Inference.ForecastRequest, { model: "chronos", history: [1], horizon: 1 }, "history")
    refusesAt(Inference.ForecastRequest, { model: "chronos", history: [1, "2"], horizon: 1 }, "history", 1)
    refusesAt(Inference.ForecastRequest, { model: "chronos", history: [1, 2], horizon: 0 }, "horizon")
    refusesAt(Inference.ForecastRequest, { model: "chronos", history: [1, 2], horizon: 1, quantiles: [0] }, "quantiles", 0)
    refusesAt(Inference.ForecastRequest, { model: "chronos", history: [1, 2], horizon: 1, quantiles: [0.5, 1] }, "quantiles", 1)
    refusesAt(Inference.ForecastRequest, { model: "chronos", history: [1, 2], horizon: 1, frequency_seconds: 0 }, "frequency_seconds")
    accepts(Inference.ForecastResponse, {
      object: "forecast", model: "chronos", history_used: 4, point: [5, 6],
      quantile_levels: [0.1, 0.9], quantiles: [[4, 5], [6, 7]], generation_time_ms: null
    })
  })

  it("decodes image bodies and answers in OpenAI's shape", () => {
    accepts(Inference.ImageRequest, { model: "sdxl", prompt: "a lighthouse at dusk" })
    accepts(Inference.ImageRequest, { model: "sdxl", prompt: "p", n: 2, size: "1024x1024", response_format: "b64_json", seed: 1 })
    refusesAt(Inference.ImageRequest, { model: "sdxl" }, "prompt")
    refusesAt(Inference.ImageRequest, { model: "sdxl", prompt: "" }, "prompt")
    refusesAt(Inference.ImageRequest, { model: "sdxl", prompt: "p", n: 11 }, "n")
    expect(refusesAt(Inference.ImageRequest, { model: "sdxl", prompt: "p", response_format: "url" }, "response_format"))
      .toMatch(/never as URLs/)
    refusesAt(Inference.ImageRequest, { model: "sdxl", prompt: "p", size: "large" }, "size")
    accepts(Inference.ImageResponse, { created: 1772366400, data: [{ b64_json: "iVBORw0KGgo=" }] })
    refusesAt(Inference.ImageResponse, { created: 1772366400, data: [{ url: "https://x" }] }, "data", 0, "b64_json")
  })
})

// ---- Datasets and Fieldwork ---------------------------------------------------------------

describe("Datasets", () => {
  const dataset = {
    id: "ds_1", name: "Oslo voices", source: "fieldwork", kind: "audio", project_id: "fwp_1", items: 120, bytes: 48_000_000,
    created_at: T, updated_at: T
  }
  it("decodes datasets and the bodies", () => {
    accepts(Datasets.DatasetList, { data: [dataset] })
    accepts(Datasets.CreateDataset, { name: "notes", kind: "text" })
    accepts(Datasets.DatasetDeleted, { id: "ds_1", deleted: true })
  })
  it("refuses bad values", () => {
    refusesAt(Datasets.Dataset, { ...dataset, source: "s3" }, "source")
    refusesAt(Datasets.Dataset, { ...dataset, items: -0.5 }, "items")
    refusesAt(Datasets.CreateDataset, { name: "", kind: "text" }, "name")
    refusesAt(Datasets.CreateDataset, { name: "notes", kind: "pdf" }, "kind")
  })
})

describe("Fieldwork", () => {
  it("decodes the project and the challenge", () => {
    accepts(Fieldwork.IngestProject, {
      id: "prj_1",
      name: "Oslo voices",
      data_type: "audio",
      prompts: [{ id: "p1", text: "Read: the quick brown fox." }],
      capture: {
        content_type: "audio/wav", channels: 1, bits_per_sample: 16, sample_rate_hz: 16000,
        max_bytes: Fieldwork.MAX_TAKE_BYTES, min_seconds: 1, max_seconds: 30
      },
      limits: { takes_per_prompt: 1, takes_per_participant: 50, participants_per_device: 1 },
      questions: [{ id: "q1", text: "Native language?", kind: "choice", options: ["no", "en"], required: true }],
      consent: {
        version: "2026-03-01",
        text: "Your recordings are used to train speech models.",
        scopes: [{ id: "recording", label: "Store my recordings", required: true }]
      },
      endpoints: [{ method: "POST", path: "/ingest/items" }]
    })
    accepts(Fieldwork.Challenge, { challenge: "c_abc", algorithm: "sha256", difficulty: 18, expires_at: T })
  })

  it("decodes and checks a new participant", () => {
    const body = { country: "NO", region: "Oslo", dob: "1990-04-30", answers: { q1: "no", q2: 3 }, challenge: "c_abc", nonce: "81723" }
    accepts(Fieldwork.CreateParticipant, body)
    refusesAt(Fieldwork.CreateParticipant, { ...body, country: "no" }, "country")
    refusesAt(Fieldwork.CreateParticipant, { ...body, dob: "1990-02-30" }, "dob")
    refusesAt(Fieldwork.CreateParticipant, { ...body, answers: { q1: { nested: true } } }, "answers", "q1")
    refusesAt(Fieldwork.CreateParticipant, { ...body, nonce: "" }, "nonce")
    accepts(Fieldwork.ParticipantCreated, { participant_id: "par_1", token: "pt_secret" })
    accepts(Fieldwork.DeviceId, "device_0123456789")
    expect(failure(Fieldwork.DeviceId, "short")).toMatch(/16 to 64/)
    expect(failure(Fieldwork.DeviceId, "x".repeat(65))).toMatch(/16 to 64/)
    accepts(Fieldwork.ContentSha256, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    expect(failure(Fieldwork.ContentSha256, "abc")).toMatch(/SHA-256/)
  })

  it("decodes the participant, consent, takes and withdrawal", () => {
    accepts(Fieldwork.Participant, {
      id: "par_1",
      state: "active",
      consent: { version: "2026-03-01", given: { recording: true }, given_at: T, current: true },
      prompts: [{ id: "p1", text: "Read: the quick brown fox.", takes: 0, remaining: 1 }],
      created_at: T
    })
    accepts(Fieldwork.GiveConsent, { given: { recording: true, publication: true } })
    expect(failure(Fieldwork.GiveConsent, { given: {} })).toMatch(/at least one consent scope/)
    refusesAt(Fieldwork.GiveConsent, { given: { recording: false } }, "given", "recording")
    accepts(Fieldwork.TakeMeta, { capture: { sample_rate: 48000, device: "phone" }, answers: { noise: "low" } })
    accepts(Fieldwork.TakeList, {
      data: [{
        id: "tk_1", prompt_id: "p1", status: "pending_review", bytes: 320_044, duration_ms: 10_000,
        sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", created_at: T,
        reviewed_at: null, review_note: null
      }]
    })
    accepts(Fieldwork.ParticipantWithdrawn, { withdrawn: true, deleted_takes: 3 })
    refusesAt(Fieldwork.Participant, {
      id: "par_1", state: "sleeping", consent: { version: null, given: {}, given_at: null, current: false },
      prompts: [], created_at: T
    }, "state")
  })
})
