/**
 * The machine health checker (core/src/gateway/HealthChecker.ts) against a fake MachineClient
 * whose machines are switched up, down, hanging, slow or serving other models, with TestClock
 * moving time: the first round runs at once, a machine going down is offline after the next
 * round and online again after the one following its return, and the catalogue (/machines,
 * /route, /models/{id}) shows it. Then observedState's table, by example and as properties.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Ref } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { Catalogue, MachineStatus } from "@model-platform/core/catalogue"
import { HealthChecker, MachineClient, MachineFailure, observedState, type Probe } from "@model-platform/core/gateway"
import { fixtureCatalogue } from "../src/Fixtures.ts"

const config = fixtureCatalogue
const INTERVAL = 5_000
const TIMEOUT = 2_000

// ---------------------------------------------------------------------------------------------
// a fake fleet

type Behaviour =
  | { readonly _tag: "Up"; readonly models: ReadonlyArray<string>; readonly delayMs?: number }
  | { readonly _tag: "Down" }
  | { readonly _tag: "Hang" }

const up = (models: ReadonlyArray<string>, delayMs = 0): Behaviour => ({ _tag: "Up", models, delayMs })
const down: Behaviour = { _tag: "Down" }
const hang: Behaviour = { _tag: "Hang" }

/** Every machine serving its catalogue models. */
const allUp = () => new Map(config.machines.map((m) => [m.id, up(m.serverless_models)]))

interface FleetShape {
  readonly set: (machineId: string, behaviour: Behaviour) => Effect.Effect<void>
  /** How many times the machine was asked for its models. */
  readonly calls: (machineId: string) => Effect.Effect<number>
  readonly behaviours: Ref.Ref<ReadonlyMap<string, Behaviour>>
  readonly callCounter: Ref.Ref<ReadonlyMap<string, number>>
}

class Fleet extends Context.Service<Fleet, FleetShape>()("test/Fleet") {
  static readonly layer = Layer.effect(
    Fleet,
    Effect.gen(function*() {
      const behaviours = yield* Ref.make<ReadonlyMap<string, Behaviour>>(allUp())
      const callCounter = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
      return Fleet.of({
        set: (machineId, behaviour) => Ref.update(behaviours, (map) => new Map(map).set(machineId, behaviour)),
        calls: (machineId) => Effect.map(Ref.get(callCounter), (map) => map.get(machineId) ?? 0),
        behaviours,
        callCounter
      })
    })
  )
}

const FakeClient = Layer.effect(
  MachineClient,
  Effect.gen(function*() {
    const fleet = yield* Fleet
    return MachineClient.of({
      post: () => Effect.die(new Error("the health checker never posts")),
      models: (machine) =>
        Effect.gen(function*() {
          yield* Ref.update(fleet.callCounter, (map) => new Map(map).set(machine.id, (map.get(machine.id) ?? 0) + 1))
          const behaviour = (yield* Ref.get(fleet.behaviours)).get(machine.id) ?? down
          switch (behaviour._tag) {
            case "Down":
              return yield* new MachineFailure({ machine_id: machine.id, reason: "unreachable", message: "connection refused" })
            case "Hang":
              return yield* Effect.never
            case "Up":
              if ((behaviour.delayMs ?? 0) > 0) yield* Effect.sleep(behaviour.delayMs ?? 0)
              return behaviour.models
          }
        })
    })
  })
)

/** The checker (with or without its loop), the catalogue reading the same status, the fleet. */
const world = (checker: typeof HealthChecker.layer) =>
  Layer.mergeAll(checker(config, { intervalMs: INTERVAL, timeoutMs: TIMEOUT }), Catalogue.layerWithStatus(config)).pipe(
    Layer.provideMerge(MachineStatus.layerMemory(config)),
    Layer.provideMerge(FakeClient),
    Layer.provideMerge(Fleet.layer)
  )

const Polling = world(HealthChecker.layer)
const Manual = world(HealthChecker.layerManual)

/** Lets forked fibers run without moving time. */
const settle = TestClock.adjust(0)

const stateOf = (machineId: string) =>
  Effect.gen(function*() {
    const status = yield* MachineStatus
    return yield* status.get(machineId)
  })

const machineView = (machineId: string) =>
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const machine = (yield* catalogue.machines({})).find((m) => m.id === machineId)
    return { health: machine?.health, serving_now: machine?.services.serverless.serving_now }
  })

const routeIds = (model: string) =>
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    return (yield* catalogue.routes(model)).map((r) => `${r.machine_id}:${r.health}`)
  })

// ---------------------------------------------------------------------------------------------

describe("HealthChecker with its polling loop", () => {
  it.effect("the first round runs at once: a machine the catalogue starts offline is online when it answers", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* stateOf("m-eu-c"), { health: "offline", serving_now: [] })
      yield* Effect.gen(function*() {
        yield* settle
        assert.deepStrictEqual(yield* stateOf("m-eu-c"), { health: "online", serving_now: ["chat-small"] })
        assert.deepStrictEqual(yield* stateOf("m-eu-a"), { health: "online", serving_now: ["chat-small", "embed-small"] })
        // a machine with no serverless models that answers is online, serving nothing
        assert.deepStrictEqual(yield* stateOf("m-idle"), { health: "online", serving_now: [] })
      }).pipe(Effect.provide(HealthChecker.layer(config, { intervalMs: INTERVAL, timeoutMs: TIMEOUT })))
    }).pipe(Effect.provide(world(HealthChecker.layerManual))))

  it.effect("a machine going down is offline after the next round, and online after the round that sees it back; the catalogue follows", () =>
    Effect.gen(function*() {
      const fleet = yield* Fleet
      yield* settle
      assert.deepStrictEqual(yield* routeIds("chat-small"), ["m-eu-c:online", "m-eu-a:online", "m-us-b:online"])
      assert.isTrue((yield* (yield* Catalogue).model("embed-small")).available)

      yield* fleet.set("m-eu-a", down)
      yield* TestClock.adjust(INTERVAL - 1)
      assert.strictEqual((yield* stateOf("m-eu-a")).health, "online", "not before the next round")
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* machineView("m-eu-a"), { health: "offline", serving_now: [] })
      assert.deepStrictEqual(yield* routeIds("chat-small"), ["m-eu-c:online", "m-us-b:online", "m-eu-a:offline"])
      const embed = yield* (yield* Catalogue).model("embed-small")
      assert.isFalse(embed.available)
      assert.deepStrictEqual(embed.routes.map((r) => `${r.machine_id}:${r.health}`), ["m-eu-a:offline"])

      yield* fleet.set("m-eu-a", up(["chat-small", "embed-small"]))
      yield* TestClock.adjust(INTERVAL)
      assert.deepStrictEqual(yield* machineView("m-eu-a"), { health: "online", serving_now: ["chat-small", "embed-small"] })
      assert.deepStrictEqual(yield* routeIds("chat-small"), ["m-eu-c:online", "m-eu-a:online", "m-us-b:online"])
      assert.isTrue((yield* (yield* Catalogue).model("embed-small")).available)
    }).pipe(Effect.provide(Polling)))

  it.effect("a machine that does not answer in time is offline when its timeout passes; rounds never overlap", () =>
    Effect.gen(function*() {
      const fleet = yield* Fleet
      yield* settle
      yield* fleet.set("m-us-b", hang)
      yield* TestClock.adjust(INTERVAL) // round 2 starts, m-us-b hangs
      assert.strictEqual((yield* stateOf("m-us-b")).health, "online")
      yield* TestClock.adjust(TIMEOUT)
      assert.deepStrictEqual(yield* stateOf("m-us-b"), { health: "offline", serving_now: [] })
      // the next round starts INTERVAL after this one ended, not INTERVAL after it began
      assert.strictEqual(yield* fleet.calls("m-eu-a"), 2)
      yield* TestClock.adjust(INTERVAL - 1)
      assert.strictEqual(yield* fleet.calls("m-eu-a"), 2)
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* fleet.calls("m-eu-a"), 3)
    }).pipe(Effect.provide(Polling)))

  it.effect("polls every machine once per round, in parallel", () =>
    Effect.gen(function*() {
      const fleet = yield* Fleet
      // slow answers on every machine: a sequential round would take 4 x 500 ms
      for (const m of config.machines) yield* fleet.set(m.id, up(m.serverless_models, 500))
      yield* settle
      yield* TestClock.adjust(500)
      for (const m of config.machines) assert.strictEqual((yield* stateOf(m.id)).health, "online", m.id)
      yield* TestClock.adjust(3 * (INTERVAL + 500))
      for (const m of config.machines) assert.strictEqual(yield* fleet.calls(m.id), 4, m.id)
    }).pipe(Effect.provide(Polling)))

  it.effect("reportFailure probes the machine at once, once at a time", () =>
    Effect.gen(function*() {
      const fleet = yield* Fleet
      const checker = yield* HealthChecker
      yield* settle
      yield* fleet.set("m-eu-a", down)
      yield* checker.reportFailure("m-eu-a")
      yield* settle
      assert.strictEqual((yield* stateOf("m-eu-a")).health, "offline", "well before the next round")
      // a report while a probe of the machine runs starts no second one
      yield* fleet.set("m-us-b", hang)
      const before = yield* fleet.calls("m-us-b")
      yield* checker.reportFailure("m-us-b")
      yield* settle
      yield* checker.reportFailure("m-us-b")
      yield* checker.reportFailure("m-us-b")
      yield* settle
      assert.strictEqual(yield* fleet.calls("m-us-b"), before + 1)
      yield* TestClock.adjust(TIMEOUT)
      assert.strictEqual((yield* stateOf("m-us-b")).health, "offline")
      // a failed call on a healthy machine changes nothing: the probe decides
      yield* checker.reportFailure("m-eu-c")
      yield* settle
      assert.strictEqual((yield* stateOf("m-eu-c")).health, "online")
      // an unknown machine is ignored
      yield* checker.reportFailure("m-nope")
    }).pipe(Effect.provide(Polling)))

  it.effect("the loop stops with its layer", () =>
    Effect.gen(function*() {
      const fleet = yield* Fleet
      yield* Effect.gen(function*() {
        yield* settle
        yield* TestClock.adjust(INTERVAL)
      }).pipe(Effect.provide(HealthChecker.layer(config, { intervalMs: INTERVAL, timeoutMs: TIMEOUT })))
      const calls = yield* fleet.calls("m-eu-a")
      assert.strictEqual(calls, 2)
      yield* TestClock.adjust(10 * INTERVAL)
      assert.strictEqual(yield* fleet.calls("m-eu-a"), calls)
    }).pipe(Effect.provide(world(HealthChecker.layerManual))))
})

describe("HealthChecker rounds on demand", () => {
  it.effect("degraded: answers, but serves none of its models (or answers slowly); serving_now keeps the catalogue's models only", () =>
    Effect.gen(function*() {
      const fleet = yield* Fleet
      const checker = yield* HealthChecker
      yield* fleet.set("m-eu-a", up(["something-else"]))
      yield* fleet.set("m-us-b", up(["chat-small"], 1_500))
      yield* fleet.set("m-eu-c", up(["extra-model", "chat-small", "embed-small"]))
      yield* Effect.forkChild(checker.checkAll)
      yield* TestClock.adjust(1_500)
      assert.deepStrictEqual(yield* stateOf("m-eu-a"), { health: "degraded", serving_now: [] })
      assert.deepStrictEqual(yield* stateOf("m-us-b"), { health: "degraded", serving_now: ["chat-small"] })
      assert.deepStrictEqual(yield* stateOf("m-eu-c"), { health: "online", serving_now: ["chat-small"] })
      // the router: online first, then degraded and serving, then not serving
      assert.deepStrictEqual(yield* routeIds("chat-small"), ["m-eu-c:online", "m-us-b:degraded", "m-eu-a:degraded"])
      assert.isFalse((yield* (yield* Catalogue).model("embed-small")).available)
    }).pipe(Effect.provide(Manual)))

  it.effect("check probes one machine and answers the state it wrote", () =>
    Effect.gen(function*() {
      const fleet = yield* Fleet
      const checker = yield* HealthChecker
      yield* fleet.set("m-eu-a", up(["embed-small"]))
      assert.deepStrictEqual(yield* checker.check("m-eu-a"), { health: "online", serving_now: ["embed-small"] })
      assert.strictEqual(yield* fleet.calls("m-us-b"), 0)
      assert.isUndefined(yield* checker.check("m-nope"))
    }).pipe(Effect.provide(Manual)))
})

describe("observedState", () => {
  const machine = { serverless_models: ["a", "b", "c"] }
  const answered = (models: ReadonlyArray<string>, elapsedMs = 10): Probe => ({ _tag: "Answered", models, elapsedMs })

  it("follows the table", () => {
    assert.deepStrictEqual(observedState(machine, { _tag: "NoAnswer", reason: "x" }), { health: "offline", serving_now: [] })
    assert.deepStrictEqual(observedState(machine, answered([])), { health: "degraded", serving_now: [] })
    assert.deepStrictEqual(observedState(machine, answered(["z"])), { health: "degraded", serving_now: [] })
    assert.deepStrictEqual(observedState(machine, answered(["c", "a"])), { health: "online", serving_now: ["a", "c"] })
    assert.deepStrictEqual(observedState(machine, answered(["b"], 1_001), 1_000), { health: "degraded", serving_now: ["b"] })
    assert.deepStrictEqual(observedState(machine, answered(["b"], 1_000), 1_000), { health: "online", serving_now: ["b"] })
    assert.deepStrictEqual(observedState({ serverless_models: [] }, answered([])), { health: "online", serving_now: [] })
  })

  it("properties: serving_now is the configured models listed, in catalogue order; offline exactly when there was no answer", () => {
    const names = fc.constantFrom("a", "b", "c", "d", "e")
    fc.assert(
      fc.property(
        fc.uniqueArray(names),
        fc.option(fc.record({ models: fc.array(names), elapsedMs: fc.nat({ max: 3_000 }) }), { nil: undefined }),
        (configured, answer) => {
          const probe: Probe = answer === undefined ? { _tag: "NoAnswer", reason: "down" } : { _tag: "Answered", ...answer }
          const state = observedState({ serverless_models: configured }, probe, 1_000)
          assert.strictEqual(state.health === "offline", answer === undefined)
          const expected = answer === undefined ? [] : configured.filter((m) => answer.models.includes(m))
          assert.deepStrictEqual(state.serving_now, expected)
          if (state.health === "online") assert.isTrue(configured.length === 0 || expected.length > 0)
        }
      )
    )
  })
})
