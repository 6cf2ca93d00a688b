/**
 * The `"evm"` stablecoin rail (core/src/payments/StablecoinRail.ts): each order's deposit address is
 * derived from the chain's extended public key (Addresses.ts) at the key's next index, which the
 * store hands out once (DepositWatchStore.allocateIndex), and the address is kept with its order
 * and index, so the watcher watches it and the operator can sweep it. No memo: an EVM address says
 * whom a transfer is for.
 */
import { Effect, Layer } from "effect"
import { DepositWatchStore, StablecoinRail } from "@model-platform/core/payments"
import { Time } from "@model-platform/core/kernel"
import type { DepositKey } from "./Addresses.ts"

export const EVM_PROCESSOR = "evm"

/** The rail over the deposit key of each chain (by the catalogue's chain name). */
export const layer = (keys: ReadonlyMap<string, DepositKey>): Layer.Layer<StablecoinRail, never, DepositWatchStore> =>
  Layer.effect(
    StablecoinRail,
    Effect.gen(function*() {
      const store = yield* DepositWatchStore
      return StablecoinRail.of({
        processor: EVM_PROCESSOR,
        depositAddress: Effect.fn("EvmRail.depositAddress")(function*(orderId: string, chain: string, token: string) {
          const key = keys.get(chain)
          // Orders only asks for the catalogue's options, and the shell made a key for each chain.
          if (key === undefined) return yield* Effect.die(new Error(`EvmRail: no deposit key for chain ${chain}`))
          const index = yield* store.allocateIndex(key.keyId)
          const address = key.address(index)
          yield* store.addAddress({
            address,
            chain,
            token,
            order_id: orderId,
            key_id: key.keyId,
            index,
            opened_at: yield* Time.now
          })
          return { address, memo: null }
        })
      })
    })
  )
