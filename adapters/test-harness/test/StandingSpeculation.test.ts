/**
 * A key with something behind it (here a plan) has its standing read at every call
 * (gateway/KeyStanding.ts). For a key admitted lately, the gateway calls the machine of the key's
 * last standing while that read runs (docs/gateway.md "Admission in one store step"), so the read
 * is off the answer's path. The read still decides: a plan that ended since the last call refuses
 * the call, and the request already sent to the machine is aborted. So is one whose client leaves
 * while the call's admission is being written: its answer is never read to its end.
 */
import { ApiKeysLive } from "@model-platform/core/http"
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { Catalogue } from "@model-platform/core/catalogue"
import { Gateway, GatewayStore, MachineClient } from "@model-platform/core/gateway"
import { Ledger } from "@model-platform/core/ledger"
import { PlanStore } from "@model-platform/core/plans"
import { Deferred, Effect, Fiber, Layer, ManagedRuntime, Stream } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { call, healthy, planCatalogue } from "./gatewayStub.ts"

const HOUR = 3_600_000
const catalogue = planCatalogue()
const chat = { model: "chat", messages: [{ role: "user", content: "hi" }] }

/** What the test controls: the plan read held until released, the plan seen as ended, the machine held. */
interface Controls {
  planRead: Deferred.Deferred<void> | undefined
  planEnded: boolean
  machineHeld: Deferred.Deferred<void> | undefined
  /** The admission store step held until released. */
  admitHeld: Deferred.Deferred<void> | undefined
  /** The machine answers with a body that never ends; how many of those bodies were closed. */
  endless: boolean
  bodiesClosed: number
  requests: number
  interrupted: number
}

const gatewayWith = (controls: Controls) => {
  const plans = Layer.effect(PlanStore, Effect.map(PlanStore, (store) => PlanStore.of({
    ...store,
    subscription: (id) =>
      Effect.gen(function*() {
        if (controls.planRead !== undefined) yield* Deferred.await(controls.planRead)
        const record = yield* store.subscription(id)
        return record !== undefined && controls.planEnded
          ? {
            ...record,
            cancel_at_period_end: true,
            current_period_start: new Date(Date.now() - 3 * HOUR).toISOString(),
            current_period_end: new Date(Date.now() - 2 * HOUR).toISOString()
          }
          : record
      })
  })))
  const admissions = Layer.effect(GatewayStore, Effect.map(GatewayStore, (store) => GatewayStore.of({
    ...store,
    admit: (batch) =>
      Effect.andThen(controls.admitHeld === undefined ? Effect.void : Deferred.await(controls.admitHeld), store.admit(batch))
  })))
  const machine = Layer.succeed(MachineClient, MachineClient.of({
    models: () => Effect.succeed(["chat", "embed", "forecast"]),
    post: (_machine, path, body) =>
      Effect.gen(function*() {
        controls.requests += 1
        if (controls.machineHeld !== undefined) yield* Deferred.await(controls.machineHeld)
        const answer = healthy(path, body as Record<string, unknown>)
        if (!controls.endless) return answer
        return {
          ...answer,
          body: Stream.concat(answer.body, Stream.never).pipe(Stream.ensuring(Effect.sync(() => void (controls.bodiesClosed += 1))))
        }
      }).pipe(Effect.onInterrupt(() => Effect.sync(() => void (controls.interrupted += 1))))
  }))
  return ManagedRuntime.make(
    Gateway.layer({ keepAliveMs: 10 }).pipe(
      Layer.provideMerge(Layer.mergeAll(Ledger.layer, ApiKeysLive, machine)),
      Layer.provideMerge(Catalogue.layer(catalogue)),
      Layer.provideMerge(Layer.mergeAll(
        MemoryPlatformStores,
        plans.pipe(Layer.provide(MemoryPlatformStores)),
        admissions.pipe(Layer.provide(MemoryPlatformStores))
      ))
    )
  )
}

/** A key scoped to an active plan; its Authorization header. */
const planKey = Effect.gen(function*() {
  const id = `acct_${Math.random().toString(36).slice(2)}`
  yield* (yield* AccountStore).insert({ id, email: `${id}@test.local`, created_at: new Date().toISOString() })
  const start = new Date(Date.now() - HOUR).toISOString()
  yield* (yield* PlanStore).insertSubscription({
    id: `sub_${id}`, account_id: id, order_id: `ord_${id}`, machine_id: "only", created_at: start, plan_id: "p",
    paid_with: "card", auto_renews: false, cancel_at_period_end: true, current_period_start: start,
    current_period_end: new Date(Date.now() + HOUR).toISOString(), card_reference: null, renewal_error: null
  })
  const key = yield* (yield* ApiKeys).issue(id, { name: "plan", permissions: ["inference"], machine_id: null, subscription_id: `sub_${id}` })
  return `Bearer ${key.secret}`
})

/** Waits (up to 2 s) until `check` holds. */
const until = (check: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !check(); i++) yield* Effect.sleep(10)
    return check()
  })

let runtime: ReturnType<typeof gatewayWith> | undefined
afterEach(async () => {
  await runtime?.dispose()
  runtime = undefined
})

/** A gateway over fresh controls: nothing held, the plan ended or not. */
const start = (planEnded = false) => {
  const controls: Controls = {
    planRead: undefined,
    planEnded,
    machineHeld: undefined,
    admitHeld: undefined,
    endless: false,
    bodiesClosed: 0,
    requests: 0,
    interrupted: 0
  }
  runtime = gatewayWith(controls)
  return { controls, gateway: runtime }
}

describe("the standing of a key admitted lately is read while its machine is called", () => {
  it("the machine has the request before the plan's read answers; the call is answered once it does", async () => {
    const { controls, gateway } = start()
    const result = await gateway.runPromise(Effect.gen(function*() {
      const auth = yield* planKey
      expect((yield* call("/v1/chat/completions", auth, chat)).status).toBe(200)
      controls.planRead = yield* Deferred.make<void>()
      const second = yield* Effect.forkChild(call("/v1/chat/completions", auth, chat))
      const sentWhileReading = yield* until(() => controls.requests === 2)
      yield* Deferred.succeed(controls.planRead, undefined)
      return { sentWhileReading, answer: yield* Fiber.join(second) }
    }))
    expect(result.sentWhileReading).toBe(true)
    expect(result.answer.status).toBe(200)
  })

  it("a plan that ended since the last call: 403 subscription_inactive, the request sent meanwhile aborted, and no more sent", async () => {
    const { controls, gateway } = start()
    const answer = await gateway.runPromise(Effect.gen(function*() {
      const auth = yield* planKey
      expect((yield* call("/v1/chat/completions", auth, chat)).status).toBe(200)
      controls.planEnded = true
      controls.planRead = yield* Deferred.make<void>()
      controls.machineHeld = yield* Deferred.make<void>()
      const second = yield* Effect.forkChild(call("/v1/chat/completions", auth, chat))
      expect(yield* until(() => controls.requests === 2)).toBe(true)
      yield* Deferred.succeed(controls.planRead, undefined)
      const refused = yield* Fiber.join(second)
      expect(yield* until(() => controls.interrupted === 1)).toBe(true)
      // Once refused, the key is not speculated for: its next call sends nothing while read.
      controls.planRead = yield* Deferred.make<void>()
      const third = yield* Effect.forkChild(call("/v1/chat/completions", auth, chat))
      yield* Effect.sleep(100)
      expect(controls.requests).toBe(2)
      yield* Deferred.succeed(controls.planRead, undefined)
      expect((yield* Fiber.join(third)).status).toBe(403)
      expect(controls.requests).toBe(2)
      return refused
    }))
    expect([answer.status, JSON.parse(answer.text).error.code]).toEqual([403, "subscription_inactive"])
  })

  it("a client leaving while its admission is written: the answer sent meanwhile is aborted, not left unread", async () => {
    const { controls, gateway } = start()
    await gateway.runPromise(Effect.gen(function*() {
      const auth = yield* planKey
      expect((yield* call("/v1/chat/completions", auth, chat)).status).toBe(200)
      controls.admitHeld = yield* Deferred.make<void>()
      controls.endless = true
      const second = yield* Effect.forkChild(call("/v1/chat/completions", auth, { ...chat, stream: true }))
      // The machine has answered (its head is in) while admission is written; the client leaves.
      expect(yield* until(() => controls.requests === 2)).toBe(true)
      const leaving = yield* Effect.forkChild(Fiber.interrupt(second))
      yield* Effect.sleep(20)
      yield* Deferred.succeed(controls.admitHeld, undefined)
      yield* Fiber.join(leaving)
      // Its body was begun and closed (the machine's socket closed), not left for no one to read.
      expect(yield* until(() => controls.bodiesClosed === 1)).toBe(true)
      yield* (yield* Gateway).idle
    }))
  })

  it("a key's first call reads its standing before anything is sent", async () => {
    const { controls, gateway } = start(true)
    const answer = await gateway.runPromise(Effect.flatMap(planKey, (auth) => call("/v1/chat/completions", auth, chat)))
    expect([answer.status, JSON.parse(answer.text).error.code]).toEqual([403, "subscription_inactive"])
    expect(controls.requests).toBe(0)
  })
})
