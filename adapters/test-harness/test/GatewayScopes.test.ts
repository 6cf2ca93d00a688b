/**
 * Keys scoped to a plan or a rental at the gateway (docs/plans.md "Keys scoped to a plan or a
 * rental"): while the plan is active, its key calls the plan's models on the plan's machine; a
 * model outside the plan is 403 model_not_in_plan; once the plan's period has ended, 403
 * subscription_inactive (a plan that renews by itself: once its renewal's grace has passed too); a
 * rental's key calls while the rental runs, then 403 rental_ended.
 */
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { PlanStore, RENEWAL_GRACE_MS } from "@model-platform/core/plans"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, planCatalogue, startStubGateway } from "./gatewayStub.ts"

const HOUR = 3_600_000
const catalogue = planCatalogue()

let runtime: ReturnType<typeof startStubGateway>
const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect as Effect.Effect<A, E, never>)
beforeAll(() => {
  runtime = startStubGateway(undefined, catalogue)
})
afterAll(async () => {
  await runtime.dispose()
})

/** An account with a plan (or a rental) ending at `endsAt` and a key scoped to it; its Authorization header. */
const scopedKey = (scope: "plan" | "rental", endsAt: number, autoRenews = false) =>
  Effect.gen(function*() {
    const id = `acct_${Math.random().toString(36).slice(2)}`
    yield* (yield* AccountStore).insert({ id, email: `${id}@test.local`, created_at: new Date().toISOString() })
    const plans = yield* PlanStore
    const start = new Date(endsAt - 2 * HOUR).toISOString()
    const end = new Date(endsAt).toISOString()
    const recordId = `${scope}_${Math.random().toString(36).slice(2)}`
    const common = { id: recordId, account_id: id, order_id: `ord_${recordId}`, machine_id: "only", created_at: start }
    if (scope === "plan") {
      yield* plans.insertSubscription({
        ...common, plan_id: "p", paid_with: "card", auto_renews: autoRenews, cancel_at_period_end: !autoRenews,
        current_period_start: start, current_period_end: end, card_reference: null, renewal_error: null
      })
    } else {
      yield* plans.insertRental({ ...common, cpu_cores: 1, memory_gb: 1, gpu: 0, storage_gb: 0, hours: 2, starts_at: start, ends_at: end })
    }
    const key = yield* (yield* ApiKeys).issue(id, {
      name: "scoped",
      permissions: ["inference"],
      machine_id: null,
      ...(scope === "plan" ? { subscription_id: recordId } : { rental_id: recordId })
    })
    return `Bearer ${key.secret}`
  })

const chat = { model: "chat", messages: [{ role: "user", content: "hi" }] }
const codeOf = (text: string) => JSON.parse(text).error?.code

describe("keys scoped to a plan or a rental, at the gateway", () => {
  it("an active plan's key calls the plan's models; another model is 403 model_not_in_plan", async () => {
    const auth = await run(scopedKey("plan", Date.now() + HOUR))
    expect((await run(call("/v1/chat/completions", auth, chat))).status).toBe(200)
    const embed = await run(call("/v1/embeddings", auth, { model: "embed", input: "x" }))
    expect([embed.status, codeOf(embed.text)]).toEqual([403, "model_not_in_plan"])
  })

  it("once the plan's period has ended: 403 subscription_inactive", async () => {
    const auth = await run(scopedKey("plan", Date.now() - 1))
    const answer = await run(call("/v1/chat/completions", auth, chat))
    expect([answer.status, codeOf(answer.text)]).toEqual([403, "subscription_inactive"])
  })

  it("a plan that renews by itself calls on while its renewal is charged, and stops once the grace has passed", async () => {
    const renewing = await run(scopedKey("plan", Date.now() - 1, true))
    expect((await run(call("/v1/chat/completions", renewing, chat))).status).toBe(200)
    const lapsed = await run(scopedKey("plan", Date.now() - RENEWAL_GRACE_MS - 1, true))
    const answer = await run(call("/v1/chat/completions", lapsed, chat))
    expect([answer.status, codeOf(answer.text)]).toEqual([403, "subscription_inactive"])
  })

  it("a running rental's key calls its machine; an ended rental's: 403 rental_ended", async () => {
    const running = await run(scopedKey("rental", Date.now() + HOUR))
    expect((await run(call("/v1/embeddings", running, { model: "embed", input: "x" }))).status).toBe(200)
    const ended = await run(scopedKey("rental", Date.now() - 1))
    const answer = await run(call("/v1/chat/completions", ended, chat))
    expect([answer.status, codeOf(answer.text)]).toEqual([403, "rental_ended"])
  })
})
