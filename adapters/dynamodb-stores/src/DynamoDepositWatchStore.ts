/**
 * The deposit watch store port (core/src/payments/DepositWatchStore.ts) on the one DynamoDB table of
 * DynamoTable.ts, with the low-level client so amounts travel as exact decimal numbers. Items
 * (docs/lambda-orders.md "Deposit watch items"):
 *
 *   WATCHKEY#<key id>               WATCHKEY       next_index: the key's counter (ADD, atomic)
 *   WATCHADDR#<address>             WATCHADDR      the address (created once: unique)
 *   WATCHADDRS#<chain>              <opened_at>#<stamp>#<address>     its copy in the chain's watch list
 *   WATCHCURSOR#[chain, token]      CURSOR         block_number: set only upward (a conditional update)
 *   WATCHTX#[chain, tx, log index]  WATCHTX        the transfer (the one item that decides)
 *   WATCHTXOPEN#[chain, token]      <block>#<log index>#[tx, chain]   its copy while unapplied
 *   WATCHTXTO#<address>             <block>#<log index>#[tx, chain]   its copy in its address's list
 *
 * A transfer's writes are one TransactWriteItems whose first item is the transfer conditioned on
 * what the caller read (absent; or unapplied in the block hash read), so of concurrent saves,
 * moves, applications and drops one wins and the others read again (saveTransfer) or answer false.
 */
import { type AttributeValue, UpdateItemCommand } from "@aws-sdk/client-dynamodb"
import {
  DepositWatchStore,
  type SaveOutcome,
  type SeenTransfer,
  type StoredTransfer,
  type WatchedAddress
} from "@model-platform/core/payments"
import type { Timestamp } from "@model-platform/core/kernel"
import { Effect, Layer, Schema } from "effect"
import { BigIntAttr, BoolAttr, bool, decode, IntAttr, type Item, keyOf, makeWriteStamp, num, str, StringAttr, TimestampAttr } from "./DynamoAttributes.ts"
import { call, isConditionFailed, makeItemTable, retryConflicts } from "./DynamoErrors.ts"
import { DynamoConfig, type ItemKey } from "./DynamoTable.ts"

/** Block numbers and log indexes in sort keys: zero-padded so that they sort as numbers. */
const padded = (n: number, width: number) => n.toString().padStart(width, "0")
const transferSk = (t: Pick<SeenTransfer, "block_number" | "log_index" | "tx_hash" | "chain">) =>
  `${padded(t.block_number, 16)}#${padded(t.log_index, 8)}#${JSON.stringify([t.tx_hash, t.chain])}`

export const DepositWatchKeys = {
  keyIndex: (keyId: string): ItemKey => ({ pk: `WATCHKEY#${keyId}`, sk: "WATCHKEY" }),
  address: (address: string): ItemKey => ({ pk: `WATCHADDR#${address}`, sk: "WATCHADDR" }),
  watchList: (chain: string, openedAt: string, stamp: string, address: string): ItemKey => ({
    pk: `WATCHADDRS#${chain}`,
    sk: `${openedAt}#${stamp}#${address}`
  }),
  cursor: (chain: string, token: string): ItemKey => ({ pk: `WATCHCURSOR#${JSON.stringify([chain, token])}`, sk: "CURSOR" }),
  transfer: (chain: string, txHash: string, logIndex: number): ItemKey => ({
    pk: `WATCHTX#${JSON.stringify([chain, txHash, logIndex])}`,
    sk: "WATCHTX"
  }),
  open: (t: SeenTransfer): ItemKey => ({ pk: `WATCHTXOPEN#${JSON.stringify([t.chain, t.token])}`, sk: transferSk(t) }),
  to: (t: SeenTransfer): ItemKey => ({ pk: `WATCHTXTO#${t.to}`, sk: transferSk(t) })
} as const

const AddressItem = Schema.Struct({
  address: StringAttr,
  chain: StringAttr,
  token: StringAttr,
  order_id: StringAttr,
  key_id: StringAttr,
  key_index: IntAttr,
  opened_at: TimestampAttr
})

const TransferItem = Schema.Struct({
  chain: StringAttr,
  token: StringAttr,
  tx_hash: StringAttr,
  log_index: IntAttr,
  block_number: IntAttr,
  block_hash: StringAttr,
  address: StringAttr,
  amount: BigIntAttr,
  at: TimestampAttr,
  applied: BoolAttr
})

const decodeAddress = decode(AddressItem)
const decodeTransfer = decode(TransferItem)

const toAddress = (item: typeof AddressItem.Type): WatchedAddress => ({
  address: item.address,
  chain: item.chain,
  token: item.token,
  order_id: item.order_id,
  key_id: item.key_id,
  index: item.key_index,
  opened_at: item.opened_at
})

const toTransfer = (item: typeof TransferItem.Type): StoredTransfer => ({
  chain: item.chain,
  token: item.token,
  tx_hash: item.tx_hash,
  log_index: item.log_index,
  block_number: item.block_number,
  block_hash: item.block_hash,
  to: item.address,
  amount: item.amount,
  at: item.at,
  applied: item.applied
})

const transferAttributes = (t: SeenTransfer, applied: boolean): Item => ({
  chain: str(t.chain),
  token: str(t.token),
  tx_hash: str(t.tx_hash),
  log_index: num(t.log_index),
  block_number: num(t.block_number),
  block_hash: str(t.block_hash),
  address: str(t.to),
  amount: num(t.amount),
  at: str(t.at),
  applied: bool(applied)
})

/** How many times saveTransfer reads again after losing to a concurrent write of the same transfer. */
const SAVE_ATTEMPTS = 20

export const DepositWatchStoreDynamo: Layer.Layer<DepositWatchStore, never, DynamoConfig> = Layer.effect(
  DepositWatchStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const { createItem, deleteItem, getItem, queryItems, transact } = makeItemTable(client, tableName, "DepositWatchStore")
    const writeStamp = makeWriteStamp()
    const die = (operation: string, problem: string) => Effect.die(new Error(`DepositWatchStore.${operation}: ${problem}`))

    /** One conditional update; answers its new attributes, or undefined when the condition failed. */
    const update = (key: ItemKey, input: {
      readonly UpdateExpression: string
      readonly ConditionExpression?: string
      readonly ExpressionAttributeValues: Record<string, AttributeValue>
    }) =>
      call((signal) =>
        client.send(
          new UpdateItemCommand({ TableName: tableName, Key: keyOf(key), ReturnValues: "ALL_NEW", ...input }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflicts,
        Effect.map((output) => output.Attributes),
        Effect.catchIf(isConditionFailed, () => Effect.succeed(undefined)),
        Effect.orDie
      )

    const allocateIndex = Effect.fn("DepositWatchStore.allocateIndex")(function*(keyId: string) {
      const after = yield* update(DepositWatchKeys.keyIndex(keyId), {
        UpdateExpression: "ADD next_index :one",
        ExpressionAttributeValues: { ":one": num(1) }
      })
      const next = Number(after?.["next_index"]?.N)
      if (!Number.isInteger(next) || next < 1) return yield* die("allocateIndex", `no counter for ${keyId}`)
      return next - 1
    })

    const addAddress = Effect.fn("DepositWatchStore.addAddress")(function*(a: WatchedAddress) {
      const attributes: Item = {
        address: str(a.address),
        chain: str(a.chain),
        token: str(a.token),
        order_id: str(a.order_id),
        key_id: str(a.key_id),
        key_index: num(a.index),
        opened_at: str(a.opened_at)
      }
      const result = yield* transact("addAddress", [
        createItem(DepositWatchKeys.address(a.address), attributes),
        createItem(DepositWatchKeys.watchList(a.chain, a.opened_at, yield* writeStamp, a.address), attributes)
      ])
      if (!result.committed) return yield* die("addAddress", `${a.address} is kept already`)
    })

    const getAddress = Effect.fn("DepositWatchStore.getAddress")(function*(address: string) {
      const item = yield* getItem(DepositWatchKeys.address(address))
      return item === undefined ? undefined : toAddress(yield* decodeAddress(item))
    })

    const watchedAddresses = Effect.fn("DepositWatchStore.watchedAddresses")(function*(chain: string, since: Timestamp) {
      const items = yield* queryItems({
        KeyConditionExpression: "pk = :pk AND sk >= :since",
        ExpressionAttributeValues: { ":pk": str(DepositWatchKeys.watchList(chain, "", "", "").pk), ":since": str(since) }
      })
      const found: Array<WatchedAddress> = []
      for (const item of items) found.push(toAddress(yield* decodeAddress(item)))
      return found
    })

    const cursor = Effect.fn("DepositWatchStore.cursor")(function*(chain: string, token: string) {
      const item = yield* getItem(DepositWatchKeys.cursor(chain, token))
      return item === undefined ? undefined : Number(item["block_number"]?.N)
    })

    const advanceCursor = Effect.fn("DepositWatchStore.advanceCursor")(function*(chain: string, token: string, block: number) {
      const after = yield* update(DepositWatchKeys.cursor(chain, token), {
        UpdateExpression: "SET block_number = :block",
        ConditionExpression: "attribute_not_exists(block_number) OR block_number < :block",
        ExpressionAttributeValues: { ":block": num(block) }
      })
      if (after !== undefined) return block
      const current = yield* cursor(chain, token)
      return current ?? (yield* die("advanceCursor", `no cursor for ${chain} ${token}`))
    })

    const readTransfer = Effect.fnUntraced(function*(chain: string, txHash: string, logIndex: number) {
      const item = yield* getItem(DepositWatchKeys.transfer(chain, txHash, logIndex))
      return item === undefined ? undefined : toTransfer(yield* decodeTransfer(item))
    })

    /** The transfer as kept, unapplied in `blockHash`: the condition of every change of it. */
    const unappliedIn = (blockHash: string) => ({
      ConditionExpression: "applied = :false AND block_hash = :hash",
      ExpressionAttributeValues: { ":false": bool(false), ":hash": str(blockHash) }
    })

    const saveTransfer = Effect.fn("DepositWatchStore.saveTransfer")(function*(t: SeenTransfer) {
      if (t.amount <= 0n) return yield* die("saveTransfer", "amount must be positive")
      for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt++) {
        const kept = yield* readTransfer(t.chain, t.tx_hash, t.log_index)
        if (kept !== undefined && (kept.applied || kept.block_hash === t.block_hash)) return "unchanged" as SaveOutcome
        const attributes = transferAttributes(t, false)
        const items = kept === undefined
          ? [
            createItem(DepositWatchKeys.transfer(t.chain, t.tx_hash, t.log_index), attributes),
            createItem(DepositWatchKeys.open(t), attributes),
            createItem(DepositWatchKeys.to(t), attributes)
          ]
          : [
            {
              Put: {
                TableName: tableName,
                Item: { ...attributes, ...keyOf(DepositWatchKeys.transfer(t.chain, t.tx_hash, t.log_index)) },
                ...unappliedIn(kept.block_hash)
              }
            },
            // The list copies move with it (a transaction names an item once: same height, same keys).
            ...(transferSk(kept) === transferSk(t) ? [] : [deleteItem(DepositWatchKeys.open(kept)), deleteItem(DepositWatchKeys.to(kept))]),
            { Put: { TableName: tableName, Item: { ...attributes, ...keyOf(DepositWatchKeys.open(t)) } } },
            { Put: { TableName: tableName, Item: { ...attributes, ...keyOf(DepositWatchKeys.to(t)) } } }
          ]
        const result = yield* transact("saveTransfer", items)
        if (result.committed) return (kept === undefined ? "new" : "moved") as SaveOutcome
        if (!result.failed.includes(0)) return yield* die("saveTransfer", `list items of ${t.tx_hash} exist`)
      }
      return yield* die("saveTransfer", `${t.tx_hash} kept changing`)
    })

    const getTransfer = (chain: string, txHash: string, logIndex: number) =>
      readTransfer(chain, txHash, logIndex).pipe(Effect.withSpan("DepositWatchStore.getTransfer"))

    const list = Effect.fnUntraced(function*(pk: string) {
      const items = yield* queryItems({ KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": str(pk) } })
      const found: Array<StoredTransfer> = []
      for (const item of items) found.push(toTransfer(yield* decodeTransfer(item)))
      return found
    })

    const unapplied = (chain: string, token: string) =>
      list(`WATCHTXOPEN#${JSON.stringify([chain, token])}`).pipe(Effect.withSpan("DepositWatchStore.unapplied"))

    const transfersTo = (address: string) => list(`WATCHTXTO#${address}`).pipe(Effect.withSpan("DepositWatchStore.transfersTo"))

    const markApplied = Effect.fn("DepositWatchStore.markApplied")(
      function*(chain: string, txHash: string, logIndex: number, blockHash: string) {
        const kept = yield* readTransfer(chain, txHash, logIndex)
        if (kept === undefined || kept.applied || kept.block_hash !== blockHash) return false
        const result = yield* transact("markApplied", [
          {
            Update: {
              TableName: tableName,
              Key: keyOf(DepositWatchKeys.transfer(chain, txHash, logIndex)),
              UpdateExpression: "SET applied = :true",
              ConditionExpression: "applied = :false AND block_hash = :hash",
              ExpressionAttributeValues: { ":true": bool(true), ":false": bool(false), ":hash": str(blockHash) }
            }
          },
          deleteItem(DepositWatchKeys.open(kept)),
          { Put: { TableName: tableName, Item: { ...transferAttributes(kept, true), ...keyOf(DepositWatchKeys.to(kept)) } } }
        ])
        return result.committed
      }
    )

    const dropTransfer = Effect.fn("DepositWatchStore.dropTransfer")(
      function*(chain: string, txHash: string, logIndex: number, blockHash: string) {
        const kept = yield* readTransfer(chain, txHash, logIndex)
        if (kept === undefined || kept.applied || kept.block_hash !== blockHash) return false
        const result = yield* transact("dropTransfer", [
          {
            Delete: {
              TableName: tableName,
              Key: keyOf(DepositWatchKeys.transfer(chain, txHash, logIndex)),
              ...unappliedIn(blockHash)
            }
          },
          deleteItem(DepositWatchKeys.open(kept)),
          deleteItem(DepositWatchKeys.to(kept))
        ])
        return result.committed
      }
    )

    return DepositWatchStore.of({
      allocateIndex,
      addAddress,
      getAddress,
      watchedAddresses,
      cursor,
      advanceCursor,
      saveTransfer,
      getTransfer,
      unapplied,
      transfersTo,
      markApplied,
      dropTransfer
    })
  })
)
