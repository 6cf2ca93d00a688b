/**
 * A simulated stablecoin chain in memory (docs/payments.md), for tests: the `"simulated"` rail of
 * the catalogue. It provides
 * - `StablecoinRail` (core's `layerSimulated`: a random 20-byte address per order), and
 * - `SimulatedChain`: `send` puts a transfer on the chain (a fresh tx hash, the Clock's time unless
 *   given) and returns it; `transfers` lists them in order. Nothing is delivered by itself: a test
 *   (or the node adapter's command) hands a transfer to `Orders.recordDeposit`, as a chain watcher
 *   would, as many times as it likes — `sendAndRecord` does both.
 */
import { Context, Effect, Layer, Ref } from "effect"
import { randomBytes, Time } from "@model-platform/core/kernel"
import { type DepositResult, type OrderErrorOf, Orders, StablecoinRail, type Transfer } from "@model-platform/core/payments"

export interface SendInput {
  readonly chain: string
  readonly token: string
  readonly to: string
  /** Exact decimal string in token units, e.g. "25.000000". */
  readonly amount: string
  /** Chain time; the Clock's now when absent. */
  readonly at?: Time.Timestamp | undefined
}

export class SimulatedChain extends Context.Service<SimulatedChain, {
  readonly send: (input: SendInput) => Effect.Effect<Transfer>
  readonly transfers: Effect.Effect<ReadonlyArray<Transfer>>
}>()("@model-platform/test-harness/SimulatedChain") {
  /** The chain and the simulated rail, with an empty chain. */
  static readonly layer: Layer.Layer<SimulatedChain | StablecoinRail> = Layer.merge(
    Layer.effect(
      SimulatedChain,
      Effect.gen(function*() {
        const log = yield* Ref.make<ReadonlyArray<Transfer>>([])
        const send = Effect.fnUntraced(function*(input: SendInput) {
          const bytes = yield* randomBytes(32)
          const transfer: Transfer = {
            tx: "0x" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""),
            chain: input.chain,
            token: input.token,
            to: input.to,
            amount: input.amount,
            at: input.at ?? (yield* Time.now)
          }
          yield* Ref.update(log, (transfers) => [...transfers, transfer])
          return transfer
        })
        return SimulatedChain.of({ send, transfers: Ref.get(log) })
      })
    ),
    StablecoinRail.layerSimulated
  )
}

/** Sends a transfer on the simulated chain and hands it to the platform once. */
export const sendAndRecord = (
  input: SendInput
): Effect.Effect<{ readonly transfer: Transfer; readonly result: DepositResult }, OrderErrorOf<"invalid_transfer">, SimulatedChain | Orders> =>
  Effect.gen(function*() {
    const transfer = yield* (yield* SimulatedChain).send(input)
    const result = yield* (yield* Orders).recordDeposit(transfer)
    return { transfer, result }
  })
