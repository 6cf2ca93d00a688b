/**
 * The deposit watch store port (core/src/payments/DepositWatchStore.ts) in memory, for tests and the
 * in-process shell. State lives in one Ref and each operation is a single `Ref.modify` (reads a
 * single `Ref.get`), which is what makes it atomic between fibers.
 */
import { Effect, Layer, Ref } from "effect"
import {
  DepositWatchStore,
  type SaveOutcome,
  type StoredTransfer,
  type WatchedAddress
} from "@model-platform/core/payments"

interface State {
  readonly nextIndex: ReadonlyMap<string, number>
  readonly addresses: ReadonlyMap<string, WatchedAddress>
  /** By JSON [chain, token]. */
  readonly cursors: ReadonlyMap<string, number>
  /** By JSON [chain, tx_hash, log_index]. */
  readonly transfers: ReadonlyMap<string, StoredTransfer>
}

const transferKey = (chain: string, txHash: string, logIndex: number) => JSON.stringify([chain, txHash, logIndex])

const byBlock = (a: StoredTransfer, b: StoredTransfer) => a.block_number - b.block_number || a.log_index - b.log_index

export const DepositWatchStoreMemory: Layer.Layer<DepositWatchStore> = Layer.effect(
  DepositWatchStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<State>({ nextIndex: new Map(), addresses: new Map(), cursors: new Map(), transfers: new Map() })

    const addAddress = (address: WatchedAddress) =>
      Ref.modify(state, (s): readonly [boolean, State] =>
        s.addresses.has(address.address)
          ? [false, s]
          : [true, { ...s, addresses: new Map(s.addresses).set(address.address, { ...address }) }]
      ).pipe(Effect.flatMap((added) =>
        added ? Effect.void : Effect.die(new Error(`DepositWatchStore.addAddress: ${address.address} is kept already`))
      ))

    /** Sets the transfer to `next` when `when` holds of it as kept; answers whether it did. */
    const conditional = (
      chain: string,
      txHash: string,
      logIndex: number,
      blockHash: string,
      next: (kept: StoredTransfer) => StoredTransfer | undefined
    ) =>
      Ref.modify(state, (s): readonly [boolean, State] => {
        const key = transferKey(chain, txHash, logIndex)
        const kept = s.transfers.get(key)
        if (kept === undefined || kept.applied || kept.block_hash !== blockHash) return [false, s]
        const transfers = new Map(s.transfers)
        const after = next(kept)
        if (after === undefined) transfers.delete(key)
        else transfers.set(key, after)
        return [true, { ...s, transfers }]
      })

    return DepositWatchStore.of({
      allocateIndex: (keyId) =>
        Ref.modify(state, (s) => {
          const index = s.nextIndex.get(keyId) ?? 0
          return [index, { ...s, nextIndex: new Map(s.nextIndex).set(keyId, index + 1) }]
        }),
      addAddress,
      getAddress: (address) => Effect.map(Ref.get(state), (s) => s.addresses.get(address)),
      watchedAddresses: (chain, since) =>
        Effect.map(Ref.get(state), (s) =>
          [...s.addresses.values()]
            .filter((a) => a.chain === chain && a.opened_at >= since)
            .sort((a, b) => (a.opened_at < b.opened_at ? -1 : a.opened_at > b.opened_at ? 1 : 0))),
      cursor: (chain, token) => Effect.map(Ref.get(state), (s) => s.cursors.get(JSON.stringify([chain, token]))),
      advanceCursor: (chain, token, block) =>
        Ref.modify(state, (s) => {
          const key = JSON.stringify([chain, token])
          const current = s.cursors.get(key)
          if (current !== undefined && current >= block) return [current, s]
          return [block, { ...s, cursors: new Map(s.cursors).set(key, block) }]
        }),
      saveTransfer: (transfer) =>
        transfer.amount <= 0n
          ? Effect.die(new Error("DepositWatchStore.saveTransfer: amount must be positive"))
          : Ref.modify(state, (s): readonly [SaveOutcome, State] => {
            const key = transferKey(transfer.chain, transfer.tx_hash, transfer.log_index)
            const kept = s.transfers.get(key)
            if (kept !== undefined && (kept.applied || kept.block_hash === transfer.block_hash)) return ["unchanged", s]
            const stored: StoredTransfer = { ...transfer, applied: false }
            return [kept === undefined ? "new" : "moved", { ...s, transfers: new Map(s.transfers).set(key, stored) }]
          }),
      getTransfer: (chain, txHash, logIndex) =>
        Effect.map(Ref.get(state), (s) => s.transfers.get(transferKey(chain, txHash, logIndex))),
      unapplied: (chain, token) =>
        Effect.map(Ref.get(state), (s) =>
          [...s.transfers.values()].filter((t) => !t.applied && t.chain === chain && t.token === token).sort(byBlock)),
      transfersTo: (address) =>
        Effect.map(Ref.get(state), (s) => [...s.transfers.values()].filter((t) => t.to === address).sort(byBlock)),
      markApplied: (chain, txHash, logIndex, blockHash) =>
        conditional(chain, txHash, logIndex, blockHash, (kept) => ({ ...kept, applied: true })),
      dropTransfer: (chain, txHash, logIndex, blockHash) => conditional(chain, txHash, logIndex, blockHash, () => undefined)
    })
  })
)
